// oxisubenc through GstHarness: caps, one cue per buffer as it arrives, stream times,
// wrapping, word buffers merged into cues and held at most 0.9 s (test clock), refusal of
// untimed text, state cycles; and a live appsrc ! oxisubenc ! filesink pipeline whose file gets
// each cue before EOS.
#include <gst/check/gstharness.h>
#include <gst/check/gsttestclock.h>
#include <gst/gst.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/elements/element_test_util.h"

namespace {

class OxiSubenc : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(oxi::test::load_oxinfer_plugin()); }
};

using oxi::test::text_buffer;

std::string take_text(GstHarness* h) {
  GstBuffer* out = gst_harness_pull(h);
  if (!out) return "<none>";
  std::string s = oxi::test::buffer_text(out);
  gst_buffer_unref(out);
  return s;
}

TEST_F(OxiSubenc, WritesOneSrtCuePerBufferImmediately) {
  GstHarness* h = gst_harness_new("oxisubenc");
  gst_harness_set_src_caps_str(h, "text/x-raw, format=(string)utf8");
  ASSERT_EQ(
      gst_harness_push(h, text_buffer(" Hello there.", 1230 * GST_MSECOND, 2000 * GST_MSECOND)),
      GST_FLOW_OK);
  EXPECT_EQ(take_text(h), "1\n00:00:01,230 --> 00:00:03,230\nHello there.\n\n");
  ASSERT_EQ(gst_harness_push(h, text_buffer("Second", 3600 * GST_SECOND, GST_SECOND)), GST_FLOW_OK);
  EXPECT_EQ(take_text(h), "2\n01:00:00,000 --> 01:00:01,000\nSecond\n\n");
  GstCaps* caps = gst_pad_get_current_caps(h->sinkpad);
  ASSERT_NE(caps, nullptr);
  EXPECT_STREQ(gst_structure_get_name(gst_caps_get_structure(caps, 0)), "application/x-subtitle");
  gst_caps_unref(caps);
  gst_harness_teardown(h);
}

TEST_F(OxiSubenc, WebVttHeaderThenWrappedCues) {
  GstHarness* h = gst_harness_new("oxisubenc");
  GstElement* e = gst_harness_find_element(h, "oxisubenc");
  g_object_set(e, "format", 1 /* vtt */, "max-line-length", 10u, "max-lines", 2u, nullptr);
  gst_object_unref(e);
  gst_harness_set_src_caps_str(h, "text/x-raw, format=(string)utf8");
  ASSERT_EQ(gst_harness_push(h, text_buffer("aaaa bbbb cccc dddd", 0, 4 * GST_SECOND)),
            GST_FLOW_OK);
  EXPECT_EQ(take_text(h), "WEBVTT\n\n");
  // 19 characters over 4 s, wrapped at 10: "aaaa bbbb" / "cccc dddd" in one two-line cue.
  EXPECT_EQ(take_text(h), "00:00:00.000 --> 00:00:04.000\naaaa bbbb\ncccc dddd\n\n");
  gst_harness_teardown(h);
}

// Every event the harness's sink received so far is not EOS.
bool saw_eos(GstHarness* h) {
  bool eos = false;
  while (GstEvent* e = gst_harness_try_pull_event(h)) {
    eos |= GST_EVENT_TYPE(e) == GST_EVENT_EOS;
    gst_event_unref(e);
  }
  return eos;
}

GstHarness* merging_harness(const char* format = "srt") {
  GstHarness* h =
      gst_harness_new_parse((std::string("oxisubenc merge=true format=") + format).c_str());
  gst_harness_set_src_caps_str(h, "text/x-raw, format=(string)utf8");
  return h;
}

