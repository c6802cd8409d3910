// Subtitle writers against hand-written expected output.
#include "lib/whisper/subtitles.h"

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

TEST(Subtitles, WrapCountsCodePointsAndKeepsLongWords) {
  Transcript t;
  t.segments.push_back({0.0, 2.0, " été été verylongword", {}});
  EXPECT_EQ(to_srt(t, {.max_line_chars = 7, .max_lines = 0}),
            "1\n00:00:00,000 --> 00:00:02,000\nété été\nverylongword\n\n");
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
  EXPECT_EQ(jsonl.add({0.5, 1.0, " a", {}}), R"({"id":0,"start":0.5,"end":1.0,"text":" a"})" "\n");
  EXPECT_EQ(jsonl.add({1.0, 2.0, " b", {}}), R"({"id":1,"start":1.0,"end":2.0,"text":" b"})" "\n");
}

}  // namespace
}  // namespace oxi::whisper
