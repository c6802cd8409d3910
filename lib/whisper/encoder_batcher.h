// EncoderBatcher: the encoder of one model shared by its streams, which batches their encoder
// passes. A stream calls encode() and gets its window's encoder output back; windows that
// arrive while a pass is running wait and go together into the next pass, which runs on the
// backend (threads) of one of their callers. Nothing is delayed to form a batch: a lone stream
// is encoded at once, concurrent streams share passes.
//
// A caller whose backend has a single thread is not batched: a batch would put other streams'
// windows on its one thread while theirs idle. It encodes its own window at once on one of a
// few pooled encoders, in parallel with the others (the working memory is then one encoder per
// concurrent single-threaded pass, still not one per stream; between passes the pool keeps only
// one encoder's).
//
// Thread-safe. Shared through ModelCache like the model (encode() is const: the encoder and
// queue inside are guarded by a mutex).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "lib/whisper/whisper_encoder.h"
#include "lib/whisper/whisper_model.h"

namespace oxi::whisper {

class EncoderBatcher {
 public:
  // max_batch: windows per pass at most (the encoder's scratch grows with it).
  explicit EncoderBatcher(std::shared_ptr<const WhisperModel> model, size_t max_batch = 4);

  const WhisperModel& model() const { return *model_; }

  // Encodes one window (n_mels x n_frames) into `out` (positions, n_audio_state); blocks until
  // done. `backend` is the caller's: used when this call runs the pass. Throws oxi::Error for a
  // window that does not fit the model, and rethrows a failure of the pass.
  void encode(std::span<const float> mel, size_t n_frames, std::vector<float>& out,
              backends::Backend& backend) const;

  struct Stats {
    uint64_t passes = 0;   // encoder passes run
    uint64_t windows = 0;  // windows encoded; windows > passes: some passes were batched
    size_t largest_batch = 0;
    size_t encoders = 0;  // working memories allocated (the batch encoder and the pool)
  };
  Stats stats() const;

 private:
  struct Request {
    WhisperEncoder::Window window;
    bool done = false;
    std::exception_ptr error;
  };

  std::shared_ptr<const WhisperModel> model_;
  size_t max_batch_;
  mutable std::mutex mutex_;
  mutable std::condition_variable finished_;
  mutable std::deque<Request*> queue_;
  mutable bool running_ = false;
  mutable WhisperEncoder encoder_;                             // the batches'
  mutable std::vector<std::unique_ptr<WhisperEncoder>> idle_;  // single-threaded callers'
  mutable Stats stats_;

  void encode_alone(const WhisperEncoder::Window& window, backends::Backend& backend) const;
};

}  // namespace oxi::whisper
