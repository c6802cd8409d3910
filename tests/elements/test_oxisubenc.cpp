// oxisubenc through GstHarness: caps, one cue per buffer as it arrives, stream times,
// wrapping, refusal of untimed text, and state cycles.
#include <gst/check/gstharness.h>
#include <gst/gst.h>

#include <cstring>
#include <string>

#include <gtest/gtest.h>

namespace {

class OxiSubenc : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    gst_init(nullptr, nullptr);
    GstRegistry* registry = gst_registry_get();
    ASSERT_TRUE(gst_registry_scan_path(registry, OXI_PLUGIN_DIR) || gst_registry_find_plugin(registry, "oxinfer"));
  }
};

GstBuffer* text_buffer(const char* text, GstClockTime pts, GstClockTime duration) {
  GstBuffer* b = gst_buffer_new_memdup(text, std::strlen(text));
  GST_BUFFER_PTS(b) = pts;
  GST_BUFFER_DURATION(b) = duration;
  return b;
}

std::string take_text(GstHarness* h) {
  GstBuffer* out = gst_harness_pull(h);
  if (!out) return "<none>";
  GstMapInfo map;
  gst_buffer_map(out, &map, GST_MAP_READ);
  std::string s(reinterpret_cast<const char*>(map.data), map.size);
  gst_buffer_unmap(out, &map);
  gst_buffer_unref(out);
  return s;
}

TEST_F(OxiSubenc, WritesOneSrtCuePerBufferImmediately) {
  GstHarness* h = gst_harness_new("oxisubenc");
  gst_harness_set_src_caps_str(h, "text/x-raw, format=(string)utf8");
  ASSERT_EQ(gst_harness_push(h, text_buffer(" Hello there.", 1230 * GST_MSECOND, 2000 * GST_MSECOND)), GST_FLOW_OK);
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
  ASSERT_EQ(gst_harness_push(h, text_buffer("aaaa bbbb cccc dddd", 0, 4 * GST_SECOND)), GST_FLOW_OK);
  EXPECT_EQ(take_text(h), "WEBVTT\n\n");
  // 19 characters over 4 s, wrapped at 10: "aaaa bbbb" / "cccc dddd" in one two-line cue.
  EXPECT_EQ(take_text(h), "00:00:00.000 --> 00:00:04.000\naaaa bbbb\ncccc dddd\n\n");
  gst_harness_teardown(h);
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
