#include "lib/whisper/encoder_batcher.h"

#include <algorithm>

#include "lib/core/error.h"

namespace oxi::whisper {

EncoderBatcher::EncoderBatcher(std::shared_ptr<const WhisperModel> model, size_t max_batch)
    : model_(std::move(model)), max_batch_(std::max<size_t>(max_batch, 1)), encoder_(model_) {
  stats_.encoders = 1;
}

void EncoderBatcher::encode_alone(const WhisperEncoder::Window& window,
                                  backends::Backend& backend) const {
  std::unique_ptr<WhisperEncoder> encoder;
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      encoder = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (!encoder) {
    encoder = std::make_unique<WhisperEncoder>(model_);
    std::lock_guard lock(mutex_);
    ++stats_.encoders;
  }
  std::exception_ptr error;
  try {
    encoder->encode(std::span(&window, 1), backend);
  } catch (...) {
    error = std::current_exception();
  }
  {
    std::lock_guard lock(mutex_);
    // The pool keeps one encoder's working memory: concurrent single-threaded passes would
    // otherwise leave one full working memory per stream that ever overlapped another.
    // Warm encoders sit at the back, where the next pass takes them.
    if (idle_.empty()) {
      idle_.push_back(std::move(encoder));
    } else {
      encoder->release_working_memory();
      idle_.insert(idle_.begin(), std::move(encoder));
    }
    ++stats_.passes;
    ++stats_.windows;
    stats_.largest_batch = std::max<size_t>(stats_.largest_batch, 1);
  }
  if (error) std::rethrow_exception(error);
}

void EncoderBatcher::encode(std::span<const float> mel, size_t n_frames, std::vector<float>& out,
                            backends::Backend& backend) const {
  Request request{{mel, n_frames, &out}, false, nullptr};
  WhisperEncoder::check(model_->config(), request.window);  // a bad window fails alone
  if (backend.threads() <= 1) return encode_alone(request.window, backend);
  std::unique_lock lock(mutex_);
  queue_.push_back(&request);
  while (!request.done) {
    if (running_) {
      finished_.wait(lock);
      continue;
    }
    // Lead a pass over what is queued now (this request among them unless the queue holds
    // more than a batch before it; then the loop leads again).
    running_ = true;
    std::vector<Request*> batch;
    while (!queue_.empty() && batch.size() < max_batch_) {
      batch.push_back(queue_.front());
      queue_.pop_front();
    }
    lock.unlock();
    std::vector<WhisperEncoder::Window> windows;
    windows.reserve(batch.size());
    for (const Request* r : batch) windows.push_back(r->window);
    std::exception_ptr error;
    try {
      encoder_.encode(windows, backend);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    for (Request* r : batch) {
      r->done = true;
      r->error = error;
    }
    ++stats_.passes;
    stats_.windows += batch.size();
    stats_.largest_batch = std::max(stats_.largest_batch, batch.size());
    running_ = false;
    finished_.notify_all();
  }
  if (request.error) std::rethrow_exception(request.error);
}

EncoderBatcher::Stats EncoderBatcher::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace oxi::whisper
