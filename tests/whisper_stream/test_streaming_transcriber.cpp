// The LocalAgreement-2 policy of StreamingTranscriber on scripted and simulated hypotheses
// (agreement, never retracting, buffer trimming, the window limit, finish, prompts, cancels),
// and end to end on a tiny random Whisper model through TranscriberStreamDecoder.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "lib/whisper/streaming_transcriber.h"
#include "lib/whisper/transcriber.h"
#include "tests/common/test_data.h"
#include "tests/whisper_decode/wav_writer.h"
#include "tests/whisper_model/tiny_whisper.h"

namespace oxi::whisper {
namespace {

constexpr size_t kRate = 16000;

Word word(const std::string& text, double start, double end) {
  Word w;
  w.word = std::string(" ").append(text);
  w.start = start;
  w.end = end;
  return w;
}

std::vector<float> seconds_of_audio(double seconds) {
  return std::vector<float>(static_cast<size_t>(std::llround(seconds * kRate)), 0.0f);
}

// Returns the scripted hypotheses in turn (one segment each), and records what it was given.
class ScriptedDecoder : public StreamDecoder {
 public:
  explicit ScriptedDecoder(std::vector<StreamHypothesis> script, size_t window = 8 * kRate)
      : script_(std::move(script)), window_(window) {}
  size_t max_samples() const override { return window_; }
  StreamHypothesis decode(std::span<const float> samples, const std::string& prompt,
                          double time_offset) override {
    EXPECT_LE(samples.size(), window_);
    sizes.push_back(samples.size());
    prompts.push_back(prompt);
    offsets.push_back(time_offset);
    if (next_ >= script_.size()) return {};
    return script_[next_++];
  }
  std::vector<size_t> sizes;
  std::vector<std::string> prompts;
  std::vector<double> offsets;

 private:
  std::vector<StreamHypothesis> script_;
  size_t next_ = 0;
  size_t window_;
};

StreamHypothesis hypothesis(std::vector<Word> words) {
  StreamHypothesis h;
  if (words.empty()) return h;
  Segment s;
  s.t0 = words.front().start;
  s.t1 = words.back().end;
  for (const Word& w : words) s.text += w.word;
  s.words = std::move(words);
  h.segments.push_back(std::move(s));
  return h;
}

std::string texts(const std::vector<CommittedText>& items) {
  std::string out;
  for (const CommittedText& c : items) out += "[" + c.text + "]";
  return out;
}

TEST(StreamingPolicy, CommitsTheCommonPrefixOfTwoPasses) {
  const Word a = word("a", 0.0, 0.5), b = word("b", 0.5, 1.0), c = word("c", 1.0, 1.4);
  const Word x = word("X", 1.0, 1.5), d = word("d", 1.5, 2.0), e = word("e", 2.0, 2.5);
  Word d_again = word("d", 2.05, 2.3);  // a pass repeating the last committed word
  const Word f = word("f", 2.5, 2.9);
  ScriptedDecoder decoder({hypothesis({a, b}), hypothesis({a, b, c}), hypothesis({a, b, x, d}),
                           hypothesis({a, b, x, d, e}), hypothesis({d_again, e, f})});
  StreamingOptions o;
  o.min_chunk_seconds = 0.5;
  o.keep_words = true;
  StreamingTranscriber s(decoder, o);
  std::vector<std::string> passes;
  for (int i = 0; i < 5; ++i) {
    s.insert_audio(seconds_of_audio(0.6));
    ASSERT_TRUE(s.ready());
    passes.push_back(texts(s.process()));
  }
  EXPECT_EQ(passes, (std::vector<std::string>{"", "[ a b]", "", "[ X d]", "[ e]"}));
  ASSERT_EQ(s.tentative().size(), 1u);
  EXPECT_EQ(s.tentative()[0].word, " f");
  EXPECT_DOUBLE_EQ(s.committed_end(), 2.5);

  const std::vector<CommittedText> rest = s.finish();
  EXPECT_EQ(texts(rest), "[ f]");
  ASSERT_EQ(rest[0].words.size(), 1u);
  EXPECT_DOUBLE_EQ(rest[0].start, 2.5);
  EXPECT_DOUBLE_EQ(rest[0].end, 2.9);
  EXPECT_TRUE(s.tentative().empty());
  // Every pass decoded the whole buffer from the stream's start (no trimming at 3 s of 8).
  EXPECT_EQ(decoder.sizes, (std::vector<size_t>{9600, 19200, 28800, 38400, 48000}));
}

TEST(StreamingPolicy, ItemsCarryTimesAndWordsOnlyWhenAsked) {
  const Word a = word("a", 100.2, 100.5), b = word("b", 100.6, 101.0);
  ScriptedDecoder decoder({hypothesis({a, b}), hypothesis({a, b})});
  StreamingOptions o;
  o.min_chunk_seconds = 0.5;
  StreamingTranscriber s(decoder, o, /*start_time=*/100.0);
  s.insert_audio(seconds_of_audio(0.5));
  EXPECT_TRUE(s.process().empty());
  s.insert_audio(seconds_of_audio(0.5));
  const std::vector<CommittedText> c = s.process();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].text, " a b");
  EXPECT_DOUBLE_EQ(c[0].start, 100.2);
  EXPECT_DOUBLE_EQ(c[0].end, 101.0);
  EXPECT_TRUE(c[0].words.empty());
  EXPECT_DOUBLE_EQ(decoder.offsets[0], 100.0);  // the buffer starts at the start time
  EXPECT_DOUBLE_EQ(s.buffer_end(), 101.0);
}

