// The project's trained demo model (examples/demo-asr) against its torch reference
// (reference_logits.json): the test utterances are synthesised as
// tools/train-demo-asr/make_testset_audio.py does (espeak-ng, then sox to 16 kHz mono 16-bit,
// without dither so that every run sees the same samples); the first-step logits after
// <|startoftranscript|><|en|><|transcribe|><|notimestamps|> and the greedy tokens must match. Skips
// without the model, espeak-ng or sox.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_backend.h"
#include "lib/media/audio_decoder.h"
#include "lib/whisper/transcriber.h"
#include "tests/common/test_data.h"

namespace oxi::whisper {
namespace {

namespace fs = std::filesystem;

TEST(DemoModel, MatchesTheTorchReference) {
  const char* root = std::getenv("OXINFER_SOURCE_ROOT");
  if (!root) GTEST_SKIP() << "OXINFER_SOURCE_ROOT not set (run through meson test)";
  const fs::path dir = fs::path(root) / "examples" / "demo-asr";
  if (!fs::exists(dir / "model.safetensors") || !fs::exists(dir / "reference_logits.json"))
    GTEST_SKIP() << "no demo model in " << dir;
  if (std::system("command -v espeak-ng >/dev/null && command -v sox >/dev/null") != 0)
    GTEST_SKIP() << "espeak-ng and sox are needed to synthesise the test utterances";

  const nlohmann::json ref = nlohmann::json::parse(std::ifstream(dir / "reference_logits.json"));
  std::map<std::string, std::vector<std::string>> rows;  // id -> voice, speed, pitch
  std::ifstream tsv(dir / "testset.tsv");
  std::string line;
  std::getline(tsv, line);
  while (std::getline(tsv, line)) {
    std::vector<std::string> f;
    for (size_t a = 0, b; a <= line.size(); a = b + 1) {
      b = line.find('\t', a);
      if (b == std::string::npos) b = line.size();
      f.push_back(line.substr(a, b - a));
    }
    if (f.size() == 5) rows[f[0]] = f;
  }

  const auto model = WhisperModel::load(dir);
  auto backend = backends::make_cpu_backend(2);
  Transcriber tr(model, *backend);
  oxi::test::TempDir tmp;
  for (const nlohmann::json& u : ref["utterances"]) {
    const std::string id = u["id"];
    ASSERT_TRUE(rows.count(id)) << id;
    const std::vector<std::string>& r = rows[id];
    const fs::path raw = tmp / (id + ".raw.wav"), wav = tmp / (id + ".wav");
    const std::string cmd = "espeak-ng -v '" + r[1] + "' -s " + r[2] + " -p " + r[3] + " -w '" +
                            raw.string() + "' \"" + r[4] + "\" && sox -q '" + raw.string() +
                            "' -D -r 16000 -c 1 -b 16 '" + wav.string() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const std::vector<float> audio = media::decode_audio_file(wav);

    const std::vector<float> logits = tr.first_step_logits(audio, "en");
    const std::vector<float> want = u["first_step_logits_first10"];
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(logits[i], want[i], 2e-3) << id << " " << i;

    std::vector<int32_t> generated;
    tr.set_window_callback([&](const WindowResult& w) {
      if (!generated.empty()) return;  // the first window's tokens
      generated = w.tokens;
      if (w.ended) generated.push_back(model->vocab().eot);
    });
    TranscribeOptions o;
    o.language = "en";
    o.timestamps = false;
    o.no_speech_threshold = 0.0f;
    const Transcript t = tr.transcribe(audio, o);
    std::vector<int32_t> expected = u["greedy_token_ids"];
    expected.erase(expected.begin(), expected.begin() + 4);  // the prompt
    EXPECT_EQ(generated, expected) << id;
    if (!t.segments.empty()) {
      EXPECT_EQ(t.segments[0].text, u["greedy_text"].get<std::string>());
    }
  }
}

}  // namespace
}  // namespace oxi::whisper
