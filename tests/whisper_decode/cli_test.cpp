// oxinfer transcribe and oxinfer bench whisper on the tiny model: formats, several files, the
// debug dumps' sizes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/common/cli_runner.h"
#include "tests/common/test_data.h"
#include "tests/whisper_decode/wav_writer.h"
#include "tests/whisper_model/tiny_whisper.h"

namespace oxi::whisper {
namespace {

namespace fs = std::filesystem;

using oxi::test::read_text;

class TranscribeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    exe_ = oxi::test::oxinfer_exe(why);
    if (exe_.empty()) GTEST_SKIP() << why;
    test::write_hf_dir(test::make_tiny_whisper(42), dir_ / "tiny");
    test::write_wav16(dir_ / "a.wav", test::speech_like(2.4));
    test::write_wav16(dir_ / "b.wav", test::speech_like(1.6, 5));
  }
  // Runs oxinfer with `args`; stdout and stderr go to files in the temp dir.
  int run(const std::string& args) { return oxi::test::run_cli(exe_, args, dir_.path()); }
  std::string model() const { return "-m " + (dir_ / "tiny").string(); }
  std::string wav(const char* name = "a.wav") const { return (dir_ / name).string(); }

  oxi::test::TempDir dir_;
  fs::path exe_;
};

TEST_F(TranscribeCli, SubtitleFormats) {
  ASSERT_EQ(
      run("transcribe " + wav() + " " + model() + " --format srt -o " + (dir_ / "x.srt").string()),
      0)
      << read_text(dir_ / "err.txt");
  const std::string srt = read_text(dir_ / "x.srt");
  if (!srt.empty()) {
    EXPECT_EQ(srt.rfind("1\n00:00:0", 0), 0u) << srt;
  }

  ASSERT_EQ(run("transcribe " + wav() + " " + model() + " --format vtt --word-timestamps"), 0);
  EXPECT_EQ(read_text(dir_ / "out.txt").rfind("WEBVTT\n\n", 0), 0u);

  ASSERT_EQ(run("transcribe " + wav() + " " + model() + " --format json --fallback"), 0);
  const nlohmann::json j = nlohmann::json::parse(read_text(dir_ / "out.txt"));
  EXPECT_EQ(j["language"], "en");
  EXPECT_TRUE(j["segments"].is_array());
  EXPECT_GT(j["timings"]["audio_seconds"].get<double>(), 2.3);

  ASSERT_EQ(run("transcribe " + wav() + " " + model() +
                " --timestamps --condition-on-prev "
                "--initial-prompt 'the' --threads 1"),
            0);
  const std::string text = read_text(dir_ / "out.txt");
  if (!text.empty()) {
    EXPECT_EQ(text[0], '[');
  }
}

TEST_F(TranscribeCli, DumpsHaveTheirSizes) {
  ASSERT_EQ(
      run("transcribe " + wav() + " " + model() + " --dump-mel " + (dir_ / "mel.f32").string() +
          " --dump-logits " + (dir_ / "logits.f32").string() + " --show-tokens --language en"),
      0)
      << read_text(dir_ / "err.txt");
  EXPECT_EQ(fs::file_size(dir_ / "mel.f32"), 80u * 100u * 4u);  // n_mels x n_frames
  EXPECT_EQ(fs::file_size(dir_ / "logits.f32"), 1867u * 4u);    // n_vocab
  EXPECT_NE(read_text(dir_ / "err.txt").find("generated tokens: "), std::string::npos);
}

TEST_F(TranscribeCli, SeveralFilesGoToADirectory) {
  ASSERT_EQ(run("transcribe " + wav("a.wav") + " " + wav("b.wav") + " " + model() +
                " --format srt -o " + (dir_ / "subs").string()),
            0)
      << read_text(dir_ / "err.txt");
  EXPECT_TRUE(fs::exists(dir_ / "subs" / "a.srt"));
  EXPECT_TRUE(fs::exists(dir_ / "subs" / "b.srt"));
}

TEST_F(TranscribeCli, UsageErrors) {
  EXPECT_NE(run("transcribe " + wav()), 0);  // no model
  EXPECT_NE(run("transcribe " + wav() + " " + model() + " --format doc"), 0);
  EXPECT_NE(run("transcribe " + (dir_ / "missing.wav").string() + " " + model()), 0);
  EXPECT_NE(run("transcribe " + wav() + " " + model() + " --kv-cache q8"), 0);
  EXPECT_NE(read_text(dir_ / "err.txt").find("--kv-cache must be f32 or f16"), std::string::npos);
  EXPECT_EQ(run("transcribe " + wav() + " " + model() + " --kv-cache f16"), 0)
      << read_text(dir_ / "err.txt");
}

TEST_F(TranscribeCli, BenchWhisperJson) {
  ASSERT_EQ(run("bench whisper " + model() + " --json --threads 2 --reps 1"), 0)
      << read_text(dir_ / "err.txt");
  const nlohmann::json j = nlohmann::json::parse(read_text(dir_ / "out.txt"));
  for (const char* key : {"encoder_ms_per_window", "decoder_ms_per_token", "rtf", "threads"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_GT(j["encoder_ms_per_window"].get<double>(), 0.0);
  EXPECT_GT(j["rtf"].get<double>(), 0.0);
  EXPECT_EQ(j["threads"], 2);
}

}  // namespace
}  // namespace oxi::whisper