// A word that was only ever seen once is not committed by a pass, and a cancelled pass changes
// nothing: the next one decodes the same audio again.
TEST(StreamingPolicy, CancelledPassIsIgnored) {
  const Word a = word("a", 0.0, 0.4);
  StreamHypothesis cancelled;
  cancelled.cancelled = true;
  ScriptedDecoder decoder({hypothesis({a}), cancelled, hypothesis({a})});
  StreamingOptions o;
  o.min_chunk_seconds = 0.5;
  StreamingTranscriber s(decoder, o);
  s.insert_audio(seconds_of_audio(0.5));
  EXPECT_TRUE(s.process().empty());
  s.insert_audio(seconds_of_audio(0.5));
  EXPECT_TRUE(s.process().empty());  // cancelled
  EXPECT_EQ(s.tentative().size(), 1u);
  EXPECT_TRUE(s.ready());
  EXPECT_EQ(texts(s.process()), "[ a]");
  EXPECT_EQ(decoder.sizes, (std::vector<size_t>{8000, 16000, 16000}));
  EXPECT_FALSE(s.ready());
  EXPECT_TRUE(s.process().empty());  // no new audio: no pass
  EXPECT_EQ(decoder.sizes.size(), 3u);
}

// Speech of numbered words every 0.4 s in sentences; a recogniser that hears the words that
// lie in the buffer, misspells (differently each pass) those ending in the buffer's last 0.5 s,
// and sees a cut-off version of a word at the buffer's end.
class SimulatedDecoder : public StreamDecoder {
 public:
  SimulatedDecoder(size_t window, int sentence_words, double total_seconds)
      : window_(window), sentence_words_(sentence_words) {
    for (int i = 0; 0.4 * i + 0.35 <= total_seconds; ++i)
      truth.push_back(word(std::string("w").append(std::to_string(i)), 0.4 * i + 0.05,
                           0.4 * i + 0.35));  // not "w" + string: a GCC 12 -Wrestrict false alarm
  }
  size_t max_samples() const override { return window_; }
  StreamHypothesis decode(std::span<const float> samples, const std::string& prompt,
                          double time_offset) override {
    EXPECT_LE(samples.size(), window_);
    largest = std::max(largest, samples.size());
    ++passes;
    const double end = time_offset + static_cast<double>(samples.size()) / kRate;
    // The prompt is the end of the text committed before the buffer.
    std::string before;
    for (const Word& w : truth)
      if (w.end <= time_offset + 1e-9) before += w.word;
    EXPECT_TRUE(before.ends_with(prompt)) << "prompt '" << prompt << "'";
    EXPECT_LE(prompt.size(), 200u);
    if (!prompt.empty()) {
      EXPECT_EQ(prompt.front(), ' ');  // cut at a word boundary
    }
    if (before.size() >= 200) {
      EXPECT_GT(prompt.size(), 190u);
    }

    StreamHypothesis h;
    int current_sentence = -1;
    for (size_t i = 0; i < truth.size(); ++i) {
      Word w = truth[i];
      if (w.start < time_offset - 1e-9 || w.start >= end) continue;
      if (w.end > end) {
        w.word += "-cut" + std::to_string(passes);
        w.end = end;
      } else if (w.end > end - 0.5) {
        w.word += "~" + std::to_string(passes);
      }
      const int sentence = static_cast<int>(i) / sentence_words_;
      if (sentence != current_sentence) {
        h.segments.emplace_back();
        h.segments.back().t0 = w.start;
        current_sentence = sentence;
      }
      h.segments.back().t1 = w.end;
      h.segments.back().text += w.word;
      h.segments.back().words.push_back(w);
    }
    return h;
  }
  std::vector<Word> truth;
  size_t largest = 0;
  int passes = 0;

