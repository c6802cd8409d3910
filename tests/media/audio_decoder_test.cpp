// Decoding and conversion to 16 kHz mono: the three encodings of the jfk clip against the
// WAV's samples, and synthetic PCM against analytic signals.
#include "lib/media/audio_decoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numbers>

#include "lib/core/error.h"
#include "tests/common/test_data.h"

namespace oxi::media {
namespace {

using test::read_wav_s16_mono;

// The lag (samples `b` is late relative to `a`) in [-max_lag, max_lag] maximising the
// cross-correlation over a 2 s stretch of speech.
long best_lag(const std::vector<float>& a, const std::vector<float>& b, long max_lag) {
  const long start = 3 * 16000, length = 2 * 16000;
  long best = 0;
  double best_score = -1e300;
  for (long lag = -max_lag; lag <= max_lag; ++lag) {
    double score = 0.0;
    for (long i = start; i < start + length; ++i) score += double(a[i]) * b[i + lag];
    if (score > best_score) {
      best_score = score;
      best = lag;
    }
  }
  return best;
}

// Signal-to-noise ratio of `b` (shifted by lag) against the reference `a`, in dB, over the
// samples both cover.
double snr_db(const std::vector<float>& a, const std::vector<float>& b, long lag) {
  double signal = 0.0, noise = 0.0;
  for (long i = 0; i < static_cast<long>(a.size()); ++i) {
    const long j = i + lag;
    if (j < 0 || j >= static_cast<long>(b.size())) continue;
    signal += double(a[i]) * a[i];
    noise += (double(a[i]) - b[j]) * (double(a[i]) - b[j]);
  }
  return 10.0 * std::log10(signal / noise);
}

TEST(AudioDecoder, WavIsExact) {
  OXI_REQUIRE_SHARED_DATA(data);
  const auto reference = read_wav_s16_mono(data / "audio" / "jfk.wav");
  const auto decoded = decode_audio_file(data / "audio" / "jfk.wav");
  ASSERT_EQ(decoded.size(), reference.size());
  EXPECT_EQ(decoded, reference);
}

TEST(AudioDecoder, FlacResampledAndDownMixed) {
  OXI_REQUIRE_SHARED_DATA(data);
  const auto reference = read_wav_s16_mono(data / "audio" / "jfk.wav");
  const auto decoded = decode_audio_file(data / "audio" / "jfk.flac");  // 44.1 kHz stereo
  EXPECT_NEAR(static_cast<double>(decoded.size()), static_cast<double>(reference.size()), 1600.0);
  const long lag = best_lag(reference, decoded, 1600);
  const double snr = snr_db(reference, decoded, lag);
  std::printf("flac: lag %ld samples, SNR %.1f dB\n", lag, snr);
  EXPECT_EQ(lag, 0);
  EXPECT_GT(snr, 60.0);  // measured 84 dB
}

TEST(AudioDecoder, Mp3AlignedByCrossCorrelation) {
  OXI_REQUIRE_SHARED_DATA(data);
  const auto reference = read_wav_s16_mono(data / "audio" / "jfk.wav");
  const auto decoded = decode_audio_file(data / "audio" / "jfk.mp3");
  const long lag = best_lag(reference, decoded, 3200);
  const double snr = snr_db(reference, decoded, lag);
  std::printf("mp3: lag %ld samples (%.1f ms), SNR %.1f dB\n", lag, lag / 16.0, snr);
  EXPECT_LE(std::abs(lag), 1600);  // the 69 ms encoder delay, or less if the decoder trims it
  EXPECT_GT(snr, 30.0);            // measured 41 dB (lossy)
}

TEST(AudioDecoder, ErrorsNameTheFile) {
  test::TempDir dir;
  const auto expect_error_naming = [](const std::filesystem::path& path) {
    try {
      decode_audio_file(path);
      ADD_FAILURE() << "no error for " << path;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    }
  };
  expect_error_naming(dir / "missing.wav");
  test::write_file_bytes(dir / "text.wav", {'n', 'o', 't', ' ', 'a', 'u', 'd', 'i', 'o'});
  expect_error_naming(dir / "text.wav");
}

TEST(ToMono16k, StereoS16SineAt44100) {
  const int in_rate = 44100;
  const double freq = 440.0, amplitude = 0.5;
  std::vector<int16_t> pcm(2 * in_rate);
  for (int i = 0; i < in_rate; ++i) {
    const double v = amplitude * std::sin(2 * std::numbers::pi * freq * i / in_rate);
    pcm[2 * i] = pcm[2 * i + 1] = static_cast<int16_t>(std::lround(v * 32767.0));
  }
  const auto out = to_mono_16k(pcm.data(), in_rate, SampleFormat::s16, 2, in_rate);
  EXPECT_NEAR(static_cast<double>(out.size()), 16000.0, 2.0);
  double max_err = 0.0;
  for (size_t i = 100; i + 100 < out.size(); ++i) {  // away from the filter's edge effects
    const double expected = amplitude * 32767.0 / 32768.0 *
                            std::sin(2 * std::numbers::pi * freq * static_cast<double>(i) / 16000);
    max_err = std::max(max_err, std::fabs(out[i] - expected));
  }
  std::printf("44.1 kHz stereo s16 sine -> 16 kHz: max error %.3g\n", max_err);
  EXPECT_LT(max_err, 1e-4);  // measured 2.3e-5
}

TEST(ToMono16k, FormatsAndDownMix) {
  // Mono f32 at 16 kHz passes through unchanged.
  const auto noise = test::random_floats(8000, 7, -0.9f, 0.9f);
  EXPECT_EQ(to_mono_16k(noise.data(), noise.size(), SampleFormat::f32, 1, 16000), noise);
  // Channels are averaged: (a + b) / 2 for every format.
  const std::vector<double> f64 = {0.5, 0.25, -1.0, 0.5};
  EXPECT_EQ(to_mono_16k(f64.data(), 2, SampleFormat::f64, 2, 16000),
            (std::vector<float>{0.375f, -0.25f}));
  const std::vector<int32_t> s32 = {1 << 30, 0, -(1 << 30), -(1 << 30)};
  EXPECT_EQ(to_mono_16k(s32.data(), 2, SampleFormat::s32, 2, 16000),
            (std::vector<float>{0.25f, -0.5f}));
  const std::vector<uint8_t> u8 = {192, 128, 64};  // 128 is zero
  EXPECT_EQ(to_mono_16k(u8.data(), 3, SampleFormat::u8, 1, 16000),
            (std::vector<float>{0.5f, 0.0f, -0.5f}));
  // Opposite channels cancel.
  std::vector<float> opposite(2 * 8000);
  for (size_t i = 0; i < 8000; ++i) opposite[2 * i] = -(opposite[2 * i + 1] = noise[i]);
  for (float v : to_mono_16k(opposite.data(), 8000, SampleFormat::f32, 2, 8000)) {
    EXPECT_EQ(v, 0.0f);
  }
  EXPECT_TRUE(to_mono_16k(nullptr, 0, SampleFormat::s16, 1, 16000).empty());
  EXPECT_THROW(to_mono_16k(noise.data(), 10, SampleFormat::f32, 0, 16000), Error);
  EXPECT_THROW(to_mono_16k(noise.data(), 10, SampleFormat::f32, 1, 0), Error);
}

}  // namespace
}  // namespace oxi::media
