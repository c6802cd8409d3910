#include "tests/whisper_decode/wav_writer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <numbers>

namespace oxi::whisper::test {

std::vector<float> speech_like(double seconds, unsigned seed) {
  const size_t n = static_cast<size_t>(seconds * 16000);
  std::vector<float> out(n);
  double phase = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i) / 16000;
    const double pitch = 110.0 + 10.0 * seed + 25.0 * std::sin(2 * std::numbers::pi * 0.6 * t);
    phase += 2 * std::numbers::pi * pitch / 16000;
    double v = 0.0;
    for (int h = 1; h <= 10; ++h) v += std::sin(h * phase + seed) / h;
    const double envelope = 0.5 + 0.5 * std::sin(2 * std::numbers::pi * 3.5 * t);
    out[i] = static_cast<float>(0.25 * envelope * v);
  }
  return out;
}

void write_wav16(const std::filesystem::path& file, const std::vector<float>& samples) {
  std::ofstream out(file, std::ios::binary);
  const auto u32 = [&](uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
  const auto u16 = [&](uint16_t v) { out.write(reinterpret_cast<const char*>(&v), 2); };
  const uint32_t data_bytes = static_cast<uint32_t>(samples.size() * 2);
  out.write("RIFF", 4);
  u32(36 + data_bytes);
  out.write("WAVEfmt ", 8);
  u32(16);
  u16(1);  // PCM
  u16(1);  // mono
  u32(16000);
  u32(32000);
  u16(2);
  u16(16);
  out.write("data", 4);
  u32(data_bytes);
  for (float s : samples) {
    const auto v = static_cast<int16_t>(std::lround(std::clamp(s, -1.0f, 1.0f) * 32767.0f));
    u16(static_cast<uint16_t>(v));
  }
}

}  // namespace oxi::whisper::test