 private:
  size_t window_;
  int sentence_words_;
};

struct Recorder {
  std::vector<Word> committed;
  // After finish(): every word that started before the end of the audio was committed once,
  // those that ended half a second before it as they were said.
  void expect_complete(const std::vector<Word>& truth, double audio_end) const {
    size_t started = 0, settled = 0;
    for (const Word& w : truth) {
      started += w.start < audio_end ? 1 : 0;
      settled += w.end <= audio_end - 0.5 ? 1 : 0;
    }
    EXPECT_EQ(committed.size(), started);
    expect_prefix_of(truth, started - settled);
  }
  void add(const std::vector<CommittedText>& items) {
    for (const CommittedText& c : items) {
      ASSERT_FALSE(c.words.empty());
      std::string text;
      for (const Word& w : c.words) text += w.word;
      EXPECT_EQ(c.text, text);
      EXPECT_DOUBLE_EQ(c.start, c.words.front().start);
      EXPECT_DOUBLE_EQ(c.end, c.words.back().end);
      committed.insert(committed.end(), c.words.begin(), c.words.end());
    }
  }
  // What is committed is exactly the true words from the start, in order, with their times: no
  // word changed, repeated, skipped or taken back. `unchecked_tail` words at the end may be the
  // misheard versions that finish() commits.
  void expect_prefix_of(const std::vector<Word>& truth, size_t unchecked_tail = 0) const {
    ASSERT_LE(committed.size(), truth.size());
    for (size_t i = 0; i + unchecked_tail < committed.size(); ++i) {
      ASSERT_EQ(committed[i].word, truth[i].word) << "word " << i;
      ASSERT_DOUBLE_EQ(committed[i].start, truth[i].start);
      ASSERT_DOUBLE_EQ(committed[i].end, truth[i].end);
    }
  }
};

TEST(StreamingPolicy, NeverRetractsAndCommitsEveryWordOnceOverALongStream) {
  SimulatedDecoder decoder(8 * kRate, 5, 100.0);
  StreamingOptions o;
  o.min_chunk_seconds = 0.5;
  o.keep_words = true;
  StreamingTranscriber s(decoder, o);
  Recorder r;
  std::vector<double> buffer_starts;
  double previous_final = 0.0;
  double audio_end = 0.0;
  for (int chunk = 0; chunk < 120; ++chunk) {
    // Chunks of varying size (0.1 .. 0.7 s): passes see shifting hypotheses.
    const std::vector<float> audio = seconds_of_audio(0.1 + 0.1 * (chunk % 7));
    audio_end += static_cast<double>(audio.size()) / kRate;
    s.insert_audio(audio);
    if (!s.ready()) continue;
    r.add(s.process());
    r.expect_prefix_of(decoder.truth);
    EXPECT_GE(s.final_until(), previous_final);
    previous_final = s.final_until();
    buffer_starts.push_back(s.buffer_start());
    // No misspelled (unstable) word is ever tentative for long: the tail is short.
    EXPECT_LE(s.tentative().size(), 5u);
  }
  EXPECT_GT(r.committed.size(), 100u);  // most of the stream committed before the end
  r.add(s.finish());
  r.expect_complete(decoder.truth, audio_end);
  EXPECT_LE(decoder.largest, 8 * kRate);

  // The buffer was cut only at sentence ends (whisper_streaming's segment trimming): after the
  // 5-word sentences ending at 0.4 * (5k + 4) + 0.35 s.
  size_t cuts = 0;
  for (double t : buffer_starts) {
    if (t == 0.0) continue;
    ++cuts;
    const double k = (t - 0.35 - 1.6) / 2.0;
    EXPECT_NEAR(k, std::round(k), 1e-6) << "buffer cut at " << t;
  }
  EXPECT_GT(cuts, 10u);
}

