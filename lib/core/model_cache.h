// ModelCache: one loaded copy of a model per process, shared by every user that names the same
// model and load options (GStreamer elements, engines). Entries are held weakly: the model is
// freed when its last user lets go, and loaded again by the next one.
//
//   auto model = oxi::ModelCache<WhisperModel>::instance().get(
//       "whisper:" + path + ":q8", [&] { return WhisperModel::load(path, options); });
//
// Concurrent get() calls for the same key load once: the others wait for that load and share
// its result (or its exception). Different keys load in parallel.
#pragma once

#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace oxi {

template <class Model>
class ModelCache {
 public:
  using Loader = std::function<std::shared_ptr<const Model>()>;

  static ModelCache& instance() {
    static ModelCache cache;
    return cache;
  }

  // The cached model for `key`, or load() run once and remembered (weakly) under `key`.
  // A failed load is not remembered: the next get() tries again.
  std::shared_ptr<const Model> get(const std::string& key, const Loader& load) {
    std::promise<std::shared_ptr<const Model>> promise;
    std::shared_future<std::shared_ptr<const Model>> pending;
    bool loader = false;
    {
      std::lock_guard lock(mutex_);
      Entry& entry = entries_[key];
      if (auto model = entry.model.lock()) return model;
      if (entry.loading.valid()) {
        pending = entry.loading;
      } else {
        entry.loading = promise.get_future().share();
        loader = true;
      }
    }
    if (!loader) return pending.get();  // rethrows the loader's exception

    std::shared_ptr<const Model> model;
    try {
      model = load();
    } catch (...) {
      std::lock_guard lock(mutex_);
      entries_[key].loading = {};
      promise.set_exception(std::current_exception());
      throw;
    }
    std::lock_guard lock(mutex_);
    Entry& entry = entries_[key];
    entry.model = model;
    entry.loading = {};
    promise.set_value(model);
    return model;
  }

  // The model under `key` if some user still holds it.
  std::shared_ptr<const Model> find(const std::string& key) const {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : it->second.model.lock();
  }

  // Number of keys whose model is alive (for tests and statistics).
  size_t live_count() const {
    std::lock_guard lock(mutex_);
    size_t n = 0;
    for (const auto& [key, entry] : entries_) n += entry.model.expired() ? 0 : 1;
    return n;
  }

 private:
  struct Entry {
    std::weak_ptr<const Model> model;
    std::shared_future<std::shared_ptr<const Model>> loading;  // valid while a load runs
  };

  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;
};

}  // namespace oxi
