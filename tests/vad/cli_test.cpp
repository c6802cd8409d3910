// oxinfer vad: the --json interface on the authors' test file equals the reference segments,
// the text output prints the same segments in seconds, and a bad model is a clean error.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/common/cli_runner.h"
#include "tests/common/test_data.h"

namespace {

namespace fs = std::filesystem;

using oxi::test::read_text;

class VadCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    exe_ = oxi::test::oxinfer_exe(why);
    if (exe_.empty()) GTEST_SKIP() << why;
  }
  // Runs oxinfer with `args`; stdout and stderr go to files in the temp dir.
  int run(const std::string& args) { return oxi::test::run_cli(exe_, args, dir_.path()); }
  std::string out() const { return read_text(dir_ / "out.txt"); }
  std::string err() const { return read_text(dir_ / "err.txt"); }

  oxi::test::TempDir dir_;
  fs::path exe_;
};

TEST_F(VadCli, JsonEqualsTheReferenceSegments) {
  OXI_REQUIRE_SHARED_DATA(data);
  const fs::path vad = data / "vad";
  const std::string model = (vad / "silero_vad_16k.safetensors").string();
  const std::string wav = (vad / "speech-with-pauses.wav").string();
  std::ifstream in(vad / "speech-with-pauses.silero.json");
  const nlohmann::json ref = nlohmann::json::parse(in);

  ASSERT_EQ(run("vad " + wav + " -m " + model + " --json"), 0) << err();
  const nlohmann::json j = nlohmann::json::parse(out());  // throws unless exactly one object
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.size(), 2u);
  EXPECT_EQ(j.at("segments"), ref.at("segments"));
  const auto probs = j.at("probs").get<std::vector<double>>();
  const auto ref_probs = ref.at("probs").get<std::vector<double>>();
  ASSERT_EQ(probs.size(), ref_probs.size());
  for (size_t i = 0; i < probs.size(); ++i) EXPECT_NEAR(probs[i], ref_probs[i], 1e-4) << i;

  // Text: "start end" in seconds per segment, the same segments.
  ASSERT_EQ(run("vad " + wav + " -m " + model), 0) << err();
  std::istringstream lines(out());
  std::vector<std::pair<double, double>> seconds;
  double a = 0, b = 0;
  while (lines >> a >> b) seconds.emplace_back(a, b);
  ASSERT_EQ(seconds.size(), ref.at("segments").size());
  for (size_t i = 0; i < seconds.size(); ++i) {
    EXPECT_NEAR(seconds[i].first, ref["segments"][i][0].get<double>() / 16000, 0.0005);
    EXPECT_NEAR(seconds[i].second, ref["segments"][i][1].get<double>() / 16000, 0.0005);
  }

  // A higher threshold and longer minimum silence find no more segments than the default.
  ASSERT_EQ(
      run("vad " + wav + " -m " + model +
          " --json --threshold 0.8 --min-silence-ms 500 --min-speech-ms 100 --speech-pad-ms 0"),
      0)
      << err();
  EXPECT_LE(nlohmann::json::parse(out()).at("segments").size(), ref.at("segments").size());
}

TEST_F(VadCli, BadModelIsAnErrorNamingTheFile) {
  const fs::path bad = dir_ / "bad.safetensors";
  std::ofstream(bad) << "not a model";
  const fs::path wav = dir_ / "x.wav";
  std::ofstream(wav) << "x";
  const int rc = run("vad " + wav.string() + " -m " + bad.string());
  EXPECT_NE(rc, 0);
  EXPECT_NE(err().find(bad.string()), std::string::npos) << err();
  EXPECT_NE(run("vad " + wav.string()), 0);  // -m is required
}

}  // namespace
