// The demo model end to end: sentences of its vocabulary spoken by espeak-ng (voices of the
// training set and ones held out from it) must come out as the right words, and the library,
// `oxinfer transcribe --timestamps` and a GStreamer pipeline ending in oxiwhisper must agree
// on the text exactly (they run the same long-form algorithm).
#include <gst/gst.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "lib/media/audio_decoder.h"
#include "lib/whisper/transcriber.h"
#include "tests/common/test_data.h"

namespace {

namespace fs = std::filesystem;

struct Utterance {
  std::string voice;
  int speed;
  std::string text;  // words of tools/train-demo-asr/words.txt only
};

// Sentences written for this test (not from the training generator's templates); the last two
// use voice variants held out from training.
const std::vector<Utterance> kUtterances = {
    {"en-us", 150, "please turn on the kitchen lights at seven thirty"},
    {"en", 160, "set a timer for ten minutes"},
    {"en-gb-x-rp", 140, "what is the weather like today"},
    {"en-us+f4", 150, "call my mother on friday morning"},
    {"en+m6", 170, "play some music in the bedroom"},
};

// The largest word error rate over all sentences that counts as transcribing them.
constexpr double kMaxWordErrorRate = 0.25;

std::string normalise(const std::string& s) {
  std::string out;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '\'')
      out += static_cast<char>(std::tolower(u));
    else if (!out.empty() && out.back() != ' ')
      out += ' ';
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

size_t edit_distance(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<size_t> d(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = d[0];
    d[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cur = std::min({d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] != b[j - 1])});
      prev = d[j];
      d[j] = cur;
    }
  }
  return d[b.size()];
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

GstPadProbeReturn collect_text(GstPad*, GstPadProbeInfo* info, gpointer user_data) {
  GstBuffer* buffer = GST_PAD_PROBE_INFO_BUFFER(info);
  GstMapInfo map;
  if (buffer && gst_buffer_map(buffer, &map, GST_MAP_READ)) {
    static_cast<std::string*>(user_data)->append(reinterpret_cast<const char*>(map.data), map.size);
    gst_buffer_unmap(buffer, &map);
  }
  return GST_PAD_PROBE_OK;
}

// The text oxiwhisper pushes for `wav` (file mode), or a failure message.
std::string transcribe_with_element(const fs::path& wav, const fs::path& model) {
  const std::string description = "filesrc location=\"" + wav.string() +
                                  "\" ! wavparse ! audioconvert ! audioresample ! "
                                  "audio/x-raw,format=F32LE,rate=16000,channels=1 ! "
                                  "oxiwhisper model=\"" +
                                  model.string() +
                                  "\" language-code=en threads=2 ! fakesink name=out sync=false";
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(description.c_str(), &error);
  if (error) {
    const std::string m = error->message;
    g_error_free(error);
    return "PIPELINE ERROR: " + m;
  }
  std::string text;
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "out");
  GstPad* pad = gst_element_get_static_pad(sink, "sink");
  gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, collect_text, &text, nullptr);
  gst_object_unref(pad);
  gst_object_unref(sink);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* m = gst_bus_timed_pop_filtered(
      bus, 120 * GST_SECOND, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  if (!m || GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR) text = "PIPELINE ERROR or timeout";
  if (m) gst_message_unref(m);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  return text;
}

struct Heard {
  std::string said, library, cli, element;
};

