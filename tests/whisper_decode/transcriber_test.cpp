// Transcription end to end on a tiny random Whisper model (1 s windows, 64 text positions):
// well-formed segments, determinism, cancellation, fallback, word timestamps, debug hooks.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <memory>
#include <numeric>
#include <thread>

#include "backends/cpu/cpu_backend.h"
#include "lib/media/audio_decoder.h"
#include "lib/whisper/decoding.h"
#include "lib/whisper/subtitles.h"
#include "lib/whisper/transcriber.h"
#include "lib/whisper/word_timestamps.h"
#include "tests/common/test_data.h"
#include "tests/whisper_decode/wav_writer.h"
#include "tests/whisper_model/tiny_whisper.h"

namespace oxi::whisper {
namespace {

class TinyTranscriber : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new oxi::test::TempDir();
    test::write_hf_dir(test::make_tiny_whisper(42), dir_->path() / "tiny");
    model_ = new std::shared_ptr<const WhisperModel>(WhisperModel::load(dir_->path() / "tiny"));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete dir_;
  }
  const std::shared_ptr<const WhisperModel>& model() const { return *model_; }

  static oxi::test::TempDir* dir_;
  static std::shared_ptr<const WhisperModel>* model_;
};
oxi::test::TempDir* TinyTranscriber::dir_ = nullptr;
std::shared_ptr<const WhisperModel>* TinyTranscriber::model_ = nullptr;

void expect_well_formed(const Transcript& t, double duration) {
  double previous_start = 0.0;
  for (const Segment& s : t.segments) {
    EXPECT_GE(s.t0, 0.0);
    EXPECT_LE(s.t0, s.t1);
    EXPECT_LE(s.t1, duration + 1.0 + 1e-9);  // one window past the end at most
    EXPECT_GE(s.t0 + 1e-9, previous_start - 1.0);
    previous_start = s.t0;
    EXPECT_FALSE(s.text.empty());
    for (const Word& w : s.words) {
      EXPECT_LE(w.start, w.end);
      EXPECT_GE(w.probability, 0.0f);
      EXPECT_LE(w.probability, 1.0f);
    }
  }
}

TEST_F(TinyTranscriber, GeneratedAudioGivesWellFormedSegments) {
  auto backend = backends::make_cpu_backend(2);
  Transcriber tr(model(), *backend);
  size_t windows = 0, tokens = 0;
  tr.set_window_callback([&](const WindowResult& r) {
    ++windows;
    tokens += r.tokens.size();
  });
  const std::vector<float> audio = test::speech_like(3.3);
  const Transcript t = tr.transcribe(audio, {});
  EXPECT_GE(windows, 4u);  // 3.3 s in windows of at most 1 s
  EXPECT_GT(tokens, 0u);
  EXPECT_FALSE(t.segments.empty());
  EXPECT_EQ(t.language, "en");
  expect_well_formed(t, 3.3);
}

TEST_F(TinyTranscriber, DecodingIsDeterministicAcrossRunsAndThreadCounts) {
  const std::vector<float> audio = test::speech_like(2.5, 2);
  auto b1 = backends::make_cpu_backend(1);
  auto b2 = backends::make_cpu_backend(2);
  Transcriber t1(model(), *b1), t2(model(), *b2);
  TranscribeOptions o;
  o.word_timestamps = true;
  const std::string a = to_json(t1.transcribe(audio, o));
  EXPECT_EQ(a, to_json(t1.transcribe(audio, o)));
  EXPECT_EQ(a, to_json(t2.transcribe(audio, o)));
  // Sampling with a seed is reproducible too.
  o.temperatures = {0.0f, 0.5f, 1.0f};
  o.logprob_threshold = 0.0f;  // every window falls back to the last temperature
  o.no_speech_threshold = 0.0f;
  EXPECT_EQ(to_json(t1.transcribe(audio, o)), to_json(t2.transcribe(audio, o)));
}

TEST_F(TinyTranscriber, FallbackTriesEveryTemperature) {
  auto backend = backends::make_cpu_backend(2);
  Transcriber tr(model(), *backend);
  WindowOptions o;
  o.temperatures = {0.0f, 0.4f, 1.0f};
  o.logprob_threshold = 0.0f;  // an average log-prob is never above 0: always fall back
  o.no_speech_threshold = 0.0f;
  o.seed = 7;
  const std::vector<float> audio = test::speech_like(0.9);
  const WindowResult r = tr.decode_window(audio, o);
  EXPECT_FLOAT_EQ(r.temperature, 1.0f);
  const WindowResult again = tr.decode_window(audio, o);
  EXPECT_EQ(r.tokens, again.tokens);
  o.temperatures = {0.0f};
  o.logprob_threshold = -1.0f;
  EXPECT_FLOAT_EQ(tr.decode_window(audio, o).temperature, 0.0f);
}