TEST(StreamingPolicy, BufferStaysWithinTheWindowWithoutSentenceEnds) {
  // One endless sentence in a 2 s window: the buffer can only be cut at committed words.
  SimulatedDecoder decoder(2 * kRate, 1 << 30, 40.0);
  StreamingOptions o;
  o.min_chunk_seconds = 0.4;
  o.keep_words = true;
  StreamingTranscriber s(decoder, o);
  Recorder r;
  for (int chunk = 0; chunk < 75; ++chunk) {
    s.insert_audio(seconds_of_audio(0.4));
    if (s.ready()) r.add(s.process());
    r.expect_prefix_of(decoder.truth);
    EXPECT_LE(s.buffered_samples(), 2 * kRate);
  }
  r.add(s.finish());
  r.expect_complete(decoder.truth, 30.0);
  EXPECT_LE(decoder.largest, 2 * kRate);
}

TEST(StreamingPolicy, ABacklogLongerThanTheWindowIsDecodedWindowByWindow) {
  SimulatedDecoder decoder(2 * kRate, 3, 20.0);
  StreamingOptions o;
  o.min_chunk_seconds = 0.5;
  o.keep_words = true;
  StreamingTranscriber s(decoder, o);
  s.insert_audio(seconds_of_audio(10.0));  // passes fell far behind
  Recorder r;
  while (s.ready()) r.add(s.process());
  r.add(s.finish());
  r.expect_complete(decoder.truth, 10.0);
  EXPECT_LE(decoder.largest, 2 * kRate);
  EXPECT_NEAR(s.buffer_start(), 10.0, 1e-9);
}

TEST(StreamingPolicy, SilenceCommitsNothingAndTheBufferMovesOn) {
  ScriptedDecoder decoder({}, 4 * kRate);  // every pass: no words
  StreamingOptions o;
  o.min_chunk_seconds = 1.0;
  StreamingTranscriber s(decoder, o);
  for (int i = 0; i < 20; ++i) {
    s.insert_audio(seconds_of_audio(1.0));
    ASSERT_TRUE(s.ready());
    EXPECT_TRUE(s.process().empty());
    EXPECT_LE(s.buffered_samples(), 4 * kRate);
  }
  // Without text, everything but a guard second before the buffer end is final.
  EXPECT_GE(s.final_until(), 20.0 - 4.0);
  EXPECT_TRUE(s.finish().empty());
  EXPECT_DOUBLE_EQ(s.buffer_start(), 20.0);
}

