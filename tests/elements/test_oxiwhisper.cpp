// oxiwhisper on a tiny random Whisper model (1 s window): caps, latency, the file mode's
// equality with Transcriber::transcribe (text and times), live output timing with gaps, EOS,
// flushes, discontinuities, model errors and sharing, property validation and state cycles;
// the live path's append-only output, tentative JSON on unsynced_src, latency statistics and
// VAD gating with the real Silero model (skipped without ../shared/data).
#include <gst/check/gstharness.h>
#include <gst/gst.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <cstdlib>

#include "backends/cpu/cpu_backend.h"
#include "lib/media/audio_decoder.h"
#include "lib/vad/silero_vad_model.h"
#include "lib/vad/vad_stream.h"
#include "lib/whisper/transcriber.h"
#include "tests/common/test_data.h"
#include "tests/elements/element_test_util.h"
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
    item.text = oxi::test::buffer_text(b);
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

class OxiWhisper : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(oxi::test::load_oxinfer_plugin());
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

  static Transcript reference(const std::vector<float>& samples, bool word_timestamps,
                              oxi::kernels::DType kv_cache = oxi::kernels::DType::F32) {
    auto backend = oxi::backends::make_cpu_backend(2);
    oxi::whisper::Transcriber t(oxi::whisper::WhisperModel::load(model_dir()), *backend);
    t.set_kv_cache(kv_cache);
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
  EXPECT_TRUE(oxi::test::wait_for_eos(h)) << "no EOS";
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
struct FileCase {
  bool words;  // word-timestamps=true
  bool f16;    // kv-cache=f16
};
class OxiWhisperFile : public OxiWhisper, public ::testing::WithParamInterface<FileCase> {};

// File mode (kv-cache=auto: f32 there, as oxinfer transcribe) equals the transcriber, and
// with kv-cache=f16 equals a transcriber with an f16 cache.
TEST_P(OxiWhisperFile, EqualsTranscriberOnAWavFile) {
  const bool words = GetParam().words, f16 = GetParam().f16;
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
  if (f16) gst_util_set_object_arg(G_OBJECT(w), "kv-cache", "f16");
  Recording r;
  record(w, &r);
  gst_object_unref(w);
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  ASSERT_EQ(oxi::test::wait_for_eos_or_error(pipeline, 120 * GST_SECOND), GST_MESSAGE_EOS);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);

  const std::vector<float> samples = oxi::media::decode_audio_file(wav);
  const std::vector<Item> items = r.take();
  expect_equal_to_transcript(
      items, reference(samples, words, f16 ? oxi::kernels::DType::F16 : oxi::kernels::DType::F32),
      words, 0);
  // Gaps fill the silences between texts, up to the end of the audio.
  GstClockTime end = 0;
  for (const Item& i : items) end = std::max(end, i.pts + i.duration);
  EXPECT_GE(end, to_time(3.3));
  EXPECT_TRUE(r.eos);
}

INSTANTIATE_TEST_SUITE_P(Segments, OxiWhisperFile, ::testing::Values(FileCase{false, false}));
INSTANTIATE_TEST_SUITE_P(Words, OxiWhisperFile, ::testing::Values(FileCase{true, false}));
INSTANTIATE_TEST_SUITE_P(F16Cache, OxiWhisperFile, ::testing::Values(FileCase{false, true}));

TEST_F(OxiWhisper, LiveTextIsTimedInOrderWithGapsAndFlushedAtEos) {
  GstElement* e = make_element();
  g_object_set(e, "latency", 300u, nullptr);  // a pass every 0.1 s
  Recording r;
  GstHarness* h = harness(e, &r);  // the harness's upstream is live
  gst_object_unref(e);
  const GstClockTime start = 10 * GST_SECOND;
  push_audio(h, oxi::whisper::test::speech_like(4.0), start);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  EXPECT_TRUE(oxi::test::wait_for_eos(h)) << "no EOS";
  const std::vector<Item> items = r.take();
  EXPECT_GT(text_count(items), 0u);
  // The run opens with an empty GAP, which prerolls downstream sinks before the first text
  // (in a pipeline that prerolls, text would otherwise wait in a sink for other branches).
  ASSERT_FALSE(items.empty());
  EXPECT_TRUE(items[0].gap);
  EXPECT_EQ(items[0].pts, start);
  EXPECT_EQ(items[0].duration, 0u);
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
  EXPECT_TRUE(oxi::test::wait_for_eos(h)) << "no EOS";
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
  EXPECT_TRUE(oxi::test::wait_for_eos(h)) << "no EOS";
  expect_equal_to_transcript(r.take(), reference(after, false), false, 0);
  gst_harness_teardown(h);
}

