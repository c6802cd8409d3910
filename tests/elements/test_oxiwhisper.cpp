// oxiwhisper on a tiny random Whisper model (1 s window): caps, latency, the file mode's
// equality with Transcriber::transcribe (text and times), live output timing with gaps, EOS,
// flushes, discontinuities, model errors and sharing, property validation and state cycles.
#include <gst/check/gstharness.h>
#include <gst/gst.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "lib/media/audio_decoder.h"
#include "lib/whisper/transcriber.h"
#include "tests/common/test_data.h"
#include "tests/whisper_decode/wav_writer.h"
#include "tests/whisper_model/tiny_whisper.h"

namespace {

namespace fs = std::filesystem;
using oxi::whisper::Transcript;

constexpr const char* kF32Caps =
    "audio/x-raw, format=F32LE, rate=16000, channels=1, layout=interleaved";

// Text buffers and GAP events as the element pushed them, in order.
struct Item {
  bool gap = false;
  std::string text;
  GstClockTime pts = GST_CLOCK_TIME_NONE;
  GstClockTime duration = GST_CLOCK_TIME_NONE;
};

struct Recording {
  std::mutex mutex;
  std::vector<Item> items;
  bool eos = false;
  std::vector<Item> take() {
    std::lock_guard lock(mutex);
    return items;
  }
};

GstPadProbeReturn record_probe(GstPad*, GstPadProbeInfo* info, gpointer data) {
  auto* r = static_cast<Recording*>(data);
  std::lock_guard lock(r->mutex);
  if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_BUFFER) {
    GstBuffer* b = GST_PAD_PROBE_INFO_BUFFER(info);
    Item item;
    GstMapInfo map;
    gst_buffer_map(b, &map, GST_MAP_READ);
    item.text.assign(reinterpret_cast<const char*>(map.data), map.size);
    gst_buffer_unmap(b, &map);
    item.pts = GST_BUFFER_PTS(b);
    item.duration = GST_BUFFER_DURATION(b);
    r->items.push_back(item);
  } else if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) {
    GstEvent* e = GST_PAD_PROBE_INFO_EVENT(info);
    if (GST_EVENT_TYPE(e) == GST_EVENT_GAP) {
      Item item;
      item.gap = true;
      gst_event_parse_gap(e, &item.pts, &item.duration);
      r->items.push_back(item);
    } else if (GST_EVENT_TYPE(e) == GST_EVENT_EOS) {
      r->eos = true;
    }
  }
  return GST_PAD_PROBE_OK;
}

void record(GstElement* element, Recording* r) {
  GstPad* src = gst_element_get_static_pad(element, "src");
  gst_pad_add_probe(
      src,
      static_cast<GstPadProbeType>(GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM),
      record_probe, r, nullptr);
  gst_object_unref(src);
}

GstClockTime to_time(double seconds) {
  return static_cast<GstClockTime>(std::llround(seconds * GST_SECOND));
}

GstBuffer* f32_buffer(const std::vector<float>& samples, size_t from, size_t n, GstClockTime pts) {
  GstBuffer* b = gst_buffer_new_memdup(samples.data() + from, n * sizeof(float));
  GST_BUFFER_PTS(b) = pts;
  GST_BUFFER_DURATION(b) = gst_util_uint64_scale_int(n, GST_SECOND, 16000);
  return b;
}

// Pushes `samples` in buffers of `chunk` samples from stream time `start`.
void push_audio(GstHarness* h, const std::vector<float>& samples, GstClockTime start,
                size_t chunk = 1600) {
  for (size_t at = 0; at < samples.size(); at += chunk) {
    const size_t n = std::min(chunk, samples.size() - at);
    const GstClockTime pts = start + gst_util_uint64_scale_int(at, GST_SECOND, 16000);
    ASSERT_EQ(gst_harness_push(h, f32_buffer(samples, at, n, pts)), GST_FLOW_OK);
  }
}

// Waits for the element's EOS on the harness.
void wait_for_eos(GstHarness* h) {
  for (;;) {
    GstEvent* e = gst_harness_pull_event(h);  // waits up to a minute
    ASSERT_NE(e, nullptr) << "no EOS";
    const bool eos = GST_EVENT_TYPE(e) == GST_EVENT_EOS;
    gst_event_unref(e);
    if (eos) return;
  }
}

