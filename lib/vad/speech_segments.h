// Speech segments from per-window speech probabilities, as the authors' get_speech_timestamps
// (silero-vad utils_vad.py) cuts them: speech starts at a window >= threshold, ends after
// min_silence of windows below neg_threshold (hysteresis), segments not longer than min_speech
// are dropped, and each segment is padded by speech_pad — or, when two segments are closer than
// twice the pad, the silence between them is split half and half.
//
//   auto segments = oxi::vad::speech_timestamps(probs, n_samples, {});   // a whole file
//
//   oxi::vad::SpeechSegmenter segmenter({});                              // live
//   for (float p : probs) for (auto s : segmenter.push(p)) emit(s);       // as soon as final
//   for (auto s : segmenter.finish(n_samples)) emit(s);
//
// Both give the same segments. max_speech_duration (infinite by default there) is not
// implemented.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace oxi::vad {

struct SegmentParams {
  float threshold = 0.5f;
  // Speech ends below this; unset: max(threshold - 0.15, 0.01), the authors' default.
  std::optional<float> neg_threshold;
  int min_speech_ms = 250;   // shorter segments are dropped
  int min_silence_ms = 100;  // silence needed to end a segment
  int speech_pad_ms = 30;    // added on each side of a segment
  int sample_rate = 16000;
  int window = 512;  // samples per probability

  double end_threshold() const;
};

// [start, end) in samples of the stream.
struct SpeechSegment {
  int64_t start = 0;
  int64_t end = 0;
  bool operator==(const SpeechSegment&) const = default;
};

// The authors' algorithm over a whole stream of n_samples samples, probs[i] being the
// probability of samples [i * window, (i + 1) * window). Throws oxi::Error on bad parameters.
std::vector<SpeechSegment> speech_timestamps(std::span<const float> probs, int64_t n_samples,
                                             const SegmentParams& params = {});

// The same segmentation one probability at a time. A segment is returned as soon as nothing
// later can change it: when the next segment's start is known, or when the silence after it is
// long enough that any later segment gets the full pad (with the default parameters, at the
// window that ends it).
class SpeechSegmenter {
 public:
  // Throws oxi::Error on bad parameters.
  explicit SpeechSegmenter(const SegmentParams& params = {});

  // The next window's probability; returns the segments that became final.
  std::vector<SpeechSegment> push(float prob);
  // End of the stream after n_samples samples: the remaining segments. The segmenter is reset.
  std::vector<SpeechSegment> finish(int64_t n_samples);
  void reset();

  // The live decision after the last window: inside speech that has not yet fallen below
  // neg_threshold. Before min-speech filtering and padding.
  bool in_speech() const { return triggered_ && temp_end_ == 0; }
  int64_t windows() const { return index_; }
  const SegmentParams& params() const { return params_; }

 private:
  struct Raw {
    int64_t start = 0;  // already padded: final
    int64_t end = 0;    // unpadded
  };
  // A new accepted segment with unpadded start `start` and end `end`: settles the pending one.
  void accept(int64_t start, int64_t end, std::vector<SpeechSegment>& out);

  SegmentParams params_;
  double threshold_, neg_threshold_;
  int64_t min_speech_, min_silence_, pad_;

  int64_t index_ = 0;  // windows seen
  bool triggered_ = false;
  int64_t start_ = 0;     // unpadded start of the current speech
  int64_t temp_end_ = 0;  // first silent window's sample after speech, 0 when none
  std::optional<Raw> pending_;
};

}  // namespace oxi::vad