// Live: a flush while passes run stops them; text after it belongs to the new audio only.
// READY keeps the transcriber for the next stream (its working memory already in place); that
// stream is transcribed exactly as by a new element.
TEST_F(OxiWhisper, NextStreamAfterReadyIsTranscribedAfresh) {
  GstElement* e = make_element();
  g_object_set(e, "mode", 2 /* file */, "word-timestamps", TRUE, nullptr);
  Recording r;
  GstHarness* h = harness(e, &r);
  gst_object_unref(e);
  size_t seen = 0;  // items of earlier streams
  for (const std::vector<float>& audio :
       {oxi::whisper::test::speech_like(2.0, 1), oxi::whisper::test::speech_like(2.5, 4)}) {
    SCOPED_TRACE(audio.size());
    push_audio(h, audio, 0);
    ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
    EXPECT_TRUE(oxi::test::wait_for_eos(h)) << "no EOS";
    const std::vector<Item> all = r.take();
    const std::vector<Item> items(all.begin() + static_cast<std::ptrdiff_t>(seen), all.end());
    seen = all.size();
    expect_equal_to_transcript(items, reference(audio, true), true, 0);
    ASSERT_NE(gst_element_set_state(h->element, GST_STATE_READY), GST_STATE_CHANGE_FAILURE);
    ASSERT_NE(gst_element_set_state(h->element, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    // A new stream: stream-start (clears the EOS), caps and segment.
    ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_stream_start("next")));
    gst_harness_set_src_caps_str(h, kF32Caps);
  }
  gst_harness_teardown(h);
}

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
  EXPECT_TRUE(oxi::test::wait_for_eos(h)) << "no EOS";
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
  EXPECT_TRUE(oxi::test::wait_for_eos(h)) << "no EOS";
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
  const std::optional<oxi::test::BusError> error = oxi::test::pop_bus_error(bus);
  gst_object_unref(bus);
  ASSERT_TRUE(error);
  EXPECT_TRUE(error->matches(GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND));
  EXPECT_NE(error->message.find(bad), std::string::npos) << error->message;
  EXPECT_NE(error->debug.find("no-such-model"), std::string::npos) << error->debug;

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
  gint kv_cache = -1;
  g_object_get(e, "kv-cache", &kv_cache, nullptr);
  EXPECT_EQ(kv_cache, 0);  // auto: f16 live, f32 for files
  gst_util_set_object_arg(G_OBJECT(e), "kv-cache", "f16");
  g_object_get(e, "kv-cache", &kv_cache, nullptr);
  EXPECT_EQ(kv_cache, 2);
  gboolean previous_text = FALSE;
  g_object_get(e, "condition-on-previous-text", &previous_text, nullptr);
  EXPECT_TRUE(previous_text);  // whisper_streaming's behaviour unless turned off
  g_object_set(e, "condition-on-previous-text", FALSE, nullptr);
  g_object_get(e, "condition-on-previous-text", &previous_text, nullptr);
  EXPECT_FALSE(previous_text);
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

// --- the live path: append-only text, unsynced_src, statistics, VAD gating ---------------------

