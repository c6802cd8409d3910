#include "tests/common/test_data.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <unistd.h>

namespace oxi::test {

std::optional<std::filesystem::path> shared_data_dir() {
  std::filesystem::path dir;
  if (const char* env = std::getenv("OXINFER_SHARED_DATA"); env && *env) {
    dir = env;
  } else {
    dir = std::filesystem::path(OXI_SOURCE_ROOT) / ".." / "shared" / "data";
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return std::nullopt;
  return dir;
}

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("oxinfer-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<float> random_normal(size_t n, uint32_t seed, float stddev) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_file_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::vector<float> read_wav_s16_mono(const std::filesystem::path& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  size_t pos = 12;
  while (pos + 8 <= bytes.size()) {
    uint32_t size;
    std::memcpy(&size, bytes.data() + pos + 4, 4);
    if (std::memcmp(bytes.data() + pos, "data", 4) == 0) {
      std::vector<float> out(std::min<size_t>(size, bytes.size() - pos - 8) / 2);
      for (size_t i = 0; i < out.size(); ++i) {
        int16_t v;
        std::memcpy(&v, bytes.data() + pos + 8 + 2 * i, 2);
        out[i] = static_cast<float>(v) / 32768.0f;
      }
      return out;
    }
    pos += 8 + size + (size & 1);
  }
  throw std::runtime_error("no data chunk in " + path.string());
}

void write_wav_s16_mono(const std::filesystem::path& path, const std::vector<float>& samples,
                        uint32_t sample_rate) {
  std::vector<uint8_t> out;
  auto put = [&](const void* p, size_t n) {
    // byte by byte: GCC 12 takes insert()'s memmove of a few bytes for an overflow
    // (-Wstringop-overflow false positive)
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) out.push_back(b[i]);
  };
  auto u32 = [&](uint32_t v) { put(&v, 4); };
  auto u16 = [&](uint16_t v) { put(&v, 2); };
  const uint32_t data_bytes = static_cast<uint32_t>(samples.size() * 2);
  put("RIFF", 4), u32(36 + data_bytes), put("WAVE", 4);
  put("fmt ", 4), u32(16), u16(1), u16(1), u32(sample_rate), u32(sample_rate * 2), u16(2), u16(16);
  put("data", 4), u32(data_bytes);
  for (float x : samples) {
    const float c = std::clamp(x, -1.0f, 1.0f);
    u16(static_cast<uint16_t>(static_cast<int16_t>(std::lround(c * 32767.0f))));
  }
  write_file_bytes(path, out);
}

}  // namespace oxi::test