class OxiWhisper : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    gst_init(nullptr, nullptr);
    GstRegistry* registry = gst_registry_get();
    ASSERT_TRUE(gst_registry_scan_path(registry, OXI_PLUGIN_DIR) ||
                gst_registry_find_plugin(registry, "oxinfer"));
    dir_ = new oxi::test::TempDir();
    oxi::whisper::test::write_hf_dir(oxi::whisper::test::make_tiny_whisper(42),
                                     dir_->path() / "tiny");
    oxi::whisper::test::write_hf_dir(oxi::whisper::test::make_tiny_whisper(7),
                                     dir_->path() / "other");
  }
  static void TearDownTestSuite() { delete dir_; }

  static std::string model_dir(const char* name = "tiny") { return (dir_->path() / name).string(); }

  // An oxiwhisper with the tiny model and two threads; the caller unrefs it.
  static GstElement* make_element(const char* name = "tiny") {
    GstElement* e = gst_element_factory_make("oxiwhisper", nullptr);
    EXPECT_NE(e, nullptr);
    g_object_set(e, "model", model_dir(name).c_str(), "threads", 2u, nullptr);
    return e;
  }

  // A playing harness around `e` (its properties set first), recording its output.
  static GstHarness* harness(GstElement* e, Recording* r) {
    record(e, r);
    GstHarness* h = gst_harness_new_with_element(e, "sink", "src");
    gst_harness_set_src_caps_str(h, kF32Caps);
    return h;
  }

  static Transcript reference(const std::vector<float>& samples, bool word_timestamps) {
    auto backend = oxi::backends::make_cpu_backend(2);
    oxi::whisper::Transcriber t(oxi::whisper::WhisperModel::load(model_dir()), *backend);
    oxi::whisper::TranscribeOptions o;
    o.word_timestamps = word_timestamps;
    return t.transcribe(samples, o);
  }

  static oxi::test::TempDir* dir_;
};
oxi::test::TempDir* OxiWhisper::dir_ = nullptr;

// The file mode's output is the transcriber's, segment by segment (or word by word), with
// PTS = start and duration = end - start, in nanoseconds from the segment's first sample.
void expect_equal_to_transcript(const std::vector<Item>& items, const Transcript& t,
                                bool word_timestamps, GstClockTime base) {
  std::vector<Item> texts;
  for (const Item& i : items)
    if (!i.gap) texts.push_back(i);
  std::vector<Item> expected;
  for (const oxi::whisper::Segment& s : t.segments) {
    if (word_timestamps) {
      for (const oxi::whisper::Word& w : s.words)
        expected.push_back({false, w.word, base + to_time(w.start),
                            to_time(std::max(w.start, w.end)) - to_time(w.start)});
    } else {
      expected.push_back(
          {false, s.text, base + to_time(s.t0), to_time(std::max(s.t0, s.t1)) - to_time(s.t0)});
    }
  }
  ASSERT_FALSE(expected.empty()) << "the reference transcript is empty: nothing is compared";
  ASSERT_EQ(texts.size(), expected.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(texts[i].text, expected[i].text) << "item " << i;
    EXPECT_EQ(texts[i].pts, expected[i].pts) << "item " << i;
    EXPECT_EQ(texts[i].duration, expected[i].duration) << "item " << i;
  }
}

// Text and gaps tile the stream: each starts where the previous one ended, from `start` to
// `end`, and the live element never pushes text out of order.
void expect_tiled(const std::vector<Item>& items, GstClockTime start, GstClockTime end) {
  ASSERT_FALSE(items.empty());
  GstClockTime at = start;
  for (size_t i = 0; i < items.size(); ++i) {
    ASSERT_TRUE(GST_CLOCK_TIME_IS_VALID(items[i].pts)) << "item " << i;
    ASSERT_TRUE(GST_CLOCK_TIME_IS_VALID(items[i].duration)) << "item " << i;
    EXPECT_EQ(items[i].pts, at) << "item " << i << (items[i].gap ? " (gap)" : " (text)");
    at = items[i].pts + items[i].duration;
  }
  EXPECT_GE(at, end);
}

size_t text_count(const std::vector<Item>& items) {
  return static_cast<size_t>(
      std::count_if(items.begin(), items.end(), [](const Item& i) { return !i.gap; }));
}

