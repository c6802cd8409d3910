#include "lib/hub/hub.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "lib/core/error.h"
#include "lib/hub/file_download.h"
#include "lib/hub/file_selection.h"
#include "lib/hub/http_client.h"
#include "lib/hub/hub_cache.h"
#include "lib/hub/progress_bar.h"
#include "lib/hub/url.h"

namespace oxi::hub {

namespace fs = std::filesystem;

namespace {

std::string endpoint_of(const HubOptions& options) {
  std::string endpoint = options.endpoint.empty() ? kDefaultEndpoint : options.endpoint;
  while (endpoint.size() > 1 && endpoint.back() == '/') endpoint.pop_back();
  return endpoint;
}

// The "error" message of a Hub API error answer, when it has one.
std::string api_error_message(const std::string& body) {
  const nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
  if (doc.is_object()) {
    const auto error = doc.find("error");
    if (error != doc.end() && error->is_string()) return error->get<std::string>();
  }
  return "";
}

// One repo revision being resolved and fetched: the file list (from the API, or from the
// cache when offline) and the snapshot directory the files land in.
class RepoSession {
 public:
  RepoSession(const RepoSpec& spec, const HubOptions& options)
      : spec_(spec),
        options_(options),
        endpoint_(endpoint_of(options)),
        cache_(options.cache_dir.empty() ? default_cache_dir() : options.cache_dir),
        client_(endpoint_, options.token) {
    if (options.offline)
      open_from_cache("offline mode");
    else
      open_online();
  }

  const std::vector<RepoFile>& files() const { return files_; }
  bool from_cache() const { return from_cache_; }
  fs::path snapshot_dir() const { return cache_.snapshot_dir(spec_.repo_id, commit_); }
  std::string context() const { return spec_.to_string(); }

  // Makes every path present in the snapshot, downloading what is missing.
  void fetch(const std::vector<std::string>& paths) {
    for (const std::string& path : paths) fetch_one(path);
  }

  // Remembers revision -> commit once its files are in place, for offline use.
  void record_revision() const {
    if (!from_cache_ && spec_.revision != commit_) {
      cache_.write_ref(spec_.repo_id, spec_.revision, commit_);
    }
  }

  std::string read_fetched(const std::string& path) {
    fetch_one(path);
    std::ifstream in(snapshot_dir() / path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) throw Error(spec_.repo_id + "/" + path, "cannot read the cached file");
    return text.str();
  }

 private:
  void open_online() {
    const std::string url = endpoint_ + "/api/models/" + spec_.repo_id + "/revision/" +
                            url_encode(spec_.revision) + "?blobs=true";
    HttpResponse response;
    try {
      response = client_.get(url);
    } catch (const TransportError& e) {
      if (cache_.read_ref(spec_.repo_id, spec_.revision)) {
        spdlog::warn("{}: cannot reach the Hub ({}); using the cached copy", context(), e.what());
        open_from_cache("the Hub is unreachable");
        return;
      }
      throw Error(context(),
                  std::string("cannot reach the Hub and nothing is cached: ") + e.what());
    }
    if (response.status != 200) {
      std::string problem = api_error_message(response.body);
      if (response.status == 401 || response.status == 403 || response.status == 404) {
        if (problem.empty()) problem = "repository or revision not found";
        throw Error(context(), problem + " (HTTP " + std::to_string(response.status) + " from " +
                                   endpoint_ + "); check the repo id and revision, and set " +
                                   "HF_TOKEN for private or gated repos");
      }
      throw Error(context(), "the Hub API answered HTTP " + std::to_string(response.status) +
                                 " for " + url + (problem.empty() ? "" : ": " + problem));
    }
    RepoListing listing = parse_repo_listing(response.body, context());
    commit_ = std::move(listing.commit);
    files_ = std::move(listing.files);
  }

  void open_from_cache(const std::string& why) {
    const std::optional<std::string> commit = cache_.read_ref(spec_.repo_id, spec_.revision);
    if (!commit) {
      throw Error(context(), "not cached (" + why + "; cache: " + cache_.root().string() +
                                 "); run 'oxinfer pull " + context() + "' while online");
    }
    commit_ = *commit;
    files_ = cache_.snapshot_files(spec_.repo_id, commit_);
    from_cache_ = true;
  }

