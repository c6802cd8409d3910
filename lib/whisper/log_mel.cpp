#include "lib/whisper/log_mel.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <string>
#include <thread>

#include "kernels/math/fft_double.h"
#include "lib/core/error.h"
#include "lib/whisper/mel_filterbank.h"

namespace oxi::whisper {
namespace {

constexpr size_t kBins = kMelWindow / 2 + 1;
constexpr size_t kReflect = kMelWindow / 2;
constexpr float kMinPower = 1e-10f;
constexpr float kDynamicRange = 8.0f;  // log10 units kept below the maximum (80 dB)

// torch.hann_window(400) (periodic): the window of a 401-point Hann with the last point dropped.
std::vector<double> periodic_hann() {
  std::vector<double> w(kMelWindow);
  for (size_t i = 0; i < kMelWindow; ++i) {
    w[i] = 0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * static_cast<double>(i) /
                                static_cast<double>(kMelWindow));
  }
  return w;
}

}  // namespace

LogMelSpectrogram::LogMelSpectrogram(int n_mels)
    : LogMelSpectrogram(n_mels, mel_filterbank(n_mels, kMelWindow, kMelSampleRate)) {}

LogMelSpectrogram::LogMelSpectrogram(int n_mels, std::vector<float> filters)
    : n_mels_(n_mels), filters_(std::move(filters)), window_(periodic_hann()), fft_(kMelWindow) {
  if (n_mels <= 0 || filters_.size() != static_cast<size_t>(n_mels) * kBins) {
    throw Error("log-mel spectrogram", "filterbank has " + std::to_string(filters_.size()) +
                                           " values, expected n_mels (" + std::to_string(n_mels) +
                                           ") x " + std::to_string(kBins));
  }
  // Each triangle covers a few bins: skip the zeros in the projection.
  for (int m = 0; m < n_mels; ++m) {
    const float* row = filters_.data() + static_cast<size_t>(m) * kBins;
    size_t begin = 0, end = kBins;
    while (begin < kBins && row[begin] == 0.0f) ++begin;
    while (end > begin && row[end - 1] == 0.0f) --end;
    filter_support_.emplace_back(begin, end);
  }
}

void LogMelSpectrogram::log_mel_frames(std::span<const float> padded, size_t first, size_t last,
                                       size_t n_frames, float* out) const {
  std::vector<double> frame(kMelWindow);
  std::vector<std::complex<double>> spectrum(kBins);
  std::vector<double> power(kBins);
  for (size_t t = first; t < last; ++t) {
    const float* src = padded.data() + t * kMelHop;
    for (size_t i = 0; i < kMelWindow; ++i) frame[i] = src[i] * window_[i];
    fft_.forward(frame, spectrum);
    for (size_t k = 0; k < kBins; ++k) power[k] = std::norm(spectrum[k]);
    for (int m = 0; m < n_mels_; ++m) {
      const float* row = filters_.data() + static_cast<size_t>(m) * kBins;
      const auto [begin, end] = filter_support_[m];
      double sum = 0.0;
      for (size_t k = begin; k < end; ++k) sum += row[k] * power[k];
      out[static_cast<size_t>(m) * n_frames + t] =
          static_cast<float>(std::log10(std::max(sum, double{kMinPower})));
    }
  }
}

LogMel LogMelSpectrogram::compute(std::span<const float> samples, size_t pad_to_samples,
                                  int n_threads) const {
  const size_t n = std::max(samples.size(), pad_to_samples);
  if (n <= kReflect) {
    throw Error("log-mel spectrogram", "input of " + std::to_string(n) +
                                           " samples is too short for reflect padding of " +
                                           std::to_string(kReflect));
  }
  // [reflection of x[1..200]] x [zeros up to n] [reflection of the 200 samples before the end]
  std::vector<float> padded(n + 2 * kReflect, 0.0f);
  std::copy(samples.begin(), samples.end(), padded.begin() + kReflect);
  const auto x = [&](size_t i) { return padded[kReflect + i]; };
  for (size_t j = 1; j <= kReflect; ++j) {
    padded[kReflect - j] = x(j);
    padded[kReflect + n - 1 + j] = x(n - 1 - j);
  }

  LogMel mel;
  mel.n_mels = n_mels_;
  mel.n_frames = n / kMelHop;
  mel.data.resize(static_cast<size_t>(n_mels_) * mel.n_frames);

  const size_t n_workers = std::clamp<size_t>(static_cast<size_t>(std::max(n_threads, 1)), 1,
                                              std::max<size_t>(mel.n_frames, 1));
  const size_t per_worker = (mel.n_frames + n_workers - 1) / n_workers;
  {
    std::vector<std::jthread> workers;
    for (size_t w = 1; w < n_workers; ++w) {
      const size_t first = std::min(w * per_worker, mel.n_frames);
      const size_t last = std::min(first + per_worker, mel.n_frames);
      workers.emplace_back(
          [&, first, last] { log_mel_frames(padded, first, last, mel.n_frames, mel.data.data()); });
    }
    log_mel_frames(padded, 0, std::min(per_worker, mel.n_frames), mel.n_frames, mel.data.data());
  }  // joins the workers

  if (!mel.data.empty()) {
    const float floor = *std::max_element(mel.data.begin(), mel.data.end()) - kDynamicRange;
    for (float& v : mel.data) v = (std::max(v, floor) + 4.0f) / 4.0f;
  }
  return mel;
}

}  // namespace oxi::whisper