TEST_F(OxiWhisper, AcceptsOnly16kHzMono) {
  GstElement* e = gst_element_factory_make("oxiwhisper", nullptr);
  ASSERT_NE(e, nullptr);
  GstPad* sink = gst_element_get_static_pad(e, "sink");
  const auto accepts = [&](const char* caps_str) {
    GstCaps* caps = gst_caps_from_string(caps_str);
    const bool ok = gst_pad_query_accept_caps(sink, caps);
    gst_caps_unref(caps);
    return ok;
  };
  EXPECT_TRUE(accepts(kF32Caps));
  EXPECT_TRUE(accepts("audio/x-raw, format=S16LE, rate=16000, channels=1, layout=interleaved"));
  EXPECT_FALSE(accepts("audio/x-raw, format=F32LE, rate=44100, channels=1, layout=interleaved"));
  EXPECT_FALSE(accepts("audio/x-raw, format=S16LE, rate=16000, channels=2, layout=interleaved"));
  EXPECT_FALSE(accepts("audio/x-raw, format=S32LE, rate=16000, channels=1, layout=interleaved"));
  gst_object_unref(sink);
  gst_object_unref(e);

  // Through a harness: the refused caps fail negotiation, the text caps go downstream.
  GstElement* w = make_element();
  Recording r;
  GstHarness* h = harness(w, &r);
  gst_object_unref(w);
  // The worker announces the text caps in stream order: they have passed once EOS has.
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  wait_for_eos(h);
  GstCaps* out = gst_pad_get_current_caps(h->sinkpad);
  ASSERT_NE(out, nullptr);
  GstCaps* text = gst_caps_from_string("text/x-raw, format=(string)utf8");
  EXPECT_TRUE(gst_caps_is_equal(out, text));
  gst_caps_unref(text);
  gst_caps_unref(out);
  gst_harness_teardown(h);

  w = make_element();
  h = gst_harness_new_with_element(w, "sink", "src");
  gst_object_unref(w);
  gst_harness_set_src_caps_str(h,
                               "audio/x-raw, format=F32LE, rate=44100, channels=1, "
                               "layout=interleaved");
  const std::vector<float> samples(4410, 0.0f);
  EXPECT_EQ(gst_harness_push(h, f32_buffer(samples, 0, samples.size(), 0)),
            GST_FLOW_NOT_NEGOTIATED);
  gst_harness_teardown(h);
}

TEST_F(OxiWhisper, AnswersLatencyInPaused) {
  GstElement* e = make_element();
  g_object_set(e, "latency", 1500u, nullptr);
  ASSERT_EQ(gst_element_set_state(e, GST_STATE_PAUSED), GST_STATE_CHANGE_SUCCESS);
  GstPad* src = gst_element_get_static_pad(e, "src");
  GstQuery* q = gst_query_new_latency();
  ASSERT_TRUE(gst_pad_query(src, q));  // no audio yet, no upstream
  gboolean live = FALSE;
  GstClockTime min = 0, max = 0;
  gst_query_parse_latency(q, &live, &min, &max);
  EXPECT_TRUE(live);
  EXPECT_EQ(min, 1500 * GST_MSECOND);
  EXPECT_EQ(max, GST_CLOCK_TIME_NONE);
  gst_query_unref(q);
  gst_object_unref(src);
  gst_element_set_state(e, GST_STATE_NULL);
  gst_object_unref(e);

  // Upstream's latency comes first.
  e = make_element();
  g_object_set(e, "latency", 900u, nullptr);
  GstHarness* h = gst_harness_new_with_element(e, "sink", "src");
  gst_object_unref(e);
  gst_harness_set_upstream_latency(h, 40 * GST_MSECOND);
  EXPECT_EQ(gst_harness_query_latency(h), 940 * GST_MSECOND);
  gst_harness_teardown(h);
}

// Non-live: a WAV file through filesrc ! wavparse gives exactly Transcriber::transcribe's text and
// times on the same samples (what `oxinfer transcribe --timestamps` prints).
class OxiWhisperFile : public OxiWhisper, public ::testing::WithParamInterface<bool> {};

