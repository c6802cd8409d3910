// Subtitle writers against hand-written expected output.
#include "lib/whisper/subtitles.h"

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace oxi::whisper {
namespace {

Transcript two_segments_and_an_empty_one() {
  Transcript t;
  t.language = "en";
  t.language_probability = 0.97f;
  t.segments.push_back({1.23, 4.56, " And so my fellow Americans,", {}});
  t.segments.push_back({4.56, 5.0, "   ", {}});                // skipped everywhere
  t.segments.push_back({3725.5004, 3727.0, " ask not.", {}});  // past one hour
  return t;
}

TEST(Subtitles, TimestampRoundsToMilliseconds) {
  EXPECT_EQ(format_timestamp(0.0, ','), "00:00:00,000");
  EXPECT_EQ(format_timestamp(0.0004, ','), "00:00:00,000");
  EXPECT_EQ(format_timestamp(0.0006, ','), "00:00:00,001");
  EXPECT_EQ(format_timestamp(59.9996, '.'), "00:01:00.000");
  EXPECT_EQ(format_timestamp(3725.5, ','), "01:02:05,500");
  EXPECT_EQ(format_timestamp(360000.0, ','), "100:00:00,000");
  EXPECT_EQ(format_timestamp(-1.0, ','), "00:00:00,000");
}

TEST(Subtitles, PlainText) {
  EXPECT_EQ(to_text(two_segments_and_an_empty_one()), "And so my fellow Americans,\nask not.\n");
}

TEST(Subtitles, Srt) {
  EXPECT_EQ(to_srt(two_segments_and_an_empty_one()),
            "1\n00:00:01,230 --> 00:00:04,560\nAnd so my fellow Americans,\n\n"
            "2\n01:02:05,500 --> 01:02:07,000\nask not.\n\n");
}

TEST(Subtitles, WebVtt) {
  EXPECT_EQ(to_vtt(two_segments_and_an_empty_one()),
            "WEBVTT\n\n"
            "00:00:01.230 --> 00:00:04.560\nAnd so my fellow Americans,\n\n"
            "01:02:05.500 --> 01:02:07.000\nask not.\n\n");
}

TEST(Subtitles, ArrowInTextIsDefused) {
  Transcript t;
  t.segments.push_back({0.0, 1.0, "a --> b", {}});
  EXPECT_EQ(to_srt(t), "1\n00:00:00,000 --> 00:00:01,000\na -> b\n\n");
}

TEST(Subtitles, EmptyTranscript) {
  EXPECT_EQ(to_srt(Transcript{}), "");
  EXPECT_EQ(to_vtt(Transcript{}), "WEBVTT\n\n");
  EXPECT_EQ(to_text(Transcript{}), "");
}

TEST(Subtitles, WrapByCharacterCountSplitsCues) {
  Transcript t;
  t.segments.push_back({0.0, 10.0, " aaaa bbbb cccc dddd eeee", {}});
  // 20 letters over 10 s: each 4-letter word takes 2 s.
  EXPECT_EQ(to_srt(t, {.max_line_chars = 9, .max_lines = 2}),
            "1\n00:00:00,000 --> 00:00:08,000\naaaa bbbb\ncccc dddd\n\n"
            "2\n00:00:08,000 --> 00:00:10,000\neeee\n\n");
  // Without a line limit everything stays in one cue.
  EXPECT_EQ(to_vtt(t, {.max_line_chars = 14, .max_lines = 0}),
            "WEBVTT\n\n00:00:00.000 --> 00:00:10.000\naaaa bbbb cccc\ndddd eeee\n\n");
}

TEST(Subtitles, WrapUsesWordTimestamps) {
  Transcript t;
  t.segments.push_back(
      {0.0,
       3.0,
       " Hello world again",
       {{" Hello", 0.5, 1.0, 0.9f}, {" world", 1.0, 1.6, 0.8f}, {" again", 2.0, 2.4, 0.7f}}});
  EXPECT_EQ(to_srt(t, {.max_line_chars = 11, .max_lines = 1}),
            "1\n00:00:00,500 --> 00:00:01,600\nHello world\n\n"
            "2\n00:00:02,000 --> 00:00:02,400\nagain\n\n");
}

TEST(Subtitles, WrapCountsCodePointsAndCutsLongWords) {
  Transcript t;
  t.segments.push_back({0.0, 2.0, " été été verylongword", {}});
  // A caption decoder cannot show a line longer than the limit: the 12-letter word is cut into
  // 7 + 5 letters rather than overflowing or being dropped.
  EXPECT_EQ(to_srt(t, {.max_line_chars = 7, .max_lines = 0}),
            "1\n00:00:00,000 --> 00:00:02,000\nété été\nverylon\ngword\n\n");
  // Cut pieces are timed by their share of the word: 18 letters over 2 s put the word at
  // 0.667..2 s, so "verylon" (7 of its 12 letters) ends at 0.667 + 1.333 * 7 / 12 = 1.444 s.
  EXPECT_EQ(to_srt(t, {.max_line_chars = 7, .max_lines = 1}),
            "1\n00:00:00,000 --> 00:00:00,667\nété été\n\n"
            "2\n00:00:00,667 --> 00:00:01,444\nverylon\n\n"
            "3\n00:00:01,444 --> 00:00:02,000\ngword\n\n");
}

// CEA-608's limit (two lines of 32) on a long caption: every line fits, every cue has at most
// two lines, the words come out in order and complete, and the cues tile the segment's time.
TEST(Subtitles, Cea608WrapKeepsEveryWordWithinTheLimits) {
  std::string text;
  std::vector<std::string> words;
  for (int i = 0; i < 40; ++i) {
    words.push_back("word" + std::to_string(i * 7919 % 1000));
    text += " " + words.back();
  }
  words.push_back("supercalifragilisticexpialidocious-and-more");  // 43 characters
  text += " " + words.back();
  Transcript t;
  t.segments.push_back({10.0, 30.0, text, {}});
  SubtitleWriter writer(SubtitleFormat::vtt, {.max_line_chars = 32, .max_lines = 2});
  const std::string vtt = writer.add(t.segments[0]);
  std::vector<std::string> out_words;
  std::string joined_long;
  double previous_end = 10.0;
  size_t cues = 0;
  size_t pos = 0;
  while (pos < vtt.size()) {
    const size_t timing_end = vtt.find('\n', pos);
    const std::string timing = vtt.substr(pos, timing_end - pos);
    ASSERT_EQ(timing.size(), 29u) << timing;
    const double start = std::stoi(timing.substr(3, 2)) * 60 + std::stod(timing.substr(6, 6));
    const double end = std::stoi(timing.substr(20, 2)) * 60 + std::stod(timing.substr(23, 6));
    EXPECT_NEAR(start, previous_end, 0.0011) << timing;  // no gap, no overlap
    EXPECT_GT(end, start) << timing;
    previous_end = end;
    const size_t cue_end = vtt.find("\n\n", timing_end);
    ASSERT_NE(cue_end, std::string::npos);
    std::string body = vtt.substr(timing_end + 1, cue_end - timing_end - 1);
    size_t lines = 0;
    for (size_t a = 0; a <= body.size();) {
      size_t b = body.find('\n', a);
      if (b == std::string::npos) b = body.size();
      const std::string line = body.substr(a, b - a);
      ++lines;
      EXPECT_LE(line.size(), 32u) << line;
      for (size_t c = 0; c <= line.size();) {
        size_t d = line.find(' ', c);
        if (d == std::string::npos) d = line.size();
        const std::string w = line.substr(c, d - c);
        if (w.rfind("word", 0) == 0 && w.size() <= 7) {
          out_words.push_back(w);
        } else {
          joined_long += w;  // the cut pieces of the long word
        }
        c = d + 1;
      }
      a = b + 1;
    }
    EXPECT_LE(lines, 2u) << body;
    ++cues;
    pos = cue_end + 2;
  }
  EXPECT_NEAR(previous_end, 30.0, 0.0011);
  // 40 words of 5-7 letters need 10+ lines of 32, the cut long word 2 more.
  EXPECT_GE(cues, 6u);
  words.pop_back();
  EXPECT_EQ(out_words, words);
  EXPECT_EQ(joined_long, "supercalifragilisticexpialidocious-and-more");
}

Segment piece(double t0, double t1, const char* text) {
  return {t0, t1, text, {}};
}

std::vector<std::string> texts(const std::vector<Segment>& segments) {
  std::vector<std::string> out;
  for (const Segment& s : segments) out.push_back(s.text);
  return out;
}

TEST(CueMerger, MergesWordsUntilAPause) {
  CueMerger merger;  // 6 s, 0.5 s pause, 84 characters
  EXPECT_TRUE(merger.add(piece(1.0, 1.3, " And")).empty());
  EXPECT_TRUE(merger.add(piece(1.3, 1.5, " so")).empty());
  EXPECT_TRUE(merger.add(piece(1.6, 2.0, " my")).empty());
  EXPECT_TRUE(merger.has_pending());
  // 0.6 s of silence before "fellow": the first cue is complete.
  const std::vector<Segment> done = merger.add(piece(2.6, 3.0, " fellow"));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].text, " And so my");
  EXPECT_DOUBLE_EQ(done[0].t0, 1.0);
  EXPECT_DOUBLE_EQ(done[0].t1, 2.0);
  ASSERT_EQ(done[0].words.size(), 3u);  // one Word per piece, with the piece's times
  EXPECT_EQ(done[0].words[1].word, "so");
  EXPECT_DOUBLE_EQ(done[0].words[1].start, 1.3);
  EXPECT_DOUBLE_EQ(done[0].words[2].end, 2.0);
  // A sentence end completes the cue at once.
  const std::vector<Segment> sentence = merger.add(piece(3.0, 3.5, " Americans."));
  EXPECT_EQ(texts(sentence), std::vector<std::string>{" fellow Americans."});
  EXPECT_FALSE(merger.has_pending());
  EXPECT_FALSE(merger.flush().has_value());
}