TEST_F(OxiSubenc, WordBuffersMergeIntoCues) {
  GstHarness* h = merging_harness();
  // A sentence end completes the cue at once.
  ASSERT_EQ(gst_harness_push(h, text_buffer(" The", 0, 200 * GST_MSECOND)), GST_FLOW_OK);
  ASSERT_EQ(gst_harness_push(h, text_buffer(" quick", 200 * GST_MSECOND, 300 * GST_MSECOND)),
            GST_FLOW_OK);
  EXPECT_EQ(gst_harness_buffers_in_queue(h), 0u);  // held: more words may join
  ASSERT_EQ(gst_harness_push(h, text_buffer(" fox.", 500 * GST_MSECOND, 400 * GST_MSECOND)),
            GST_FLOW_OK);
  EXPECT_EQ(take_text(h), "1\n00:00:00,000 --> 00:00:00,900\nThe quick fox.\n\n");
  // A pause longer than max-pause (500 ms) completes the held cue when the next word comes.
  ASSERT_EQ(gst_harness_push(h, text_buffer(" Jumps", 2 * GST_SECOND, 300 * GST_MSECOND)),
            GST_FLOW_OK);
  ASSERT_EQ(gst_harness_push(h, text_buffer(" over", 3 * GST_SECOND, 200 * GST_MSECOND)),
            GST_FLOW_OK);
  GstBuffer* jumps = gst_harness_pull(h);
  ASSERT_NE(jumps, nullptr);
  EXPECT_EQ(GST_BUFFER_PTS(jumps), 2 * GST_SECOND);
  EXPECT_EQ(GST_BUFFER_DURATION(jumps), 300 * GST_MSECOND);
  // The harness is a live upstream: the sink is asked to write the cue out at once.
  EXPECT_TRUE(GST_BUFFER_FLAG_IS_SET(jumps, GST_BUFFER_FLAG_SYNC_AFTER));
  gst_buffer_unref(jumps);
  // A GAP event showing enough silence after the held cue completes it; EOS comes after it.
  ASSERT_EQ(gst_harness_push(h, text_buffer(" the", 3200 * GST_MSECOND, 100 * GST_MSECOND)),
            GST_FLOW_OK);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_gap(3300 * GST_MSECOND, 300 * GST_MSECOND)));
  EXPECT_EQ(gst_harness_buffers_in_queue(h), 0u);  // 300 ms of silence: not yet
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_gap(3600 * GST_MSECOND, GST_SECOND)));
  EXPECT_EQ(take_text(h), "3\n00:00:03,000 --> 00:00:03,300\nover the\n\n");
  ASSERT_EQ(gst_harness_push(h, text_buffer(" dog", 5 * GST_SECOND, 300 * GST_MSECOND)),
            GST_FLOW_OK);
  EXPECT_FALSE(saw_eos(h));
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  EXPECT_EQ(take_text(h), "4\n00:00:05,000 --> 00:00:05,300\ndog\n\n");
  EXPECT_TRUE(saw_eos(h));
  gst_harness_teardown(h);
}

// Live: a held cue goes out at the latest 0.9 s (pipeline clock, here the harness's test
// clock) after its last word arrived, long before EOS, even if nothing else comes.
TEST_F(OxiSubenc, HeldCueIsPushedWithinOneSecondOfItsLastWord) {
  GstHarness* h = merging_harness("vtt");
  GstTestClock* clock = gst_harness_get_testclock(h);
  gst_test_clock_set_time(clock, 10 * GST_SECOND);
  ASSERT_EQ(gst_harness_push(h, text_buffer(" Hello", 0, 400 * GST_MSECOND)), GST_FLOW_OK);
  EXPECT_EQ(take_text(h), "WEBVTT\n\n");
  gst_test_clock_set_time(clock, 10 * GST_SECOND + 500 * GST_MSECOND);
  ASSERT_EQ(gst_harness_push(h, text_buffer(" world", 400 * GST_MSECOND, 300 * GST_MSECOND)),
            GST_FLOW_OK);
  EXPECT_EQ(gst_harness_buffers_in_queue(h), 0u);
  // The element waits on the clock for the held cue's deadline: within a second of the last
  // word's arrival (10.5 s), and not sooner than 0.5 s after it (else nothing could join).
  ASSERT_TRUE(gst_harness_wait_for_clock_id_waits(h, 1, 10));
  const GstClockTime deadline = gst_test_clock_get_next_entry_time(clock);
  EXPECT_LE(deadline, 11 * GST_SECOND + 500 * GST_MSECOND);
  EXPECT_GE(deadline, 11 * GST_SECOND);
  ASSERT_TRUE(gst_harness_crank_single_clock_wait(h));
  GstBuffer* cue = gst_harness_pull(h);
  ASSERT_NE(cue, nullptr);
  GstMapInfo map;
  ASSERT_TRUE(gst_buffer_map(cue, &map, GST_MAP_READ));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(map.data), map.size),
            "00:00:00.000 --> 00:00:00.700\nHello world\n\n");
  gst_buffer_unmap(cue, &map);
  gst_buffer_unref(cue);
  EXPECT_FALSE(saw_eos(h));
  // Nothing is held any more: EOS adds no cue.
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  EXPECT_EQ(gst_harness_buffers_in_queue(h), 0u);
  gst_object_unref(clock);
  gst_harness_teardown(h);
}