namespace live {

namespace fs = std::filesystem;

// A minimal JSON reader, enough to check the unsynced_src lines: nullopt on any syntax error.
struct Json {
  enum class Type { null, boolean, number, string, array, object } type = Type::null;
  bool boolean = false;
  double number = 0.0;
  std::string string;
  std::vector<Json> array;
  std::map<std::string, Json> object;
  const Json* find(const std::string& key) const {
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &it->second;
  }
};

class JsonReader {
 public:
  explicit JsonReader(const std::string& text) : s_(text) {}
  std::optional<Json> document() {
    std::optional<Json> v = value();
    blanks();
    if (!v || at_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void blanks() {
    while (at_ < s_.size() &&
           (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r'))
      ++at_;
  }
  bool literal(const char* word) {
    const size_t n = std::strlen(word);
    if (s_.compare(at_, n, word) != 0) return false;
    at_ += n;
    return true;
  }
  std::optional<std::string> string() {
    if (at_ >= s_.size() || s_[at_] != '"') return std::nullopt;
    ++at_;
    std::string out;
    while (at_ < s_.size() && s_[at_] != '"') {
      const auto c = static_cast<unsigned char>(s_[at_]);
      if (c < 0x20) return std::nullopt;  // control characters must be escaped
      if (c != '\\') {
        out.push_back(s_[at_++]);
        continue;
      }
      if (++at_ >= s_.size()) return std::nullopt;
      const char e = s_[at_++];
      switch (e) {
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '/':
          out.push_back('/');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          if (at_ + 4 > s_.size()) return std::nullopt;
          for (size_t i = 0; i < 4; ++i)
            if (!g_ascii_isxdigit(s_[at_ + i])) return std::nullopt;
          const long code = std::stol(s_.substr(at_, 4), nullptr, 16);
          at_ += 4;
          if (code < 0x80)
            out.push_back(static_cast<char>(code));
          else
            out += "?";  // not needed here
          break;
        }
        default:
          return std::nullopt;
      }
    }
    if (at_ >= s_.size()) return std::nullopt;
    ++at_;
    return out;
  }
  std::optional<Json> value() {
    blanks();
    if (at_ >= s_.size()) return std::nullopt;
    Json v;
    const char c = s_[at_];
    if (c == '{') {
      ++at_;
      v.type = Json::Type::object;
      blanks();
      if (at_ < s_.size() && s_[at_] == '}') {
        ++at_;
        return v;
      }
      for (;;) {
        blanks();
        std::optional<std::string> key = string();
        if (!key) return std::nullopt;
        blanks();
        if (at_ >= s_.size() || s_[at_++] != ':') return std::nullopt;
        std::optional<Json> member = value();
        if (!member || v.object.count(*key)) return std::nullopt;
        v.object.emplace(*key, std::move(*member));
        blanks();
        if (at_ < s_.size() && s_[at_] == ',') {
          ++at_;
          continue;
        }
        if (at_ < s_.size() && s_[at_] == '}') {
          ++at_;
          return v;
        }
        return std::nullopt;
      }
    }
    if (c == '[') {
      ++at_;
      v.type = Json::Type::array;
      blanks();
      if (at_ < s_.size() && s_[at_] == ']') {
        ++at_;
        return v;
      }
      for (;;) {
        std::optional<Json> item = value();
        if (!item) return std::nullopt;
        v.array.push_back(std::move(*item));
        blanks();
        if (at_ < s_.size() && s_[at_] == ',') {
          ++at_;
          continue;
        }
        if (at_ < s_.size() && s_[at_] == ']') {
          ++at_;
          return v;
        }
        return std::nullopt;
      }
    }
    if (c == '"') {
      std::optional<std::string> str = string();
      if (!str) return std::nullopt;
      v.type = Json::Type::string;
      v.string = std::move(*str);
      return v;
    }
    if (literal("true") || literal("false")) {
      v.type = Json::Type::boolean;
      v.boolean = s_[at_ - 1] == 'e' && s_.compare(at_ - 4, 4, "true") == 0;
      return v;
    }
    if (literal("null")) return v;
    // A number: -?digits(.digits)?([eE][+-]?digits)?
    const size_t from = at_;
    if (s_[at_] == '-') ++at_;
    const auto digits = [&] {
      const size_t d = at_;
      while (at_ < s_.size() && g_ascii_isdigit(s_[at_])) ++at_;
      return at_ > d;
    };
    if (!digits()) return std::nullopt;
    if (at_ < s_.size() && s_[at_] == '.') {
      ++at_;
      if (!digits()) return std::nullopt;
    }
    if (at_ < s_.size() && (s_[at_] == 'e' || s_[at_] == 'E')) {
      ++at_;
      if (at_ < s_.size() && (s_[at_] == '+' || s_[at_] == '-')) ++at_;
      if (!digits()) return std::nullopt;
    }
    v.type = Json::Type::number;
    v.number = g_ascii_strtod(s_.substr(from, at_ - from).c_str(), nullptr);
    return v;
  }

  const std::string& s_;
  size_t at_ = 0;
};

// The buffers pushed on unsynced_src (linked or not: the probe sees a push before the pad
// finds out it has no peer).
struct JsonLines {
  std::mutex mutex;
  std::vector<std::string> lines;
  std::vector<std::string> take() {
    std::lock_guard lock(mutex);
    return lines;
  }
};

GstPadProbeReturn json_probe(GstPad*, GstPadProbeInfo* info, gpointer data) {
  auto* j = static_cast<JsonLines*>(data);
  std::string line = oxi::test::buffer_text(GST_PAD_PROBE_INFO_BUFFER(info));
  std::lock_guard lock(j->mutex);
  j->lines.push_back(std::move(line));
  return GST_PAD_PROBE_OK;
}

void record_json(GstElement* element, JsonLines* j) {
  GstPad* pad = gst_element_get_static_pad(element, "unsynced_src");
  ASSERT_NE(pad, nullptr);
  gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, json_probe, j, nullptr);
  gst_object_unref(pad);
}

// The parsed lines, each checked for the documented shape.
std::vector<Json> parse_lines(const std::vector<std::string>& lines) {
  std::vector<Json> out;
  for (const std::string& line : lines) {
    EXPECT_FALSE(line.empty());
    if (line.empty()) continue;
    EXPECT_EQ(line.back(), '\n') << line;
    EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << "one object per buffer: " << line;
    std::optional<Json> j = JsonReader(line).document();
    EXPECT_TRUE(j.has_value()) << "not JSON: " << line;
    if (!j) continue;
    EXPECT_EQ(j->type, Json::Type::object) << line;
    const Json* text = j->find("text");
    const Json* words = j->find("words");
    const Json* is_final = j->find("is_final");
    const Json* language = j->find("language");
    EXPECT_TRUE(text && text->type == Json::Type::string) << line;
    EXPECT_TRUE(words && words->type == Json::Type::array) << line;
    EXPECT_TRUE(is_final && is_final->type == Json::Type::boolean) << line;
    EXPECT_TRUE(language && language->type == Json::Type::string) << line;
    if (!text || !words || !is_final || !language) continue;
    std::string joined;
    for (const Json& w : words->array) {
      EXPECT_EQ(w.type, Json::Type::object) << line;
      const Json* word = w.find("word");
      const Json* start = w.find("start");
      const Json* end = w.find("end");
      const Json* p = w.find("probability");
      EXPECT_TRUE(word && word->type == Json::Type::string) << line;
      EXPECT_TRUE(start && start->type == Json::Type::number) << line;
      EXPECT_TRUE(end && end->type == Json::Type::number) << line;
      EXPECT_TRUE(p && p->type == Json::Type::number) << line;
      if (!word || !start || !end || !p) continue;
      EXPECT_LE(start->number, end->number) << line;
      EXPECT_GE(p->number, 0.0) << line;
      EXPECT_LE(p->number, 1.0) << line;
      joined += word->string;
    }
    EXPECT_EQ(text->string, joined) << "text is its words: " << line;
    out.push_back(std::move(*j));
  }
  return out;
}

// Element messages and warnings the element posts (a harness gives it no bus of its own).
struct Bus {
  GstBus* bus = gst_bus_new();
  explicit Bus(GstElement* e) { gst_element_set_bus(e, bus); }
  ~Bus() { gst_object_unref(bus); }
  std::vector<GstMessage*> take() {
    std::vector<GstMessage*> out;
    while (GstMessage* m = gst_bus_pop(bus)) out.push_back(m);
    return out;
  }
};

const GstStructure* stats_of(GstMessage* m) {
  if (GST_MESSAGE_TYPE(m) != GST_MESSAGE_ELEMENT) return nullptr;
  const GstStructure* s = gst_message_get_structure(m);
  return s && gst_structure_has_name(s, "oxiwhisper-stats") ? s : nullptr;
}

guint64 u64(const GstStructure* s, const char* field) {
  guint64 v = G_MAXUINT64;
  EXPECT_TRUE(gst_structure_get_uint64(s, field, &v)) << field;
  return v;
}

std::optional<fs::path> vad_model_file() {
  const std::optional<fs::path> data = oxi::test::shared_data_dir();
  if (!data) return std::nullopt;
  const fs::path file = *data / "vad" / "silero_vad_16k.safetensors";
  if (!fs::exists(file)) return std::nullopt;
  return file;
}

// Merges touching GAP events into spans [start, end).
std::vector<std::pair<GstClockTime, GstClockTime>> gap_spans(const std::vector<Item>& items) {
  std::vector<std::pair<GstClockTime, GstClockTime>> spans;
  for (const Item& i : items) {
    if (!i.gap) continue;
    if (!spans.empty() && spans.back().second == i.pts)
      spans.back().second = i.pts + i.duration;
    else
      spans.emplace_back(i.pts, i.pts + i.duration);
  }
  return spans;
}

// The acceptance run is ten minutes of each signal (OXINFER_NONSPEECH_SECONDS=600);
// by default the test runs one minute of each (the gating does not depend on the length: every
// 32 ms window is judged alike).
const double kNonSpeechSeconds = [] {
  const char* env = std::getenv("OXINFER_NONSPEECH_SECONDS");
  return env && *env ? std::atof(env) : 60.0;
}();

std::vector<float> pink_noise(double seconds, uint32_t seed) {
  // White noise through Paul Kellet's economy pink filter (-3 dB/octave within 0.5 dB).
  const std::vector<float> white =
      oxi::test::random_normal(static_cast<size_t>(seconds * 16000), seed, 1.0f);
  std::vector<float> out(white.size());
  double b0 = 0, b1 = 0, b2 = 0;
  for (size_t i = 0; i < white.size(); ++i) {
    const double w = white[i];
    b0 = 0.99765 * b0 + w * 0.0990460;
    b1 = 0.96300 * b1 + w * 0.2965164;
    b2 = 0.57000 * b2 + w * 1.0526913;
    out[i] = static_cast<float>(0.05 * (b0 + b1 + b2 + w * 0.1848));
  }
  return out;
}

std::vector<float> tone_mix(double seconds) {
  // A steady chord (mains hum, a beep and a whistle) at a moderate level.
  std::vector<float> out(static_cast<size_t>(seconds * 16000));
  for (size_t i = 0; i < out.size(); ++i) {
    const double t = static_cast<double>(i) / 16000.0;
    out[i] = static_cast<float>(
        0.1 * std::sin(2 * M_PI * 50 * t) + 0.1 * std::sin(2 * M_PI * 440 * t) +
        0.1 * std::sin(2 * M_PI * 1000 * t) + 0.05 * std::sin(2 * M_PI * 3150 * t));
  }
  return out;
}

}  // namespace live

// (a) Committed text is append-only: what src pushes is never taken back or rewritten. Over a
// long input (many passes, catch-up included: the harness pushes faster than real time) the src
// buffers tile the stream in order without overlapping, and are exactly the commits announced
// on unsynced_src as is_final, one to one, while the tentative objects never reach src.
TEST_F(OxiWhisper, LiveCommittedTextIsAppendOnly) {
  GstElement* e = make_element();
  g_object_set(e, "latency", 300u, "mode", 1 /* live */, nullptr);
  Recording r;
  live::JsonLines j;
  live::record_json(e, &j);
  GstHarness* h = harness(e, &r);
  gst_object_unref(e);
  constexpr double kSeconds = 60.0;
  push_audio(h, oxi::whisper::test::speech_like(kSeconds, 11), 0);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  EXPECT_TRUE(oxi::test::wait_for_eos(h)) << "no EOS";
  const std::vector<Item> items = r.take();
  expect_tiled(items, 0, to_time(kSeconds));

  std::vector<std::string> committed, finals;
  for (const Item& i : items)
    if (!i.gap) committed.push_back(i.text);
  size_t tentative = 0;
  for (const live::Json& o : live::parse_lines(j.take())) {
    if (o.find("is_final")->boolean)
      finals.push_back(o.find("text")->string);
    else
      ++tentative;
  }
  EXPECT_GT(committed.size(), 5u) << "too little text to say anything";
  EXPECT_GT(tentative, 0u);
  EXPECT_EQ(committed, finals);
  gst_harness_teardown(h);
}

// (c) unsynced_src: JSON lines with the documented keys, application/x-json caps, tentative
// objects after passes; its being unlinked (as here) never blocks or stops the element.
TEST_F(OxiWhisper, UnsyncedSrcCarriesJsonLines) {
  GstElement* e = make_element();
  g_object_set(e, "latency", 600u, "word-timestamps", TRUE, nullptr);
  Recording r;
  live::JsonLines j;
  live::record_json(e, &j);
  GstHarness* h = harness(e, &r);
  push_audio(h, oxi::whisper::test::speech_like(4.0, 3), 0);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  EXPECT_TRUE(oxi::test::wait_for_eos(h)) << "no EOS";
  const std::vector<live::Json> objects = live::parse_lines(j.take());
  size_t finals = 0, tentative = 0;
  for (const live::Json& o : objects) (o.find("is_final")->boolean ? finals : tentative)++;
  EXPECT_GT(tentative, 0u);
  EXPECT_GT(finals, 0u);
  // word-timestamps: one src buffer per committed word, all of them announced as final.
  size_t final_words = 0;
  for (const live::Json& o : objects)
    if (o.find("is_final")->boolean) final_words += o.find("words")->array.size();
  EXPECT_EQ(final_words, text_count(r.take()));
  GstPad* pad = gst_element_get_static_pad(e, "unsynced_src");
  GstCaps* caps = gst_pad_get_current_caps(pad);
  ASSERT_NE(caps, nullptr);
  EXPECT_TRUE(gst_structure_has_name(gst_caps_get_structure(caps, 0), "application/x-json"));
  gst_caps_unref(caps);
  gst_object_unref(pad);
  gst_object_unref(e);
  gst_harness_teardown(h);
}

// (d) max-observed-delay, rtf and the oxiwhisper-stats message. The delay is measured on the
// pipeline clock: with the base time set 100 s in the past, text about audio that ends at t
// seconds is pushed 100 - t seconds (plus the processing time) late.
TEST_F(OxiWhisper, LiveStatisticsArePostedAndReadable) {
  GstElement* e = make_element();
  g_object_set(e, "latency", 600u, "stats-interval", 1000u, nullptr);
  live::Bus bus(e);
  Recording r;
  GstHarness* h = harness(e, &r);
  gst_harness_use_systemclock(h);
  GstClock* clock = gst_element_get_clock(e);
  ASSERT_NE(clock, nullptr);
  const GstClockTime now = gst_clock_get_time(clock);
  gst_object_unref(clock);
  ASSERT_GT(now, 100 * GST_SECOND);
  gst_element_set_base_time(e, now - 100 * GST_SECOND);
  const auto t0 = std::chrono::steady_clock::now();
  push_audio(h, oxi::whisper::test::speech_like(4.0, 2), 0);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  EXPECT_TRUE(oxi::test::wait_for_eos(h)) << "no EOS";
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_GT(text_count(r.take()), 0u);

  guint64 max_delay = 0;
  double rtf = -1.0;
  g_object_get(e, "max-observed-delay", &max_delay, "rtf", &rtf, nullptr);
  EXPECT_GE(max_delay, 96000u);  // the earliest text ends by 4 s
  EXPECT_LE(max_delay, static_cast<guint64>(100000 + elapsed * 1000 + 1000));
  EXPECT_GT(rtf, 0.0);
  EXPECT_LT(rtf, elapsed / 4.0 + 0.01);  // no more decoding time than the test took

  std::vector<const GstStructure*> stats;
  std::vector<GstMessage*> messages = bus.take();
  for (GstMessage* m : messages)
    if (const GstStructure* s = live::stats_of(m)) stats.push_back(s);
  // Every second of audio (at batch boundaries) and once at EOS.
  ASSERT_GE(stats.size(), 2u);
  const GstStructure* last = stats.back();
  double message_rtf = -1.0;
  EXPECT_TRUE(gst_structure_get_double(last, "rtf", &message_rtf));
  EXPECT_DOUBLE_EQ(message_rtf, rtf);
  EXPECT_EQ(live::u64(last, "max-observed-delay"), max_delay);
  EXPECT_GE(live::u64(last, "max-observed-delay"), live::u64(last, "p99-delay"));
  EXPECT_GE(live::u64(last, "p99-delay"), 96000u);
  EXPECT_GT(live::u64(last, "committed-words"), 0u);
  EXPECT_GT(live::u64(last, "passes"), 0u);
  EXPECT_EQ(live::u64(last, "audio-duration"), 4 * GST_SECOND);
  EXPECT_EQ(live::u64(last, "skipped-silence"), 0u);  // no VAD model: nothing gated
  live::u64(last, "shortened");
  EXPECT_EQ(live::u64(last, "dropped"), 0u);
  // The shared encoder's counts: at least this element's passes (other elements on the model,
  // if any, add theirs), never more passes than windows.
  EXPECT_GE(live::u64(last, "encoder-windows"), live::u64(last, "encoder-passes"));
  EXPECT_GT(live::u64(last, "encoder-passes"), 0u);
  for (GstMessage* m : messages) gst_message_unref(m);
  gst_object_unref(e);
  gst_harness_teardown(h);
}

// Falling behind the latency budget (the harness pushes 4 s of audio at once against a 100 ms
// budget): a QoS message and one warning, passes shortened, nothing dropped.
TEST_F(OxiWhisper, FallingBehindPostsQosAndAWarningOnce) {
  GstElement* e = make_element();
  g_object_set(e, "latency", 100u, nullptr);
  live::Bus bus(e);
  Recording r;
  GstHarness* h = harness(e, &r);
  const std::vector<float> audio = oxi::whisper::test::speech_like(4.0, 4);
  // One buffer: all of it waits for decoding at the first pass.
  ASSERT_EQ(gst_harness_push(h, f32_buffer(audio, 0, audio.size(), 0)), GST_FLOW_OK);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  EXPECT_TRUE(oxi::test::wait_for_eos(h)) << "no EOS";
  expect_tiled(r.take(), 0, 4 * GST_SECOND);
  size_t qos = 0, warnings = 0;
  guint64 shortened = 0;
  std::vector<GstMessage*> messages = bus.take();
  for (GstMessage* m : messages) {
    if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_QOS) {
      ++qos;
      GstFormat format;
      guint64 processed = 0, dropped = 1;
      gst_message_parse_qos_stats(m, &format, &processed, &dropped);
      EXPECT_EQ(dropped, 0u);
    }
    if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_WARNING) ++warnings;
    if (const GstStructure* s = live::stats_of(m)) shortened = live::u64(s, "shortened");
  }
  EXPECT_GE(qos, 1u);
  EXPECT_EQ(warnings, 1u);
  EXPECT_GT(shortened, 0u);
  for (GstMessage* m : messages) gst_message_unref(m);
  gst_object_unref(e);
  gst_harness_teardown(h);
}