TEST_P(OxiWhisperFile, EqualsTranscriberOnAWavFile) {
  const bool words = GetParam();
  if (!gst_registry_check_feature_version(gst_registry_get(), "wavparse", 1, 0, 0))
    GTEST_SKIP() << "wavparse (gst-plugins-good) is not installed";
  const fs::path wav = dir_->path() / (words ? "words.wav" : "speech.wav");
  oxi::whisper::test::write_wav16(wav, oxi::whisper::test::speech_like(3.3, 3));

  GError* error = nullptr;
  const std::string desc = "filesrc location=\"" + wav.string() +
                           "\" ! wavparse ! oxiwhisper name=w threads=2 model=\"" + model_dir() +
                           "\" ! fakesink sync=false";
  GstElement* pipeline = gst_parse_launch(desc.c_str(), &error);
  ASSERT_NE(pipeline, nullptr) << (error ? error->message : "");
  GstElement* w = gst_bin_get_by_name(GST_BIN(pipeline), "w");
  g_object_set(w, "word-timestamps", words, nullptr);
  Recording r;
  record(w, &r);
  gst_object_unref(w);
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* msg = gst_bus_timed_pop_filtered(
      bus, 120 * GST_SECOND, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  ASSERT_NE(msg, nullptr);
  EXPECT_EQ(GST_MESSAGE_TYPE(msg), GST_MESSAGE_EOS);
  gst_message_unref(msg);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);

  const std::vector<float> samples = oxi::media::decode_audio_file(wav);
  const std::vector<Item> items = r.take();
  expect_equal_to_transcript(items, reference(samples, words), words, 0);
  // Gaps fill the silences between texts, up to the end of the audio.
  GstClockTime end = 0;
  for (const Item& i : items) end = std::max(end, i.pts + i.duration);
  EXPECT_GE(end, to_time(3.3));
  EXPECT_TRUE(r.eos);
}

INSTANTIATE_TEST_SUITE_P(Segments, OxiWhisperFile, ::testing::Values(false));
INSTANTIATE_TEST_SUITE_P(Words, OxiWhisperFile, ::testing::Values(true));

TEST_F(OxiWhisper, LiveTextIsTimedInOrderWithGapsAndFlushedAtEos) {
  GstElement* e = make_element();
  g_object_set(e, "latency", 300u, nullptr);  // a pass every 0.1 s
  Recording r;
  GstHarness* h = harness(e, &r);  // the harness's upstream is live
  gst_object_unref(e);
  const GstClockTime start = 10 * GST_SECOND;
  push_audio(h, oxi::whisper::test::speech_like(4.0), start);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  wait_for_eos(h);
  const std::vector<Item> items = r.take();
  EXPECT_GT(text_count(items), 0u);
  // Every span is covered once, text or gap, to the end of the audio at least.
  expect_tiled(items, start, start + 4 * GST_SECOND);
  for (const Item& i : items)
    if (!i.gap) {
      EXPECT_FALSE(i.text.empty());
    }
  EXPECT_EQ(gst_harness_buffers_received(h), text_count(items));
  gst_harness_teardown(h);
}

TEST_F(OxiWhisper, LiveWordTimestampsGiveOneWordPerBuffer) {
  GstElement* e = make_element();
  g_object_set(e, "latency", 300u, "word-timestamps", TRUE, nullptr);
  Recording r;
  GstHarness* h = harness(e, &r);
  gst_object_unref(e);
  push_audio(h, oxi::whisper::test::speech_like(3.0, 2), 0);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  wait_for_eos(h);
  const std::vector<Item> items = r.take();
  EXPECT_GT(text_count(items), 0u);
  expect_tiled(items, 0, 3 * GST_SECOND);
  for (const Item& i : items)
    if (!i.gap) {
      EXPECT_EQ(i.text.find(' ', 1), std::string::npos) << "'" << i.text << "'";
    }
  gst_harness_teardown(h);
}

// A flush forgets the audio before it: the file-mode result is that of the audio after it.
TEST_F(OxiWhisper, FlushForgetsEarlierAudio) {
  GstElement* e = make_element();
  g_object_set(e, "mode", 2 /* file */, nullptr);
  Recording r;
  GstHarness* h = harness(e, &r);
  gst_object_unref(e);
  push_audio(h, oxi::whisper::test::speech_like(2.0, 1), 0);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_flush_start()));
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_flush_stop(TRUE)));
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_segment(&segment)));
  const std::vector<float> after = oxi::whisper::test::speech_like(2.5, 4);
  push_audio(h, after, 0);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  wait_for_eos(h);
  expect_equal_to_transcript(r.take(), reference(after, false), false, 0);
  gst_harness_teardown(h);
}

