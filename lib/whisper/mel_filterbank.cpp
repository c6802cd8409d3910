#include "lib/whisper/mel_filterbank.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "lib/core/error.h"

namespace oxi::whisper {
namespace {

// Slaney's scale: 3 mels per 200 Hz up to 1 kHz, then 27 mels per factor 6.4 in frequency.
constexpr double kLinearHzPerMel = 200.0 / 3.0;
constexpr double kLogStartHz = 1000.0;
constexpr double kLogStartMel = kLogStartHz / kLinearHzPerMel;  // 15
const double kLogStep = std::log(6.4) / 27.0;

double hz_to_mel(double hz) {
  if (hz < kLogStartHz) return hz / kLinearHzPerMel;
  return kLogStartMel + std::log(hz / kLogStartHz) / kLogStep;
}

double mel_to_hz(double mel) {
  if (mel < kLogStartMel) return mel * kLinearHzPerMel;
  return kLogStartHz * std::exp(kLogStep * (mel - kLogStartMel));
}

}  // namespace

std::vector<float> mel_filterbank(int n_mels, int n_fft, int sample_rate) {
  if (n_mels <= 0 || n_fft <= 0 || sample_rate <= 0) {
    throw Error("mel_filterbank", "invalid parameters n_mels=" + std::to_string(n_mels) +
                                      " n_fft=" + std::to_string(n_fft) +
                                      " sample_rate=" + std::to_string(sample_rate));
  }
  const int n_bins = n_fft / 2 + 1;
  // n_mels + 2 band edges evenly spaced in mel from 0 Hz to Nyquist (numpy.linspace).
  const double max_mel = hz_to_mel(sample_rate / 2.0);
  std::vector<double> edges_hz(static_cast<size_t>(n_mels) + 2);
  for (size_t i = 0; i < edges_hz.size(); ++i) {
    edges_hz[i] = mel_to_hz(max_mel * static_cast<double>(i) / (n_mels + 1));
  }

  std::vector<float> filters(static_cast<size_t>(n_mels) * n_bins);
  for (int m = 0; m < n_mels; ++m) {
    const double lo = edges_hz[m], center = edges_hz[m + 1], hi = edges_hz[m + 2];
    const double area_norm = 2.0 / (hi - lo);  // "slaney" normalisation
    for (int k = 0; k < n_bins; ++k) {
      const double hz = static_cast<double>(k) * sample_rate / n_fft;  // numpy.fft.rfftfreq
      const double rising = (hz - lo) / (center - lo);
      const double falling = (hi - hz) / (hi - center);
      const double weight = std::max(0.0, std::min(rising, falling));
      filters[static_cast<size_t>(m) * n_bins + k] = static_cast<float>(weight * area_norm);
    }
  }
  return filters;
}

}  // namespace oxi::whisper