TEST(CueMerger, DurationAndLengthLimits) {
  CueMerger merger({.max_duration = 2.0, .max_pause = 0.5, .max_chars = 12, .wrap = {}});
  EXPECT_TRUE(merger.add(piece(0.0, 0.5, " aaaa")).empty());
  EXPECT_TRUE(merger.add(piece(0.5, 1.0, " bbbb")).empty());  // " aaaa bbbb": 9 characters
  // 14 characters would not fit.
  EXPECT_EQ(texts(merger.add(piece(1.0, 1.5, " cccc"))), std::vector<std::string>{" aaaa bbbb"});
  EXPECT_TRUE(merger.add(piece(1.5, 2.0, " dd")).empty());
  // cccc starts at 1.0: up to 3.1 would be 2.1 s.
  EXPECT_EQ(texts(merger.add(piece(2.0, 3.1, " e"))), std::vector<std::string>{" cccc dd"});
  // Blank pieces are ignored; advance() completes the cue only past the pause.
  EXPECT_TRUE(merger.add(piece(3.1, 3.2, "  ")).empty());
  EXPECT_FALSE(merger.advance(3.5).has_value());
  const std::optional<Segment> tail = merger.advance(3.7);
  ASSERT_TRUE(tail.has_value());
  EXPECT_EQ(tail->text, " e");
}

