// Whisper's log-mel features against a double-precision reference written out here: reflect
// padding, periodic Hann, a naive DFT per frame, the filterbank from mel_filters.npz, log10,
// clamp and scale.
#include "lib/whisper/log_mel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include "lib/core/error.h"
#include "lib/formats/npy.h"
#include "lib/whisper/mel_filterbank.h"
#include "tests/common/test_data.h"

namespace oxi::whisper {
namespace {

using test::read_wav_s16_mono;

// [n_mels, n_frames] computed in double.
std::vector<double> reference_log_mel(const std::vector<float>& audio, size_t pad_to,
                                      const std::vector<float>& filters, int n_mels) {
  const size_t n_fft = 400, hop = 160, bins = 201;
  const size_t n = std::max(audio.size(), pad_to);
  std::vector<double> x(n, 0.0);
  std::copy(audio.begin(), audio.end(), x.begin());
  std::vector<double> padded(n + n_fft);
  for (size_t i = 0; i < padded.size(); ++i) {
    const long j = static_cast<long>(i) - 200;  // index into x, reflected at both ends
    const long r = j < 0 ? -j : (j >= static_cast<long>(n) ? 2 * static_cast<long>(n) - 2 - j : j);
    padded[i] = x[static_cast<size_t>(r)];
  }
  std::vector<double> window(n_fft), cos_table(n_fft), sin_table(n_fft);
  for (size_t i = 0; i < n_fft; ++i) {
    window[i] = 0.5 - 0.5 * std::cos(2 * std::numbers::pi * i / n_fft);
    cos_table[i] = std::cos(2 * std::numbers::pi * i / n_fft);
    sin_table[i] = std::sin(2 * std::numbers::pi * i / n_fft);
  }
  const size_t n_frames = n / hop;
  std::vector<double> out(static_cast<size_t>(n_mels) * n_frames);
  std::vector<double> frame(n_fft), power(bins);
  for (size_t t = 0; t < n_frames; ++t) {
    bool silent = true;
    for (size_t i = 0; i < n_fft; ++i) {
      frame[i] = padded[t * hop + i] * window[i];
      silent = silent && frame[i] == 0.0;
    }
    for (size_t k = 0; k < bins; ++k) {
      double re = 0.0, im = 0.0;
      if (!silent) {
        for (size_t i = 0; i < n_fft; ++i) {
          re += frame[i] * cos_table[(i * k) % n_fft];
          im -= frame[i] * sin_table[(i * k) % n_fft];
        }
      }
      power[k] = re * re + im * im;
    }
    for (int m = 0; m < n_mels; ++m) {
      double sum = 0.0;
      for (size_t k = 0; k < bins; ++k)
        sum += static_cast<double>(filters[m * bins + k]) * power[k];
      out[m * n_frames + t] = std::log10(std::max(sum, 1e-10));
    }
  }
  const double floor = *std::max_element(out.begin(), out.end()) - 8.0;
  for (double& v : out) v = (std::max(v, floor) + 4.0) / 4.0;
  return out;
}

std::vector<float> npz_filters(const std::filesystem::path& data, const std::string& name) {
  return npy::load_npz(data / "whisper" / "mel_filters.npz").at(name).to_f32();
}

// The bound. The STFT runs in double (measured 8e-8 on jfk); a float32 FFT would give
// 1.37e-5, the same order as torch.stft in float32 against float64.
constexpr double kTolerance = 1e-5;

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0.0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
  return d;
}

TEST(MelFilterbank, MatchesWhisperNpz) {
  OXI_REQUIRE_SHARED_DATA(data);
  for (int n_mels : {80, 128}) {
    const auto expected = npz_filters(data, "mel_" + std::to_string(n_mels));
    const auto computed = mel_filterbank(n_mels);
    ASSERT_EQ(computed.size(), expected.size());
    const double diff = max_abs_diff(computed, expected);
    EXPECT_LE(diff, 1e-7) << n_mels << " mels";
    std::printf("mel_%d: max |computed - npz| = %.3g\n", n_mels, diff);
  }
}

TEST(MelFilterbank, OtherSizesAreSlaneyTriangles) {
  // Any n_mels works; every filter has area-normalised height 2 / (f_hi - f_lo) > 0.
  const auto f = mel_filterbank(40);
  ASSERT_EQ(f.size(), 40u * 201u);
  for (int m = 0; m < 40; ++m) {
    EXPECT_GT(*std::max_element(f.begin() + m * 201, f.begin() + (m + 1) * 201), 0.0f) << m;
  }
  EXPECT_THROW(mel_filterbank(0), Error);
}

TEST(LogMel, JfkMatchesDoubleReference) {
  OXI_REQUIRE_SHARED_DATA(data);
  const std::vector<float> audio = read_wav_s16_mono(data / "audio" / "jfk.wav");
  ASSERT_EQ(audio.size(), 176000u);
  const auto filters = npz_filters(data, "mel_80");
  const LogMelSpectrogram mel(80);
  const LogMel features = mel.compute(audio);
  ASSERT_EQ(features.n_mels, 80);
  ASSERT_EQ(features.n_frames, 3000u);
  const auto reference = reference_log_mel(audio, kChunkSamples, filters, 80);
  double diff = 0.0;
  for (size_t i = 0; i < reference.size(); ++i) {
    diff = std::max(diff, std::fabs(features.data[i] - reference[i]));
  }
  std::printf("jfk 80 mels: max |features - double reference| = %.3g\n", diff);
  EXPECT_LE(diff, kTolerance);

  // Threads split the frames; the result is the same to the bit.
  const LogMel threaded = mel.compute(audio, kChunkSamples, 3);
  EXPECT_EQ(threaded.data, features.data);
}

TEST(LogMel, ShorterWindowAnd128Mels) {
  OXI_REQUIRE_SHARED_DATA(data);
  std::vector<float> audio = read_wav_s16_mono(data / "audio" / "jfk.wav");
  audio.resize(5 * 16000 + 77);  // not a multiple of the hop
  const auto filters = npz_filters(data, "mel_128");
  const LogMel features = LogMelSpectrogram(128).compute(audio, 4 * 16000, 2);
  EXPECT_EQ(features.n_frames, audio.size() / 160);  // longer than the window: taken whole
  const auto reference = reference_log_mel(audio, 4 * 16000, filters, 128);
  double diff = 0.0;
  for (size_t i = 0; i < reference.size(); ++i) {
    diff = std::max(diff, std::fabs(features.data[i] - reference[i]));
  }
  std::printf("jfk 5 s, 128 mels: max |features - double reference| = %.3g\n", diff);
  EXPECT_LE(diff, kTolerance);
}

TEST(LogMel, SilenceAndErrors) {
  const LogMel silent = LogMelSpectrogram(80).compute({}, 1600);
  EXPECT_EQ(silent.n_frames, 10u);
  for (float v : silent.data) EXPECT_EQ(v, (-10.0f + 4.0f) / 4.0f);
  EXPECT_THROW(LogMelSpectrogram(80).compute({}, 200), Error);
  EXPECT_THROW(LogMelSpectrogram(80, std::vector<float>(10)), Error);
}

}  // namespace
}  // namespace oxi::whisper