TEST_F(OxiWhisper, VadOnWithoutAModelFailsTheStateChange) {
  GstElement* pipeline = gst_pipeline_new(nullptr);
  GstElement* w = make_element();
  g_object_set(w, "vad", 2 /* on */, nullptr);
  gst_bin_add(GST_BIN(pipeline), w);
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  GstBus* bus = gst_element_get_bus(pipeline);
  const std::optional<oxi::test::BusError> error = oxi::test::pop_bus_error(bus);
  gst_object_unref(bus);
  ASSERT_TRUE(error);
  EXPECT_TRUE(error->matches(GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND));
  EXPECT_NE(error->message.find("VAD"), std::string::npos) << error->message;
  // auto (the default) without a model: no gating, no error.
  g_object_set(w, "vad", 0 /* auto */, nullptr);
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_PAUSED), GST_STATE_CHANGE_SUCCESS);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  // A VAD model that does not load: an error naming it.
  g_object_set(w, "vad", 2, "vad-model", "/nowhere/silero.safetensors", nullptr);
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
}

// (b) With the real VAD, digital silence, pink noise and a chord of tones never reach the
// decoder: no text, no JSON, GAP events over the whole duration, zero passes.
TEST_F(OxiWhisper, VadKeepsNonSpeechFromTheDecoder) {
  const std::optional<fs::path> vad = live::vad_model_file();
  if (!vad) GTEST_SKIP() << "shared test data not found (set OXINFER_SHARED_DATA)";
  const std::vector<std::pair<const char*, std::vector<float>>> signals = {
      {"silence", std::vector<float>(static_cast<size_t>(live::kNonSpeechSeconds * 16000), 0.0f)},
      {"pink noise", live::pink_noise(live::kNonSpeechSeconds, 5)},
      {"tone mix", live::tone_mix(live::kNonSpeechSeconds)},
  };
  for (const auto& [name, samples] : signals) {
    SCOPED_TRACE(name);
    GstElement* e = make_element();
    g_object_set(e, "latency", 300u, "vad-model", vad->c_str(), nullptr);
    live::Bus bus(e);
    Recording r;
    live::JsonLines j;
    live::record_json(e, &j);
    GstHarness* h = harness(e, &r);
    const GstClockTime start = 3 * GST_SECOND;
    push_audio(h, samples, start);
    ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
    EXPECT_TRUE(oxi::test::wait_for_eos(h)) << "no EOS";
    const std::vector<Item> items = r.take();
    EXPECT_EQ(text_count(items), 0u);
    expect_tiled(items, start, start + to_time(live::kNonSpeechSeconds));
    EXPECT_TRUE(j.take().empty());
    std::vector<GstMessage*> messages = bus.take();
    const GstStructure* last = nullptr;
    for (GstMessage* m : messages)
      if (const GstStructure* s = live::stats_of(m)) last = s;
    ASSERT_NE(last, nullptr);
    EXPECT_EQ(live::u64(last, "passes"), 0u);
    EXPECT_EQ(live::u64(last, "skipped-silence"), to_time(live::kNonSpeechSeconds));
    double rtf = -1.0;
    g_object_get(e, "rtf", &rtf, nullptr);
    EXPECT_EQ(rtf, 0.0);
    for (GstMessage* m : messages) gst_message_unref(m);
    gst_object_unref(e);
    gst_harness_teardown(h);
  }
}