// Live: a flush while passes run stops them; text after it belongs to the new audio only.
TEST_F(OxiWhisper, LiveFlushResetsTheStream) {
  GstElement* e = make_element();
  g_object_set(e, "latency", 300u, nullptr);
  Recording r;
  GstHarness* h = harness(e, &r);
  gst_object_unref(e);
  push_audio(h, oxi::whisper::test::speech_like(3.0, 1), 0);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_flush_start()));
  const size_t before = r.take().size();
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_flush_stop(TRUE)));
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_segment(&segment)));
  const GstClockTime start = 100 * GST_SECOND;
  push_audio(h, oxi::whisper::test::speech_like(2.0, 5), start);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  wait_for_eos(h);
  std::vector<Item> items = r.take();
  items.erase(items.begin(), items.begin() + static_cast<ptrdiff_t>(before));
  expect_tiled(items, start, start + 2 * GST_SECOND);
  gst_harness_teardown(h);
}

// A timestamp jump ends the run: its text is committed, the hole is a gap, and nothing said
// before the jump is placed after it.
TEST_F(OxiWhisper, TimestampGapIsADiscontinuity) {
  GstElement* e = make_element();
  g_object_set(e, "latency", 300u, nullptr);
  Recording r;
  GstHarness* h = harness(e, &r);
  gst_object_unref(e);
  push_audio(h, oxi::whisper::test::speech_like(1.0, 1), 0);
  push_audio(h, oxi::whisper::test::speech_like(1.5, 2), 5 * GST_SECOND);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  wait_for_eos(h);
  const std::vector<Item> items = r.take();
  expect_tiled(items, 0, 6500 * GST_MSECOND);
  // Text of the first second ends within a window after it; the hole is a gap.
  for (const Item& i : items)
    if (!i.gap) {
      EXPECT_FALSE(i.pts >= 2 * GST_SECOND && i.pts < 5 * GST_SECOND) << i.pts;
    }
  gst_harness_teardown(h);
}

TEST_F(OxiWhisper, BadModelPathFailsTheStateChangeWithAnError) {
  const std::string bad = (dir_->path() / "no-such-model").string();
  GstElement* pipeline = gst_pipeline_new(nullptr);
  GstElement* w = gst_element_factory_make("oxiwhisper", nullptr);
  g_object_set(w, "model", bad.c_str(), nullptr);
  gst_bin_add(GST_BIN(pipeline), w);
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* msg = gst_bus_timed_pop_filtered(bus, 0, GST_MESSAGE_ERROR);
  ASSERT_NE(msg, nullptr);
  GError* error = nullptr;
  gchar* debug = nullptr;
  gst_message_parse_error(msg, &error, &debug);
  EXPECT_TRUE(g_error_matches(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND));
  EXPECT_NE(std::string(error->message).find(bad), std::string::npos) << error->message;
  EXPECT_NE(std::string(debug ? debug : "").find("no-such-model"), std::string::npos) << debug;
  g_error_free(error);
  g_free(debug);
  gst_message_unref(msg);
  gst_object_unref(bus);

  // No model at all: the same, and the element recovers once one is set.
  g_object_set(w, "model", nullptr, nullptr);
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  g_object_set(w, "model", model_dir().c_str(), nullptr);
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_PAUSED), GST_STATE_CHANGE_SUCCESS);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
}

TEST_F(OxiWhisper, PropertiesAreValidated) {
  GstElement* e = gst_element_factory_make("oxiwhisper", nullptr);
  gchar* s = nullptr;
  g_object_get(e, "language-code", &s, nullptr);
  EXPECT_STREQ(s, "auto");
  g_free(s);
  g_object_set(e, "language-code", "en-US", nullptr);
  g_object_get(e, "language", &s, nullptr);  // the alias reads the same value
  EXPECT_STREQ(s, "en-US");
  g_free(s);
  g_object_set(e, "language", "xx-YY", nullptr);  // not a Whisper language: refused
  g_object_set(e, "language-code", "", nullptr);
  g_object_get(e, "language-code", &s, nullptr);
  EXPECT_STREQ(s, "en-US");
  g_free(s);
  g_object_set(e, "language", "yue-HK", nullptr);
  g_object_get(e, "language-code", &s, nullptr);
  EXPECT_STREQ(s, "yue-HK");
  g_free(s);

  guint latency = 0;
  g_object_set(e, "latency", 50u, nullptr);  // below the minimum: GLib refuses it
  g_object_get(e, "latency", &latency, nullptr);
  EXPECT_EQ(latency, 3000u);
  g_object_set(e, "latency", 1200u, nullptr);
  g_object_get(e, "latency", &latency, nullptr);
  EXPECT_EQ(latency, 1200u);
  gint quant = -1;
  g_object_set(e, "quant", 9, nullptr);  // not a value of the enum
  g_object_get(e, "quant", &quant, nullptr);
  EXPECT_EQ(quant, 0);
  g_object_set(e, "quant", 1, nullptr);
  g_object_get(e, "quant", &quant, nullptr);
  EXPECT_EQ(quant, 1);
  gst_object_unref(e);

  // An English-only model (the tiny one, by its vocabulary's layout) ignores the language, as
  // `oxinfer transcribe` does.
  GstElement* w = make_element();
  g_object_set(w, "language-code", "de", nullptr);
  EXPECT_EQ(gst_element_set_state(w, GST_STATE_PAUSED), GST_STATE_CHANGE_SUCCESS);
  gst_element_set_state(w, GST_STATE_NULL);
  gst_object_unref(w);
}

