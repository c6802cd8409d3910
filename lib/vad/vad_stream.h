// VadStream: Silero VAD over a stream of 16 kHz mono samples fed in chunks of any size — one
// speech probability per 512-sample window, whatever the chunking. The last, partial window is
// zero-padded at flush(), as the authors' get_speech_timestamps pads a file's last chunk.
//
//   oxi::vad::VadStream stream(model);
//   for (chunk : audio) for (float p : stream.push(chunk)) use(p);
//   if (auto p = stream.flush()) use(*p);
//
// detect_speech() runs a whole file through it and cuts the segments.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "lib/vad/silero_vad.h"
#include "lib/vad/speech_segments.h"

namespace oxi::vad {

class VadStream {
 public:
  explicit VadStream(std::shared_ptr<const SileroVadModel> model);

  // Appends samples; returns the probabilities of the windows they complete, in order.
  std::vector<float> push(std::span<const float> samples);
  // End of stream: the probability of the buffered partial window padded with zeros, or
  // nullopt when the samples filled whole windows. The stream is then reset.
  std::optional<float> flush();
  // Back to the start of a stream (a seek, a discontinuity): drops buffered samples and state.
  void reset();

  uint64_t samples() const { return samples_; }  // pushed since the last reset
  uint64_t windows() const { return windows_; }  // probabilities returned since the last reset

 private:
  SileroVad vad_;
  std::vector<float> pending_;  // less than one window
  uint64_t samples_ = 0;
  uint64_t windows_ = 0;
};

struct SpeechDetection {
  std::vector<float> probs;  // one per 512-sample window (the last one zero-padded)
  std::vector<SpeechSegment> segments;
};

// The authors' get_speech_timestamps on a whole 16 kHz mono signal.
SpeechDetection detect_speech(std::shared_ptr<const SileroVadModel> model,
                              std::span<const float> samples, const SegmentParams& params = {});

}  // namespace oxi::vad
