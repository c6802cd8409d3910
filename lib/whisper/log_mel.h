// Whisper's input features: the log-mel spectrogram exactly as openai-whisper's
// log_mel_spectrogram and transformers' WhisperFeatureExtractor compute it.
//
//   1. zero-pad the samples at the end to at least `pad_to_samples` (the model's window,
//      30 s = 480000 samples by default; some checkpoints use a shorter chunk_length)
//   2. STFT: periodic Hann window of 400, hop 160, centred frames (reflect padding of 200
//      samples on both sides); keep |X|^2 of the 201 bins; drop the last frame, so
//      n_frames = n_samples / 160
//   3. mel power = filterbank (n_mels x 201) * power
//   4. log10(max(mel, 1e-10)), clamped from below to (global maximum - 8), then (x + 4) / 4
//
// Frames are independent: compute() spreads them over `n_threads` threads.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "kernels/math/fft_double.h"

namespace oxi::whisper {

constexpr int kMelSampleRate = 16000;
constexpr size_t kMelWindow = 400;  // n_fft
constexpr size_t kMelHop = 160;
constexpr size_t kChunkSamples = 30 * kMelSampleRate;

struct LogMel {
  int n_mels = 0;
  size_t n_frames = 0;
  std::vector<float> data;  // [n_mels, n_frames] row-major: the encoder's input layout

  float at(int mel, size_t frame) const {
    return data[static_cast<size_t>(mel) * n_frames + frame];
  }
};

class LogMelSpectrogram {
 public:
  // The Slaney filterbank computed for n_mels (80 for most Whisper models, 128 for large-v3).
  explicit LogMelSpectrogram(int n_mels);
  // A given filterbank, [n_mels, 201] row-major (e.g. the one stored in a ggml model file).
  LogMelSpectrogram(int n_mels, std::vector<float> filters);

  int n_mels() const { return n_mels_; }
  const std::vector<float>& filters() const { return filters_; }

  // Features of 16 kHz mono samples. Inputs longer than pad_to_samples are transformed whole
  // (the clamp then uses the maximum over all of them); callers cut 30 s windows themselves.
  // Throws oxi::Error when the padded input is 200 samples or fewer (reflect padding needs
  // more).
  LogMel compute(std::span<const float> samples, size_t pad_to_samples = kChunkSamples,
                 int n_threads = 1) const;

 private:
  // log10 mel power of frames [first, last) of the reflect-padded signal into out.
  void log_mel_frames(std::span<const float> padded, size_t first, size_t last, size_t n_frames,
                      float* out) const;

  int n_mels_;
  std::vector<float> filters_;
  std::vector<std::pair<size_t, size_t>> filter_support_;  // nonzero bin range of each filter
  // The STFT runs in double: a float FFT leaves ~1e-4 relative error in bands 60 dB under a
  // frame's peak (1.4e-5 in the features), more than the 1e-5 the reference check allows.
  std::vector<double> window_;
  kernels::RealFftDouble fft_;
};

}  // namespace oxi::whisper