TEST(CueMerger, WrappedLimitIsOneCue) {
  // Two lines of 10: "aaaa bbbb" / "cccc dddd" fit, a fifth word does not.
  CueMerger merger({.max_duration = 60.0,
                    .max_pause = 5.0,
                    .max_chars = 84,
                    .wrap = {.max_line_chars = 10, .max_lines = 2}});
  for (const char* w : {" aaaa", " bbbb", " cccc", " dddd"})
    EXPECT_TRUE(merger.add(piece(0.0, 1.0, w)).empty()) << w;
  EXPECT_EQ(texts(merger.add(piece(1.0, 2.0, " eeee"))),
            std::vector<std::string>{" aaaa bbbb cccc dddd"});
  // A multi-word piece (a live commit) is timed by characters within itself when wrapped.
  CueMerger commits;
  EXPECT_TRUE(commits.add(piece(0.0, 1.0, " ab cd")).empty());
  EXPECT_TRUE(commits.add(piece(1.0, 3.0, " efgh")).empty());
  const std::optional<Segment> cue = commits.flush();
  ASSERT_TRUE(cue.has_value());
  SubtitleWriter srt(SubtitleFormat::srt, {.max_line_chars = 5, .max_lines = 1});
  EXPECT_EQ(srt.add(*cue),
            "1\n00:00:00,000 --> 00:00:01,000\nab cd\n\n"
            "2\n00:00:01,000 --> 00:00:03,000\nefgh\n\n");
}