TEST(StreamingPolicy, PromptIsCommittedTextBeforeTheBufferAfterTheInitialPrompt) {
  const Word a = word("alpha", 0.0, 0.5), b = word("beta", 0.6, 1.0);
  const Word c = word("gamma", 1.1, 1.5);
  StreamHypothesis two = hypothesis({a, b});
  two.segments.push_back(hypothesis({c}).segments[0]);
  ScriptedDecoder decoder({two, two, hypothesis({c})}, 2 * kRate);
  StreamingOptions o;
  o.min_chunk_seconds = 0.5;
  o.trim_seconds = 1.0;
  o.initial_prompt = " Names: Zed.";
  StreamingTranscriber s(decoder, o);
  s.insert_audio(seconds_of_audio(0.8));
  EXPECT_TRUE(s.process().empty());
  s.insert_audio(seconds_of_audio(0.8));
  // Commits alpha beta gamma; the buffer (1.6 s > 1 s) is cut at the end of the first segment
  // (1.0 s), which moves alpha and beta into the prompt.
  EXPECT_EQ(texts(s.process()), "[ alpha beta gamma]");
  EXPECT_DOUBLE_EQ(s.buffer_start(), 1.0);
  s.insert_audio(seconds_of_audio(0.5));
  s.process();
  EXPECT_EQ(decoder.prompts,
            (std::vector<std::string>{"Names: Zed.", "Names: Zed.", "Names: Zed. alpha beta"}));
  EXPECT_DOUBLE_EQ(decoder.offsets[2], 1.0);
  s.reset(50.0);
  EXPECT_DOUBLE_EQ(s.buffer_start(), 50.0);
  EXPECT_DOUBLE_EQ(s.committed_end(), 50.0);
  EXPECT_TRUE(s.tentative().empty());
}

// VAD gating: finish() at the end of speech, resume_at() at the next; the silence between is
// never given to the decoder, and the text before it stays the prompt.
TEST(StreamingPolicy, ResumeAtSkipsAheadKeepingThePrompt) {
  const Word a = word("alpha", 0.0, 0.5), b = word("beta", 0.5, 0.9);
  const Word c = word("gamma", 10.1, 10.4);
  ScriptedDecoder decoder({hypothesis({a, b}), hypothesis({c})});
  StreamingOptions o;
  o.min_chunk_seconds = 0.5;
  StreamingTranscriber s(decoder, o);
  s.insert_audio(seconds_of_audio(1.0));
  EXPECT_TRUE(s.process().empty());
  EXPECT_EQ(texts(s.finish()), "[ alpha beta]");
  s.resume_at(10.0);
  EXPECT_DOUBLE_EQ(s.buffer_start(), 10.0);
  EXPECT_DOUBLE_EQ(s.final_until(), 10.0);
  s.insert_audio(seconds_of_audio(0.6));
  ASSERT_TRUE(s.ready());
  s.process();
  ASSERT_EQ(decoder.sizes.size(), 2u);
  EXPECT_EQ(decoder.sizes[1], static_cast<size_t>(0.6 * kRate));  // none of the skipped audio
  EXPECT_DOUBLE_EQ(decoder.offsets[1], 10.0);
  EXPECT_EQ(decoder.prompts[1], " alpha beta");  // the committed words, as decoded
  EXPECT_EQ(texts(s.finish()), "[ gamma]");
  // Skipping over audio that was never decoded would lose it: refused.
  s.insert_audio(seconds_of_audio(0.2));
  EXPECT_ANY_THROW(s.resume_at(20.0));
}

// Behind the latency budget: a pass commits what ends a guard interval (1 s here) before the
// decoded audio's end without waiting for a second pass, and cuts the buffer after it.
TEST(StreamingPolicy, CatchUpCommitsWithoutASecondPassAndShortensTheBuffer) {
  const Word a = word("a", 0.0, 0.5), b = word("b", 0.5, 1.0), c = word("c", 2.5, 2.9);
  for (const bool catch_up : {false, true}) {
    SCOPED_TRACE(catch_up);
    ScriptedDecoder decoder({hypothesis({a, b, c})});
    StreamingOptions o;
    o.min_chunk_seconds = 0.5;
    StreamingTranscriber s(decoder, o);
    s.set_catch_up(catch_up);
    s.insert_audio(seconds_of_audio(3.0));
    EXPECT_EQ(s.pending_samples(), 3 * kRate);
    const std::string committed = texts(s.process());
    EXPECT_EQ(s.pending_samples(), 0u);
    if (catch_up) {
      EXPECT_EQ(committed, "[ a b]");
      EXPECT_DOUBLE_EQ(s.buffer_start(), 1.0);
      ASSERT_EQ(s.tentative().size(), 1u);
      EXPECT_EQ(s.tentative()[0].word, " c");
    } else {
      EXPECT_EQ(committed, "");
      EXPECT_DOUBLE_EQ(s.buffer_start(), 0.0);
      EXPECT_EQ(s.tentative().size(), 3u);
    }
  }
}