// Speaks every utterance and transcribes it three ways, once for both tests.
class DemoAsr : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* root = std::getenv("OXINFER_SOURCE_ROOT");
    const char* build = std::getenv("OXINFER_BUILD_ROOT");
    if (!root || !build) {
      skip_reason_ = "run through meson test";
      return;
    }
    const fs::path model = fs::path(root) / "examples" / "demo-asr";
    if (!fs::exists(model / "model.safetensors")) {
      skip_reason_ = "no demo model in " + model.string();
      return;
    }
    if (std::system("command -v espeak-ng >/dev/null") != 0) {
      skip_reason_ = "espeak-ng is needed to synthesise the test speech";
      return;
    }
    const fs::path oxinfer = fs::path(build) / "tools" / "oxinfer" / "oxinfer";

    gst_init(nullptr, nullptr);
    const auto whisper = oxi::whisper::WhisperModel::load(model);
    auto backend = oxi::backends::make_cpu_backend(2);
    oxi::whisper::Transcriber transcriber(whisper, *backend);
    oxi::whisper::TranscribeOptions options;
    options.language = "en";

    oxi::test::TempDir tmp;
    for (size_t i = 0; i < kUtterances.size(); ++i) {
      const Utterance& u = kUtterances[i];
      Heard h;
      h.said = u.text;
      // espeak-ng speaks at 22.05 kHz. The three paths get the same 16 kHz WAV, resampled once
      // here by FFmpeg: GStreamer's audioresample and FFmpeg's swresample differ slightly, and
      // a small model's text can follow such differences.
      const fs::path spoken = tmp / ("u" + std::to_string(i) + ".22k.wav");
      const fs::path wav = tmp / ("u" + std::to_string(i) + ".wav");
      const std::string speak = "espeak-ng -v '" + u.voice + "' -s " + std::to_string(u.speed) +
                                " -w '" + spoken.string() + "' '" + u.text + "'";
      if (std::system(speak.c_str()) != 0) {
        failure_ = "failed: " + speak;
        return;
      }
      oxi::test::write_wav_s16_mono(wav, oxi::media::decode_audio_file(spoken));
      // 1. the library
      for (const auto& segment :
           transcriber.transcribe(oxi::media::decode_audio_file(wav), options).segments)
        h.library += segment.text;
      // 2. the CLI; its text output with --timestamps is "[start --> end] text" lines
      const fs::path out = tmp / ("u" + std::to_string(i) + ".txt");
      const std::string cli_cmd =
          "'" + oxinfer.string() + "' transcribe '" + wav.string() + "' -m '" + model.string() +
          "' --language en --timestamps --threads 2 -q > '" + out.string() + "'";
      if (std::system(cli_cmd.c_str()) != 0) {
        failure_ = "failed: " + cli_cmd;
        return;
      }
      std::istringstream lines(read_text(out));
      for (std::string line; std::getline(lines, line);) {
        const size_t close = line.find("] ");
        h.cli += " " + (close == std::string::npos ? line : line.substr(close + 2));
      }
      // 3. the element
      h.element = transcribe_with_element(wav, model);
      heard_.push_back(h);
    }
  }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    ASSERT_TRUE(failure_.empty()) << failure_;
  }

  static inline std::string skip_reason_, failure_;
  static inline std::vector<Heard> heard_;
};

// The same long-form algorithm behind all three: the same words.
TEST_F(DemoAsr, LibraryCliAndElementAgree) {
  for (const Heard& h : heard_) {
    EXPECT_EQ(normalise(h.cli), normalise(h.library)) << "said: " << h.said;
    EXPECT_EQ(normalise(h.element), normalise(h.library)) << "said: " << h.said;
  }
}

// The model's accuracy: speech in, the right words out (suite demo-quality, see meson.build).
TEST_F(DemoAsr, TranscribesTheRightWords) {
  size_t errors = 0, total = 0;
  for (const Heard& h : heard_) {
    const size_t e = edit_distance(words(h.said), words(normalise(h.library)));
    std::printf("said:  %s\nheard: %s  (%zu errors)\n", h.said.c_str(),
                normalise(h.library).c_str(), e);
    errors += e;
    total += words(h.said).size();
  }
  const double wer = static_cast<double>(errors) / static_cast<double>(total);
  std::printf("word error rate %.1f %% (%zu / %zu)\n", 100 * wer, errors, total);
  EXPECT_LE(wer, kMaxWordErrorRate);
}

}  // namespace