TEST(Subtitles, Json) {
  Transcript t = two_segments_and_an_empty_one();
  t.segments[0].words = {{" And", 1.23, 1.5, 0.9f}, {" so", 1.5, 1.7004, 0.25f}};
  EXPECT_EQ(to_json(t, -1),
            R"({"language":"en","language_probability":0.97,)"
            R"("text":"And so my fellow Americans, ask not.","segments":[)"
            R"({"id":0,"start":1.23,"end":4.56,"text":" And so my fellow Americans,","words":[)"
            R"({"word":" And","start":1.23,"end":1.5,"probability":0.9},)"
            R"({"word":" so","start":1.5,"end":1.7,"probability":0.25}]},)"
            R"({"id":1,"start":3725.5,"end":3727.0,"text":" ask not."}]})");
}

TEST(Subtitles, JsonIndented) {
  Transcript t;
  t.segments.push_back({0.0, 1.0, " Hi", {}});
  EXPECT_EQ(to_json(t),
            "{\n  \"language\": \"\",\n  \"language_probability\": 0.0,\n  \"text\": \"Hi\",\n"
            "  \"segments\": [\n    {\n      \"id\": 0,\n      \"start\": 0.0,\n"
            "      \"end\": 1.0,\n      \"text\": \" Hi\"\n    }\n  ]\n}");
}

TEST(Subtitles, StreamingWriterNumbersCuesAcrossCalls) {
  SubtitleWriter srt(SubtitleFormat::srt);
  EXPECT_EQ(srt.header(), "");
  EXPECT_EQ(srt.add({0.0, 1.5, " one", {}}), "1\n00:00:00,000 --> 00:00:01,500\none\n\n");
  EXPECT_EQ(srt.add({1.5, 1.6, "  ", {}}), "");
  EXPECT_EQ(srt.add({2.0, 3.0, " two", {}}), "2\n00:00:02,000 --> 00:00:03,000\ntwo\n\n");

  SubtitleWriter vtt(SubtitleFormat::vtt);
  EXPECT_EQ(vtt.header(), "WEBVTT\n\n");
  EXPECT_EQ(vtt.add({61.0, 62.25, " hi", {}}), "00:01:01.000 --> 00:01:02.250\nhi\n\n");

  SubtitleWriter jsonl(SubtitleFormat::json_lines);
  EXPECT_EQ(jsonl.add({0.5, 1.0, " a", {}}), R"({"id":0,"start":0.5,"end":1.0,"text":" a"})"
                                             "\n");
  EXPECT_EQ(jsonl.add({1.0, 2.0, " b", {}}), R"({"id":1,"start":1.0,"end":2.0,"text":" b"})"
                                             "\n");
}

}  // namespace
}  // namespace oxi::whisper
