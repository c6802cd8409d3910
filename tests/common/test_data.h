// Helpers shared by the test executables: where the shared third-party data lives, scratch
// directories, and the random numbers tests build their tiny models from.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace oxi::test {

// ../shared/data (or $OXINFER_SHARED_DATA) when it exists. Tests that need it call
// OXI_REQUIRE_SHARED_DATA() first, which skips with a message when it is absent.
std::optional<std::filesystem::path> shared_data_dir();

// A fresh empty directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Deterministic uniform / normal floats for test data.
std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f);
std::vector<float> random_normal(size_t n, uint32_t seed, float stddev = 1.0f);

std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path);
void write_file_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes);

// The samples of a 16-bit PCM mono WAV as x / 32768 (what openai-whisper's ffmpeg call yields),
// parsed here rather than by the code under test.
std::vector<float> read_wav_s16_mono(const std::filesystem::path& path);
// A 16-bit PCM mono WAV of `samples` (clamped to [-1, 1], scaled by 32767, rounded).
void write_wav_s16_mono(const std::filesystem::path& path, const std::vector<float>& samples,
                        uint32_t sample_rate = 16000);

}  // namespace oxi::test

#define OXI_REQUIRE_SHARED_DATA(var)                                                      \
  auto var##_opt = ::oxi::test::shared_data_dir();                                        \
  if (!var##_opt) GTEST_SKIP() << "shared test data not found (set OXINFER_SHARED_DATA)"; \
  const std::filesystem::path var = *var##_opt