// Catch-up mode by the backlog before a pass: on beyond the budget; off only a step below it,
// since a pass always starts with at least a step waiting (a 0.6 s backlog at a 0.5 s step
// is keeping up with real time; the old rule, "down to a step", never saw it).
TEST(StreamingPolicy, CatchUpEndsOnceTheBacklogIsAStepBelowTheBudget) {
  ScriptedDecoder decoder({});
  StreamingOptions o;
  o.min_chunk_seconds = 0.5;
  StreamingTranscriber s(decoder, o);
  EXPECT_FALSE(s.update_catch_up(1.5, 1.5));  // at the budget: not behind
  EXPECT_TRUE(s.update_catch_up(2.7, 1.5));   // behind: on
  EXPECT_TRUE(s.catch_up());
  EXPECT_FALSE(s.update_catch_up(1.2, 1.5));  // within the budget, not a step below: stays on
  EXPECT_TRUE(s.catch_up());
  EXPECT_TRUE(s.update_catch_up(0.6, 1.5));  // keeping up: off
  EXPECT_FALSE(s.catch_up());
  EXPECT_FALSE(s.update_catch_up(1.2, 1.5));  // off stays off within the budget
  // A budget under two steps: off once down to a step.
  EXPECT_TRUE(s.update_catch_up(0.9, 0.8));
  EXPECT_FALSE(s.update_catch_up(0.6, 0.8));
  EXPECT_TRUE(s.update_catch_up(0.5, 0.8));
  EXPECT_FALSE(s.catch_up());
}

// A decoder whose words stay unstable (a different spelling every pass) until they are 3 s
// old: LocalAgreement-2 alone waits those 3 s; with a latency budget every word is committed
// within it (measured as the decoded end at the committing pass minus the word's end, plus
// one step for that pass to be pushed).
class UnstableDecoder : public StreamDecoder {
 public:
  size_t max_samples() const override { return 8 * kRate; }
  StreamHypothesis decode(std::span<const float> samples, const std::string&,
                          double time_offset) override {
    ++passes;
    end = time_offset + static_cast<double>(samples.size()) / kRate;
    std::vector<Word> words;
    for (int i = 0; 0.5 * i + 0.4 <= end; ++i) {
      Word w = word(std::string("w").append(std::to_string(i)), 0.5 * i, 0.5 * i + 0.4);
      if (w.start < time_offset - 1e-9) continue;
      if (end - w.end < 3.0) w.word.append("~").append(std::to_string(passes));
      words.push_back(w);
    }
    return hypothesis(words);
  }
  int passes = 0;
  double end = 0.0;
};

// 20 s of UnstableDecoder in 0.5 s steps under a latency budget; each word's delay is taken as
// (decoded audio end - word end) + `overhead`, the time its pass's text takes to come out.
// `told`: the overhead the stream is told (set_pass_overhead), < 0 for none. Returns the worst
// delay and the words committed.
std::pair<double, size_t> worst_delay(double budget, double overhead, double told) {
  UnstableDecoder decoder;
  StreamingOptions o;
  o.min_chunk_seconds = 0.5;
  o.max_delay_seconds = budget;
  o.keep_words = true;
  StreamingTranscriber s(decoder, o);
  if (told >= 0.0) s.set_pass_overhead(told);
  double worst = 0.0;
  size_t words = 0;
  for (int chunk = 0; chunk < 40; ++chunk) {
    s.insert_audio(seconds_of_audio(0.5));
    for (const CommittedText& item : s.process()) {
      for (const Word& w : item.words) worst = std::max(worst, decoder.end - w.end + overhead);
      words += item.words.size();
    }
  }
  return {worst, words};
}

TEST(StreamingPolicy, LatencyBudgetCommitsWordsThePassesDoNotAgreeOn) {
  const auto [budgeted, words] = worst_delay(1.5, 0.5, -1.0);
  EXPECT_GT(words, 20u);
  EXPECT_LE(budgeted, 1.5 + 1e-9);
  const auto [unbudgeted, words_too] = worst_delay(0.0, 0.5, -1.0);
  EXPECT_GT(words_too, 20u);
  EXPECT_GT(unbudgeted, 3.0);  // agreement alone waits until the words settle
}