  void fetch_one(const std::string& path) {
    const fs::path dest = snapshot_dir() / path;
    const std::string file_context = spec_.repo_id + "/" + path;
    std::error_code ec;
    if (from_cache_) {
      if (!fs::is_regular_file(dest, ec)) {
        throw Error(file_context, "not cached (offline mode; looked in " + dest.string() + ")");
      }
      return;
    }
    const RepoFile* file = nullptr;
    for (const RepoFile& candidate : files_) {
      if (candidate.path == path) file = &candidate;
    }
    if (file == nullptr) throw Error(file_context, "no such file in the repo at " + commit_);
    // Cache hit: the complete file is there (a verified download is only ever renamed into
    // place, so the size check guards against files changed by hand).
    if (fs::is_regular_file(dest, ec) &&
        (!file->size || static_cast<uint64_t>(fs::file_size(dest, ec)) == *file->size)) {
      return;
    }
    spdlog::info("downloading {}{}", file_context,
                 file->size ? " (" + format_bytes(static_cast<double>(*file->size)) + ")" : "");
    const std::string url = endpoint_ + "/" + spec_.repo_id + "/resolve/" + commit_ + "/" +
                            url_encode(path, /*keep_slash=*/true);
    FileDownloadOptions download_options;
    download_options.progress = options_.progress;
    download_verified_file(client_, url, *file, dest, file_context, download_options);
  }

  RepoSpec spec_;
  HubOptions options_;
  std::string endpoint_;
  HubCache cache_;
  HttpClient client_;
  std::string commit_;
  std::vector<RepoFile> files_;
  bool from_cache_ = false;
};

void append_unique(std::vector<std::string>& list, const std::vector<std::string>& more) {
  for (const std::string& item : more) {
    if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
  }
}

// Runs a file selection; offline, its error also says that only cached files were seen.
template <typename Select>
auto select_files(const RepoSession& session, Select select) {
  try {
    return select();
  } catch (const Error& e) {
    if (!session.from_cache()) throw;
    throw Error(std::string(e.what()) + " (not cached? offline, only cached files are considered)");
  }
}

// Fetches what a model needs; returns the path to open (a GGUF file or the snapshot dir).
fs::path fetch_model(RepoSession& session, const RepoSpec& spec) {
  if (!spec.quant.empty()) {
    const GgufChoice choice = select_files(
        session, [&] { return select_quant_gguf(session.files(), spec.quant, session.context()); });
    session.fetch(choice.files);
    return session.snapshot_dir() / choice.primary;
  }
  const ModelFiles model =
      select_files(session, [&] { return select_model_files(session.files(), session.context()); });
  std::vector<std::string> wanted = model.support;
  append_unique(wanted, model.weights);
  if (!model.weights_index.empty()) {
    const std::string index = session.read_fetched(model.weights_index);
    append_unique(wanted, shards_from_index(index, session.context() + "/" + model.weights_index));
  }
  session.fetch(wanted);
  if (!model.gguf_primary.empty()) return session.snapshot_dir() / model.gguf_primary;
  return session.snapshot_dir();
}

}  // namespace

fs::path download(const RepoSpec& spec, const std::vector<std::string>& patterns,
                  const HubOptions& options) {
  RepoSession session(spec, options);
  if (patterns.empty()) {
    fetch_model(session, spec);
  } else {
    std::vector<std::string> wanted;
    if (!spec.quant.empty()) {
      const GgufChoice choice = select_files(session, [&] {
        return select_quant_gguf(session.files(), spec.quant, session.context());
      });
      append_unique(wanted, choice.files);
    }
    for (const std::string& pattern : patterns) {
      const std::vector<std::string> matches = files_matching(session.files(), pattern);
      if (matches.empty()) {
        throw Error(session.context(),
                    session.from_cache()
                        ? "no cached file matches '" + pattern +
                              "' (not cached? offline, only cached files are considered)"
                        : "no file in the repo matches '" + pattern + "'");
      }
      append_unique(wanted, matches);
    }
    session.fetch(wanted);
  }
  session.record_revision();
  return session.snapshot_dir();
}

fs::path resolve_model(std::string_view spec, const HubOptions& options) {
  const fs::path local(spec);
  std::error_code ec;
  if (!spec.empty() && fs::exists(local, ec)) return local;
  const std::optional<RepoSpec> repo = try_parse_repo_spec(spec);
  if (!repo) {
    throw Error(spec,
                "no such file or directory, and not a Hugging Face repo id "
                "(org/name[:QUANT][@revision])");
  }
  return resolve_model(*repo, options);
}

fs::path resolve_model(const RepoSpec& spec, const HubOptions& options) {
  RepoSession session(spec, options);
  fs::path model = fetch_model(session, spec);
  session.record_revision();
  return model;
}

}  // namespace oxi::hub
