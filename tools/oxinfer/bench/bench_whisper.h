// Whisper speed: the encoder's time per window, the decoder's time per generated token (one
// token at a time over the cross-attention of an encoded window), and the real-time factor of
// a whole transcription (wall time / audio duration) on a file or on generated audio.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "lib/whisper/whisper_model.h"

namespace oxi::bench {

struct WhisperBenchResult {
  double encoder_ms_per_window = 0;  // median of reps, full window
  double decoder_ms_per_token = 0;   // median over single-token steps
  double transcribe_ms = 0;          // whole transcription of the audio
  double audio_seconds = 0;
  double rtf = 0;  // transcribe time / audio duration (< 1: faster than real time)
  size_t windows = 0, generated_tokens = 0;
};

// Ten seconds of speech-like test audio: voiced harmonics with a moving pitch, syllable-rate
// amplitude modulation and pauses (deterministic).
std::vector<float> generated_speech_like_audio(double seconds);

WhisperBenchResult bench_whisper(std::shared_ptr<const whisper::WhisperModel> model,
                                 backends::Backend& backend, std::span<const float> audio,
                                 int reps);

}  // namespace oxi::bench

namespace oxi::cli {
// oxinfer bench whisper -m MODEL [--file F] [--threads N] [--json]
int run_bench_whisper(const std::vector<std::string>& argv);
}  // namespace oxi::cli