// When the caller reports that a pass's text comes out later than one step after its audio (a
// slow machine, a VAD holding audio), the budget's rule leaves that much more room.
TEST(StreamingPolicy, LatencyBudgetCountsTheMeasuredPassOverhead) {
  constexpr double kOverhead = 1.0, kBudget = 2.0;
  EXPECT_LE(worst_delay(kBudget, kOverhead, kOverhead).first, kBudget + 1e-9);
  // Not told, the stream assumes one step (0.5 s) and is late by the difference.
  EXPECT_GT(worst_delay(kBudget, kOverhead, -1.0).first, kBudget);
}

TEST(StreamingPolicy, StepForLatency) {
  EXPECT_DOUBLE_EQ(StreamingOptions::step_for_latency(3.0, 30.0), 1.0);
  EXPECT_DOUBLE_EQ(StreamingOptions::step_for_latency(0.0, 30.0), 0.1);
  EXPECT_DOUBLE_EQ(StreamingOptions::step_for_latency(60.0, 8.0), 4.0);
}

TEST(StreamingPolicy, SpreadWordsSplitsAtSpacesAndSharesTheSpan) {
  Segment s;
  s.t0 = 1.0;
  s.t1 = 2.0;
  s.text = " ab cd.  ";
  const std::vector<Word> w = spread_words(s);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].word, " ab");
  EXPECT_EQ(w[1].word, " cd.  ");
  EXPECT_DOUBLE_EQ(w[0].start, 1.0);
  EXPECT_DOUBLE_EQ(w[0].end, 1.0 + 3.0 / 9.0);
  EXPECT_DOUBLE_EQ(w[1].start, w[0].end);
  EXPECT_DOUBLE_EQ(w[1].end, 2.0);
  s.text = "   ";
  EXPECT_TRUE(spread_words(s).empty());
}

// End to end: the policy on a tiny random Whisper model (1 s window). The text is gibberish;
// what is checked is the stream's shape: decode_window never sees more than a window (it would
// throw), commits move forward in time, and finish() leaves nothing tentative.
TEST(StreamingTinyModel, RunsOverALongStream) {
  oxi::test::TempDir dir;
  test::write_hf_dir(test::make_tiny_whisper(42), dir.path() / "tiny");
  const auto model = WhisperModel::load(dir.path() / "tiny");
  auto backend = backends::make_cpu_backend(1);
  Transcriber transcriber(model, *backend);
  WindowOptions w;
  w.word_timestamps = true;
  TranscriberStreamDecoder decoder(transcriber, w);
  ASSERT_EQ(decoder.max_samples(), kRate);
  StreamingOptions o;
  o.min_chunk_seconds = 0.2;
  o.keep_words = true;
  StreamingTranscriber s(decoder, o, 5.0);
  const std::vector<float> audio = test::speech_like(6.0);
  double end = 5.0;
  size_t items = 0;
  const auto check = [&](const std::vector<CommittedText>& out) {
    for (const CommittedText& c : out) {
      ++items;
      EXPECT_GE(c.start, end - 1e-9);
      EXPECT_LE(c.start, c.end);
      EXPECT_FALSE(c.words.empty());
      EXPECT_LE(c.end, 12.0);  // within a window after the audio
      end = c.end;
    }
  };
  for (size_t at = 0; at < audio.size(); at += 1600) {
    s.insert_audio(std::span(audio).subspan(at, std::min<size_t>(1600, audio.size() - at)));
    if (s.ready()) check(s.process());
    EXPECT_LE(s.buffered_samples(), kRate);
  }
  check(s.finish());
  EXPECT_TRUE(s.tentative().empty());
  EXPECT_NEAR(s.buffer_start(), 11.0, 1e-9);
  EXPECT_GT(items, 0u);
  EXPECT_EQ(decoder.language(), "en");  // detected once, then kept
}

}  // namespace
}  // namespace oxi::whisper