// max-line-length=32 with the default max-lines (2), CEA-608's limit: a long caption becomes
// several cues, none over two lines of 32 characters, every word kept in order, and the cues'
// times tile the buffer's span.
TEST_F(OxiSubenc, WrapsToCea608LimitsKeepingEveryWord) {
  GstHarness* h = gst_harness_new("oxisubenc");
  GstElement* e = gst_harness_find_element(h, "oxisubenc");
  guint max_lines = 0;
  g_object_get(e, "max-lines", &max_lines, nullptr);
  EXPECT_EQ(max_lines, 2u);
  g_object_set(e, "max-line-length", 32u, nullptr);
  gst_object_unref(e);
  gst_harness_set_src_caps_str(h, "text/x-raw, format=(string)utf8");
  std::vector<std::string> words;
  std::string text;
  for (int i = 0; i < 30; ++i) {
    words.push_back(std::string(1 + i % 9, static_cast<char>('a' + i % 26)));
    text += " " + words.back();
  }
  ASSERT_EQ(gst_harness_push(h, text_buffer(text.c_str(), 2 * GST_SECOND, 12 * GST_SECOND)),
            GST_FLOW_OK);
  const std::string srt = take_text(h);  // one buffer: all cues of the caption
  std::istringstream in(srt);
  std::vector<std::string> out_words;
  std::string line;
  int cues = 0, lines_in_cue = 0;
  std::string first_start, last_end;
  enum { kIndex, kTiming, kText } expect = kIndex;
  while (std::getline(in, line)) {
    if (expect == kIndex) {
      EXPECT_EQ(line, std::to_string(++cues));
      expect = kTiming;
    } else if (expect == kTiming) {
      ASSERT_EQ(line.size(), 29u) << line;
      if (first_start.empty()) first_start = line.substr(0, 12);
      last_end = line.substr(17);
      lines_in_cue = 0;
      expect = kText;
    } else if (line.empty()) {
      EXPECT_GE(lines_in_cue, 1);
      EXPECT_LE(lines_in_cue, 2);
      expect = kIndex;
    } else {
      ++lines_in_cue;
      EXPECT_LE(line.size(), 32u) << line;
      std::istringstream ws(line);
      for (std::string w; ws >> w;) out_words.push_back(w);
    }
  }
  EXPECT_GT(cues, 1);
  EXPECT_EQ(out_words, words);
  EXPECT_EQ(first_start, "00:00:02,000");
  EXPECT_EQ(last_end, "00:00:14,000");
  gst_harness_teardown(h);
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Seconds until `file` holds `expected` (polled), or a negative number after `limit` seconds.
double seconds_until(const std::filesystem::path& file, const std::string& expected, double limit) {
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (read_file(file) == expected) return s;
    if (s > limit) return -1.0;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// A live pipeline to a filesink: each cue is in the file within a second of its text buffer,
// long before EOS (filesink would otherwise keep 64 kB in memory).
TEST_F(OxiSubenc, LiveFilesinkGetsEachCueBeforeEos) {
  char dir_template[] = "/tmp/oxisubenc-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::filesystem::path dir = dir_template;
  const std::filesystem::path file = dir / "live.srt";
  GError* error = nullptr;
  GstElement* pipeline =
      gst_parse_launch(("appsrc name=src is-live=true format=time caps=text/x-raw,format=utf8 ! "
                        "oxisubenc merge=true ! filesink location=" +
                        file.string())
                           .c_str(),
                       &error);
  ASSERT_EQ(error, nullptr) << error->message;
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  // appsrc's action signals (not libgstapp, which this test does not link) keep a reference.
  const auto push = [src](GstBuffer* buffer) {
    GstFlowReturn ret = GST_FLOW_ERROR;
    g_signal_emit_by_name(src, "push-buffer", buffer, &ret);
    gst_buffer_unref(buffer);
    return ret;
  };

  // Text comes after the speech it describes, so its times are in the past when it arrives and
  // the (synchronising) filesink renders it at once. A sentence: pushed at once.
  ASSERT_EQ(push(text_buffer(" Hi there.", 0, 100 * GST_MSECOND)), GST_FLOW_OK);
  const std::string first = "1\n00:00:00,000 --> 00:00:00,100\nHi there.\n\n";
  const double immediate = seconds_until(file, first, 5.0);
  EXPECT_GE(immediate, 0.0) << "file: '" << read_file(file) << "'";
  EXPECT_LT(immediate, 1.0);
  // A word that more words could join: held, then written at 0.9 s. The bound allows 0.25 s of
  // scheduling delay on a loaded machine; the exact deadline is checked on a test clock above.
  ASSERT_EQ(push(text_buffer(" Then", 150 * GST_MSECOND, 100 * GST_MSECOND)), GST_FLOW_OK);
  const std::string both = first + "2\n00:00:00,150 --> 00:00:00,250\nThen\n\n";
  const double held = seconds_until(file, both, 5.0);
  EXPECT_GE(held, 0.5) << "file: '" << read_file(file) << "'";
  EXPECT_LT(held, 1.25);

  GstFlowReturn eos_ret = GST_FLOW_ERROR;
  g_signal_emit_by_name(src, "end-of-stream", &eos_ret);
  ASSERT_EQ(eos_ret, GST_FLOW_OK);
  ASSERT_EQ(oxi::test::wait_for_eos_or_error(pipeline, 10 * GST_SECOND), GST_MESSAGE_EOS);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(src);
  gst_object_unref(pipeline);
  EXPECT_EQ(read_file(file), both);
  std::filesystem::remove_all(dir);
}

TEST_F(OxiSubenc, UsesStreamTimeOfTheSegment) {
  GstHarness* h = gst_harness_new("oxisubenc");
  gst_harness_set_src_caps_str(h, "text/x-raw, format=(string)utf8");
  GstSegment seg;
  gst_segment_init(&seg, GST_FORMAT_TIME);
  seg.start = 10 * GST_SECOND;  // buffers from 10 s on, media position 100 s
  seg.time = 100 * GST_SECOND;
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_segment(&seg)));
  ASSERT_EQ(gst_harness_push(h, text_buffer("x", 11 * GST_SECOND, GST_SECOND)), GST_FLOW_OK);
  EXPECT_EQ(take_text(h), "1\n00:01:41,000 --> 00:01:42,000\nx\n\n");
  gst_harness_teardown(h);
}