TEST_F(TinyTranscriber, CancelStopsBetweenWindows) {
  auto backend = backends::make_cpu_backend(2);
  Transcriber tr(model(), *backend);
  std::atomic<bool> cancel{false};
  size_t windows = 0;
  tr.set_window_callback([&](const WindowResult&) {
    ++windows;
    cancel = true;
  });
  const std::vector<float> audio = test::speech_like(5.0);
  tr.transcribe(audio, {}, {}, &cancel);
  EXPECT_EQ(windows, 1u);

  // From another thread, before and during the run: it returns early.
  std::atomic<bool> stop{false};
  tr.set_window_callback({});
  std::thread t([&] { stop = true; });
  t.join();
  const Transcript none = tr.transcribe(audio, {}, {}, &stop);
  EXPECT_TRUE(none.segments.empty());
  WindowOptions w;
  w.cancel = &stop;
  EXPECT_TRUE(tr.decode_window(std::span(audio).first(8000), w).cancelled);
}

TEST_F(TinyTranscriber, ProgressReachesOne) {
  auto backend = backends::make_cpu_backend(2);
  Transcriber tr(model(), *backend);
  double last = -1.0;
  bool monotonic = true;
  tr.transcribe(test::speech_like(2.2), {}, [&](double p) {
    monotonic = monotonic && p >= last;
    last = p;
  });
  EXPECT_TRUE(monotonic);
  EXPECT_DOUBLE_EQ(last, 1.0);
}

TEST_F(TinyTranscriber, WithoutTimestampsEachWindowIsOneSegment) {
  auto backend = backends::make_cpu_backend(2);
  Transcriber tr(model(), *backend);
  TranscribeOptions o;
  o.timestamps = false;
  o.no_speech_threshold = 0.0f;
  const Transcript t = tr.transcribe(test::speech_like(2.5, 3), o);
  for (const Segment& s : t.segments) {
    EXPECT_NEAR(s.t0, std::round(s.t0), 1e-9);  // windows start on whole seconds here
    EXPECT_LE(s.t1 - s.t0, 1.0 + 1e-9);
  }
  expect_well_formed(t, 2.5);
}

TEST_F(TinyTranscriber, WordTimestampsAndPrompts) {
  auto backend = backends::make_cpu_backend(2);
  Transcriber tr(model(), *backend);
  TranscribeOptions o;
  o.word_timestamps = true;
  o.initial_prompt = "the the";
  o.condition_on_previous_text = true;
  const Transcript t = tr.transcribe(test::speech_like(3.0, 4), o);
  expect_well_formed(t, 3.0);
  size_t words = 0;
  for (const Segment& s : t.segments) words += s.words.size();
  if (!t.segments.empty()) {
    EXPECT_GT(words, 0u) << to_json(t);
  }
}

TEST_F(TinyTranscriber, ShortChunksWithTheShortEncoder) {
  auto backend = backends::make_cpu_backend(2);
  Transcriber tr(model(), *backend);
  const std::vector<float> audio = test::speech_like(0.45);
  for (bool audio_only : {false, true}) {
    WindowOptions o;
    o.encode_audio_only = audio_only;
    o.time_offset = 10.0;
    o.word_timestamps = true;
    const WindowResult r = tr.decode_window(audio, o);
    EXPECT_LE(r.consumed_samples, audio.size());
    EXPECT_GT(r.consumed_samples, 0u);
    for (const DecodedSegment& s : r.segments) {
      EXPECT_GE(s.segment.t0, 10.0);
      EXPECT_LE(s.segment.t0, s.segment.t1);
      EXPECT_FALSE(s.tokens.empty());
    }
  }
  EXPECT_THROW(tr.decode_window(test::speech_like(1.5), {}), Error);
}

// A live stream gives its working memory back between passes; each pass after that allocates
// it again and must decode exactly as a transcriber that kept it.
TEST_F(TinyTranscriber, ReleasingWorkingMemoryBetweenWindowsChangesNothing) {
  auto backend_kept = backends::make_cpu_backend(1),
       backend_released = backends::make_cpu_backend(1);
  Transcriber kept(model(), *backend_kept), released(model(), *backend_released);
  WindowOptions o;
  o.word_timestamps = true;
  o.temperatures = {0.0f};
  size_t tokens = 0;
  for (int i = 0; i < 4; ++i) {
    const std::vector<float> audio = test::speech_like(0.4 + 0.15 * i, 10 + i);
    o.time_offset = i;
    const WindowResult want = kept.decode_window(audio, o);
    const WindowResult got = released.decode_window(audio, o);
    released.release_working_memory();
    ASSERT_EQ(got.segments.size(), want.segments.size()) << "window " << i;
    EXPECT_EQ(got.consumed_samples, want.consumed_samples);
    for (size_t s = 0; s < want.segments.size(); ++s) {
      tokens += want.segments[s].tokens.size();
      EXPECT_EQ(got.segments[s].tokens, want.segments[s].tokens) << "window " << i;
      EXPECT_EQ(got.segments[s].segment.text, want.segments[s].segment.text);
      ASSERT_EQ(got.segments[s].segment.words.size(), want.segments[s].segment.words.size());
      for (size_t w = 0; w < want.segments[s].segment.words.size(); ++w) {
        EXPECT_EQ(got.segments[s].segment.words[w].start, want.segments[s].segment.words[w].start);
        EXPECT_EQ(got.segments[s].segment.words[w].probability,
                  want.segments[s].segment.words[w].probability);
      }
    }
  }
  EXPECT_GT(tokens, 0u);  // the windows decoded something to compare
}

