// The FFmpeg media module (lib/media/media_module.h): not loaded until audio is first decoded,
// and a clear error naming what was tried when it cannot be loaded. A binary of its own: the
// module is loaded once per process, so these tests must see a process that has not decoded yet.
#include <gtest/gtest.h>
#include <link.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "lib/core/error.h"
#include "lib/media/audio_decoder.h"
#include "tests/common/test_data.h"

namespace oxi::media {
namespace {

// Whether a shared object whose path contains `name_part` is loaded in this process.
bool loaded(const std::string& name_part) {
  struct Search {
    const std::string& name_part;
    bool found = false;
  } search{name_part};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto& s = *static_cast<Search*>(data);
        if (info->dlpi_name && std::string(info->dlpi_name).find(s.name_part) != std::string::npos)
          s.found = true;
        return 0;
      },
      &search);
  return search.found;
}

// Decodes `wav` with the module at `module`; exits 3 after printing the error (a death test's
// child), 0 if it decoded.
[[noreturn]] void decode_with_module(const std::string& module, const std::filesystem::path& wav) {
  setenv("OXI_MEDIA_MODULE", module.c_str(), 1);
  try {
    decode_audio_file(wav);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::exit(3);
  }
  std::exit(0);
}

// Death tests run first (gtest orders *DeathTest suites first), each in a forked child of a
// process that has not loaded the module.
TEST(MediaModuleDeathTest, UnloadableModulesAreClearErrors) {
  test::TempDir dir;
  const auto wav = dir.path() / "tone.wav";
  test::write_wav_s16_mono(wav, std::vector<float>(1600, 0.25f), 16000);
  const std::string missing = (dir.path() / "missing_module.so").string();
  EXPECT_EXIT(decode_with_module(missing, wav), testing::ExitedWithCode(3),
              "tone\\.wav: cannot load the FFmpeg media module \\(.*missing_module\\.so.*\\); set "
              "OXI_MEDIA_MODULE");
  const auto not_elf = dir.path() / "not_a_module.so";
  std::ofstream(not_elf) << "not a shared object\n";
  EXPECT_EXIT(decode_with_module(not_elf.string(), wav), testing::ExitedWithCode(3),
              "not_a_module\\.so");
  // A shared object without the module's entry point.
  EXPECT_EXIT(decode_with_module("libm.so.6", wav), testing::ExitedWithCode(3),
              "libm\\.so\\.6: not an oxinfer media module of ABI");
}

TEST(MediaModule, FfmpegLoadsOnFirstDecode) {
  ASSERT_FALSE(loaded("libavformat")) << "FFmpeg loaded before any audio was decoded";
  ASSERT_FALSE(loaded("oxi_media_ffmpeg"));
  test::TempDir dir;
  const auto wav = dir.path() / "ramp.wav";
  std::vector<float> ramp(3200);
  for (size_t i = 0; i < ramp.size(); ++i)
    ramp[i] = (static_cast<float>(i % 200) - 100.0f) / 128.0f;
  test::write_wav_s16_mono(wav, ramp, 16000);
  const std::vector<float> decoded = decode_audio_file(wav);
  EXPECT_TRUE(loaded("oxi_media_ffmpeg"));
  EXPECT_TRUE(loaded("libavformat"));
  ASSERT_EQ(decoded.size(), ramp.size());
  for (size_t i = 0; i < ramp.size(); ++i) EXPECT_NEAR(decoded[i], ramp[i], 2.0 / 32768) << i;
}

}  // namespace
}  // namespace oxi::media