// (e) speech-with-pauses.wav live with VAD: GAP events over the pauses the reference VAD finds
// (whole-file segmentation, lib/vad's speech_timestamps), text only within its speech segments
// (widened by the element's pre-roll and hang-over).
TEST_F(OxiWhisper, VadGapsOverPausesAndTextOnlyInSpeech) {
  OXI_REQUIRE_SHARED_DATA(data);
  const fs::path wav = data / "vad" / "speech-with-pauses.wav";
  const fs::path model_file = data / "vad" / "silero_vad_16k.safetensors";
  const std::vector<float> samples = oxi::test::read_wav_s16_mono(wav);
  oxi::vad::SegmentParams params;
  params.min_speech_ms = 0;  // the element decodes any speech, however short
  const oxi::vad::SpeechDetection ref =
      oxi::vad::detect_speech(oxi::vad::SileroVadModel::load(model_file), samples, params);
  ASSERT_GE(ref.segments.size(), 3u);

  GstElement* e = make_element();
  g_object_set(e, "latency", 600u, "vad-model", model_file.c_str(), nullptr);
  live::Bus bus(e);
  Recording r;
  GstHarness* h = harness(e, &r);
  push_audio(h, samples, 0, 1024);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  EXPECT_TRUE(oxi::test::wait_for_eos(h)) << "no EOS";
  const std::vector<Item> items = r.take();
  const GstClockTime total = gst_util_uint64_scale_int(samples.size(), GST_SECOND, 16000);
  expect_tiled(items, 0, total);
  ASSERT_GT(text_count(items), 0u);

  const auto at = [](int64_t sample) {
    return gst_util_uint64_scale_int(static_cast<guint64>(sample), GST_SECOND, 16000);
  };
  // Text lies within a speech segment, from its pre-roll (300 ms, plus a window) to its
  // hang-over (500 ms, plus two windows).
  for (const Item& i : items) {
    if (i.gap) continue;
    bool inside = false;
    for (const oxi::vad::SpeechSegment& s : ref.segments) {
      const GstClockTime from = at(std::max<int64_t>(0, s.start - 4800 - 512));
      const GstClockTime to = at(s.end + 8000 + 1024);
      inside = inside || (i.pts >= from && i.pts + i.duration <= to);
    }
    EXPECT_TRUE(inside) << "text '" << i.text << "' at " << i.pts
                        << " is outside every speech segment";
  }
  // Each pause longer than the pre-roll and hang-over (with margins) is a gap between them.
  const auto gaps = live::gap_spans(items);
  size_t pauses = 0;
  for (size_t k = 0; k + 1 < ref.segments.size(); ++k) {
    const int64_t from = ref.segments[k].end + 8000 + 1024;
    const int64_t to = ref.segments[k + 1].start - 4800 - 512;
    if (to - from < 1600) continue;  // under 100 ms of certain silence
    ++pauses;
    const bool covered = std::any_of(gaps.begin(), gaps.end(), [&](const auto& g) {
      return g.first <= at(from) && g.second >= at(to);
    });
    EXPECT_TRUE(covered) << "no gap over the pause " << at(from) << " .. " << at(to) << " ns";
  }
  EXPECT_GE(pauses, 2u);
  std::vector<GstMessage*> messages = bus.take();
  const GstStructure* last = nullptr;
  for (GstMessage* m : messages)
    if (const GstStructure* s = live::stats_of(m)) last = s;
  ASSERT_NE(last, nullptr);
  EXPECT_GT(live::u64(last, "skipped-silence"), 0u);
  for (GstMessage* m : messages) gst_message_unref(m);
  gst_object_unref(e);
  gst_harness_teardown(h);
}

}  // namespace