TEST_F(OxiSubenc, JsonLinesAndBlankText) {
  GstHarness* h = gst_harness_new("oxisubenc");
  GstElement* e = gst_harness_find_element(h, "oxisubenc");
  g_object_set(e, "format", 2 /* json */, nullptr);
  gst_object_unref(e);
  gst_harness_set_src_caps_str(h, "text/x-raw, format=(string)utf8");
  ASSERT_EQ(gst_harness_push(h, text_buffer("   ", 0, GST_SECOND)), GST_FLOW_OK);
  ASSERT_EQ(gst_harness_push(h, text_buffer(" hi", GST_SECOND / 2, GST_SECOND)), GST_FLOW_OK);
  EXPECT_EQ(gst_harness_buffers_in_queue(h), 1u);
  EXPECT_EQ(take_text(h), "{\"id\":0,\"start\":0.5,\"end\":1.5,\"text\":\" hi\"}\n");
  gst_harness_teardown(h);
}

TEST_F(OxiSubenc, RefusesUntimedTextAndWrongCaps) {
  GstHarness* h = gst_harness_new("oxisubenc");
  gst_harness_set_src_caps_str(h, "text/x-raw, format=(string)utf8");
  EXPECT_EQ(gst_harness_push(h, text_buffer("x", GST_CLOCK_TIME_NONE, GST_SECOND)), GST_FLOW_ERROR);
  gst_harness_teardown(h);

  GstElement* e = gst_element_factory_make("oxisubenc", nullptr);
  GstPad* sink = gst_element_get_static_pad(e, "sink");
  GstCaps* audio = gst_caps_from_string("audio/x-raw, format=S16LE, rate=16000, channels=1");
  EXPECT_FALSE(gst_pad_query_accept_caps(sink, audio));
  gst_caps_unref(audio);
  gst_object_unref(sink);
  gst_object_unref(e);
}

TEST_F(OxiSubenc, SurvivesManyStateCycles) {
  GstElement* e = gst_element_factory_make("oxisubenc", nullptr);
  ASSERT_NE(e, nullptr);
  for (int i = 0; i < 200; ++i) {
    ASSERT_NE(gst_element_set_state(e, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    ASSERT_NE(gst_element_set_state(e, GST_STATE_NULL), GST_STATE_CHANGE_FAILURE);
  }
  gst_object_unref(e);
}

}  // namespace