TEST_F(TinyTranscriber, DebugHooksMatchTheStateDirectly) {
  auto backend = backends::make_cpu_backend(2);
  Transcriber tr(model(), *backend);
  const std::vector<float> audio = test::speech_like(0.7);
  const LogMel mel = tr.first_window_mel(audio);
  const WhisperConfig& c = model()->config();
  ASSERT_EQ(mel.data.size(), static_cast<size_t>(c.n_mels * c.n_frames));
  // frames past the audio (70 of 100) are the log-mel of the zero padding: the clamp floor
  EXPECT_EQ(mel.at(0, 99), mel.at(0, 90));
  EXPECT_EQ(mel.at(5, 99), mel.at(0, 99));
  const std::vector<float> logits = tr.first_step_logits(audio, "auto");
  ASSERT_EQ(logits.size(), static_cast<size_t>(c.n_vocab));

  WhisperState state(model(), *backend);
  state.encode(mel.data, mel.n_frames);
  const WhisperVocab& v = model()->vocab();
  const std::vector<int32_t> prompt = {v.sot, *v.language_token("en"), v.transcribe,
                                       v.no_timestamps};
  const std::span<const float> direct = state.decode(prompt, 0);
  for (size_t i = 0; i < logits.size(); ++i) ASSERT_EQ(logits[i], direct[i]) << i;
}

TEST_F(TinyTranscriber, LanguageProbabilitiesSumToOne) {
  auto backend = backends::make_cpu_backend(2);
  Transcriber tr(model(), *backend);
  const LanguageResult r = tr.detect_language(test::speech_like(1.0));
  ASSERT_EQ(r.probabilities.size(), 99u);
  double sum = 0;
  for (const auto& [code, p] : r.probabilities) sum += p;
  EXPECT_NEAR(sum, 1.0, 1e-5);
  EXPECT_FALSE(r.language.empty());
}

TEST_F(TinyTranscriber, SplitToWordTokensOnSpacesAndPunctuation) {
  const std::vector<int32_t> ids = model()->encode_text(" the cat, sat.");
  std::vector<int32_t> with_eot = ids;
  with_eot.push_back(model()->vocab().eot);
  std::vector<std::string> words;
  std::vector<std::vector<int32_t>> tokens;
  split_to_word_tokens(*model(), with_eot, "en", words, tokens);
  EXPECT_EQ(words, (std::vector<std::string>{" the", " cat", ",", " sat", ".", "<|endoftext|>"}));
  size_t n = 0;
  for (const auto& t : tokens) n += t.size();
  EXPECT_EQ(n, with_eot.size());
  // Languages without spaces split per character.
  split_to_word_tokens(*model(), ids, "ja", words, tokens);
  EXPECT_EQ(words.size(), ids.size());  // every token of this byte vocabulary is a character
}

TEST_F(TinyTranscriber, JfkInEveryContainerGivesTheSameTranscript) {
  OXI_REQUIRE_SHARED_DATA(data);
  const auto wav = data / "audio" / "jfk.wav";
  if (!std::filesystem::exists(wav)) GTEST_SKIP() << "jfk.wav not in the shared data";
  auto backend = backends::make_cpu_backend(2);
  Transcriber tr(model(), *backend);
  const std::vector<float> audio = media::decode_audio_file(wav);
  const Transcript t = tr.transcribe(audio, {});
  expect_well_formed(t, static_cast<double>(audio.size()) / 16000);
  EXPECT_FALSE(t.segments.empty());
  const std::string text = to_text(t);
  for (const char* other : {"jfk.mp3", "jfk.flac"}) {
    const auto path = data / "audio" / other;
    if (!std::filesystem::exists(path)) continue;
    EXPECT_EQ(to_text(tr.transcribe(media::decode_audio_file(path), {})), text) << other;
  }
}

}  // namespace
}  // namespace oxi::whisper