TEST_F(OxiWhisper, ElementsWithTheSameModelShareOneLoadedCopy) {
  const auto loaded = [](GstElement* e) {
    guint n = 0;
    g_object_get(e, "loaded-models", &n, nullptr);
    return n;
  };
  GstElement* a = make_element();
  GstElement* b = make_element();
  GstElement* c = make_element();
  g_object_set(c, "quant", 1 /* q8: another loaded copy */, nullptr);
  ASSERT_EQ(loaded(a), 0u);
  ASSERT_EQ(gst_element_set_state(a, GST_STATE_PAUSED), GST_STATE_CHANGE_SUCCESS);
  EXPECT_EQ(loaded(a), 1u);
  ASSERT_EQ(gst_element_set_state(b, GST_STATE_PAUSED), GST_STATE_CHANGE_SUCCESS);
  EXPECT_EQ(loaded(b), 1u);
  ASSERT_EQ(gst_element_set_state(c, GST_STATE_PAUSED), GST_STATE_CHANGE_SUCCESS);
  EXPECT_EQ(loaded(c), 2u);

  // An explicit sharing group: the second member uses the first one's model, whatever its own
  // model property says.
  GstElement* d = make_element("other");
  GstElement* f = gst_element_factory_make("oxiwhisper", nullptr);
  g_object_set(d, "model-instance-id", "group", nullptr);
  g_object_set(f, "model-instance-id", "group", "model", "/nowhere/at-all", nullptr);
  ASSERT_EQ(gst_element_set_state(d, GST_STATE_PAUSED), GST_STATE_CHANGE_SUCCESS);
  EXPECT_EQ(loaded(d), 3u);
  ASSERT_EQ(gst_element_set_state(f, GST_STATE_PAUSED), GST_STATE_CHANGE_SUCCESS);
  EXPECT_EQ(loaded(f), 3u);

  // The cache holds models weakly: freed when the last element lets go.
  for (GstElement* e : {a, c, d}) gst_element_set_state(e, GST_STATE_NULL);
  EXPECT_EQ(loaded(b), 2u);  // b's model, and the group's through f
  for (GstElement* e : {b, f}) gst_element_set_state(e, GST_STATE_NULL);
  EXPECT_EQ(loaded(b), 0u);
  for (GstElement* e : {a, b, c, d, f}) gst_object_unref(e);
}

TEST_F(OxiWhisper, SurvivesManyStateCycles) {
  GstElement* e = make_element();
  for (int i = 0; i < 200; ++i) {
    ASSERT_NE(gst_element_set_state(e, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE) << i;
    ASSERT_NE(gst_element_set_state(e, GST_STATE_NULL), GST_STATE_CHANGE_FAILURE) << i;
  }
  guint n = 1;
  g_object_get(e, "loaded-models", &n, nullptr);
  EXPECT_EQ(n, 0u);
  gst_object_unref(e);

  // With audio in flight: the worker is stopped mid-pass.
  for (int i = 0; i < 5; ++i) {
    GstElement* w = make_element();
    g_object_set(w, "latency", 300u, nullptr);
    Recording r;
    GstHarness* h = harness(w, &r);
    gst_object_unref(w);
    push_audio(h, oxi::whisper::test::speech_like(1.5, i), 0);
    gst_harness_teardown(h);
  }
}

}  // namespace
