// oxivad through GstHarness: caps, unchanged samples with a speech meta, segment messages equal
// to the library's segmentation of the authors' test file (skipped without the shared data),
// flushes, and a bad model failing the state change with an error instead of a crash.
#include <gst/check/gstharness.h>
#include <gst/gst.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "elements/oxi_speech_meta.h"
#include "lib/media/audio_decoder.h"
#include "lib/vad/vad_stream.h"
#include "tests/common/test_data.h"
#include "tests/elements/element_test_util.h"
#include "tests/vad/random_model.h"

namespace {

namespace fs = std::filesystem;

constexpr const char* kS16Caps =
    "audio/x-raw, format=(string)S16LE, rate=(int)16000, channels=(int)1, "
    "layout=(string)interleaved";
constexpr const char* kF32Caps =
    "audio/x-raw, format=(string)F32LE, rate=(int)16000, channels=(int)1, "
    "layout=(string)interleaved";

class OxiVad : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(oxi::test::load_oxinfer_plugin()); }
  void SetUp() override {
    model_ = dir_ / "random_vad.safetensors";
    oxi::test::write_vad_model(oxi::test::random_vad_tensors(3), model_);
  }

  // A harness around oxivad with a bus, so its element messages can be read.
  GstHarness* harness(const fs::path& model, const std::string& extra = "") {
    GstHarness* h = gst_harness_new_parse(("oxivad model=" + model.string() + " " + extra).c_str());
    GstElement* e = gst_harness_find_element(h, "oxivad");
    bus_ = gst_bus_new();
    gst_element_set_bus(e, bus_);
    gst_object_unref(e);
    return h;
  }
  void TearDown() override {
    if (bus_) gst_object_unref(bus_);
  }

  // (start-sample, end-sample) of every oxivad-segment message on the bus so far.
  std::vector<oxi::vad::SpeechSegment> segment_messages() {
    std::vector<oxi::vad::SpeechSegment> out;
    while (GstMessage* m = gst_bus_pop_filtered(bus_, GST_MESSAGE_ELEMENT)) {
      const GstStructure* s = gst_message_get_structure(m);
      if (gst_structure_has_name(s, "oxivad-segment")) {
        guint64 a = 0, b = 0, t0 = 0, t1 = 0;
        EXPECT_TRUE(gst_structure_get_uint64(s, "start-sample", &a));
        EXPECT_TRUE(gst_structure_get_uint64(s, "end-sample", &b));
        EXPECT_TRUE(gst_structure_get_uint64(s, "start", &t0));
        EXPECT_TRUE(gst_structure_get_uint64(s, "end", &t1));
        EXPECT_EQ(t0, gst_util_uint64_scale_int(a, GST_SECOND, 16000));  // segment from 0
        EXPECT_EQ(t1, gst_util_uint64_scale_int(b, GST_SECOND, 16000));
        out.push_back({static_cast<int64_t>(a), static_cast<int64_t>(b)});
      }
      gst_message_unref(m);
    }
    return out;
  }

  oxi::test::TempDir dir_;
  fs::path model_;
  GstBus* bus_ = nullptr;
};

GstBuffer* s16_buffer(const std::vector<float>& samples, size_t from, size_t n) {
  GstBuffer* b = gst_buffer_new_allocate(nullptr, n * 2, nullptr);
  GstMapInfo map;
  gst_buffer_map(b, &map, GST_MAP_WRITE);
  auto* out = reinterpret_cast<gint16*>(map.data);
  for (size_t i = 0; i < n; ++i)
    out[i] =
        static_cast<gint16>(std::max(-32768.0f, std::min(32767.0f, samples[from + i] * 32768.0f)));
  gst_buffer_unmap(b, &map);
  GST_BUFFER_PTS(b) = gst_util_uint64_scale_int(from, GST_SECOND, 16000);
  GST_BUFFER_DURATION(b) = gst_util_uint64_scale_int(n, GST_SECOND, 16000);
  return b;
}

// The speech meta, found by its API name as an application that does not link the plugin would.
const GstOxiSpeechMeta* speech_meta(GstBuffer* b) {
  const GType api = g_type_from_name(GST_OXI_SPEECH_META_API_NAME);
  if (api == 0) return nullptr;
  return reinterpret_cast<const GstOxiSpeechMeta*>(gst_buffer_get_meta(b, api));
}

std::vector<guint8> bytes_of(GstBuffer* b) {
  GstMapInfo map;
  gst_buffer_map(b, &map, GST_MAP_READ);
  std::vector<guint8> v(map.data, map.data + map.size);
  gst_buffer_unmap(b, &map);
  return v;
}

TEST_F(OxiVad, RefusesOtherRatesAndChannels) {
  GstHarness* h = harness(model_);
  gst_harness_set_src_caps_str(
      h,
      "audio/x-raw, format=(string)S16LE, rate=(int)44100, channels=(int)1, "
      "layout=(string)interleaved");
  GstBuffer* b = gst_buffer_new_allocate(nullptr, 1024, nullptr);
  gst_buffer_memset(b, 0, 0, 1024);
  EXPECT_EQ(gst_harness_push(h, b), GST_FLOW_NOT_NEGOTIATED);
  gst_harness_teardown(h);

  GstElement* vad = gst_element_factory_make("oxivad", nullptr);
  ASSERT_NE(vad, nullptr);
  GstPad* sink = gst_element_get_static_pad(vad, "sink");
  GstCaps* stereo = gst_caps_from_string(
      "audio/x-raw, format=(string)F32LE, rate=(int)16000, channels=(int)2, "
      "layout=(string)interleaved");
  GstCaps* mono = gst_caps_from_string(kF32Caps);
  EXPECT_FALSE(gst_pad_query_accept_caps(sink, stereo));
  EXPECT_TRUE(gst_pad_query_accept_caps(sink, mono));
  gst_caps_unref(stereo);
  gst_caps_unref(mono);
  gst_object_unref(sink);
  gst_object_unref(vad);
}

TEST_F(OxiVad, PassesSamplesUnchangedWithSpeechMeta) {
  GstHarness* h = harness(model_);
  gst_harness_set_src_caps_str(h, kS16Caps);
  const std::vector<float> audio = oxi::test::random_floats(16000, 5, -0.5f, 0.5f);
  uint64_t offset = 0;
  for (size_t n : {700u, 100u, 4000u, 1u}) {
    GstBuffer* in = s16_buffer(audio, offset, n);
    const std::vector<guint8> sent = bytes_of(in);
    ASSERT_EQ(gst_harness_push(h, in), GST_FLOW_OK);
    GstBuffer* out = gst_harness_pull(h);
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(bytes_of(out), sent);
    EXPECT_EQ(GST_BUFFER_PTS(out), gst_util_uint64_scale_int(offset, GST_SECOND, 16000));
    const GstOxiSpeechMeta* meta = speech_meta(out);
    ASSERT_NE(meta, nullptr);
    EXPECT_EQ(meta->offset, offset);
    EXPECT_EQ(meta->n_samples, n);
    EXPECT_EQ(meta->speech, meta->n_ranges > 0);
    for (guint i = 0; i < meta->n_ranges; ++i) {
      EXPECT_LT(meta->ranges[i].start, meta->ranges[i].end);
      EXPECT_LE(meta->ranges[i].end, n);
    }
    // Windows complete at 512, 1024 and 4608 samples: the 700-, 100- (no) and 4000-sample
    // buffers carry probabilities, the 1-sample one none.
    const bool completes_window = (offset + n) / 512 > offset / 512;
    EXPECT_EQ(meta->probability >= 0.0f, completes_window) << "buffer at " << offset;
    gst_buffer_unref(out);
    offset += n;
  }
  gst_harness_teardown(h);
}

TEST_F(OxiVad, MetaMarksLoudSpeechLikeWindows) {
  // A model whose output is fixed by the final bias: every window's probability is
  // sigmoid(bias) (here ~0.95), so every complete window is speech.
  auto tensors = oxi::test::random_vad_tensors(4);
  std::fill(tensors["final_conv.weight"].values.begin(), tensors["final_conv.weight"].values.end(),
            0.0f);
  tensors["final_conv.bias"].values = {3.0f};
  const fs::path always = dir_ / "always.safetensors";
  oxi::test::write_vad_model(tensors, always);
  GstHarness* h = harness(always);
  gst_harness_set_src_caps_str(h, kF32Caps);
  GstBuffer* in = gst_buffer_new_allocate(nullptr, 1000 * sizeof(float), nullptr);
  gst_buffer_memset(in, 0, 0, 1000 * sizeof(float));
  GST_BUFFER_PTS(in) = 0;
  ASSERT_EQ(gst_harness_push(h, in), GST_FLOW_OK);
  GstBuffer* out = gst_harness_pull(h);
  const GstOxiSpeechMeta* meta = speech_meta(out);
  ASSERT_NE(meta, nullptr);
  EXPECT_TRUE(meta->speech);
  ASSERT_EQ(meta->n_ranges, 1u);
  EXPECT_EQ(meta->ranges[0].start, 0u);
  EXPECT_EQ(meta->ranges[0].end, 1000u);  // the incomplete second window keeps the decision
  EXPECT_NEAR(meta->probability, 1.0 / (1.0 + std::exp(-3.0)), 1e-6);
  gst_buffer_unref(out);
  // EOS closes the open segment: the whole stream (1000 samples > 250 ms? no: 62.5 ms, so it
  // is dropped as too short).
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  EXPECT_TRUE(segment_messages().empty());
  gst_harness_teardown(h);

  // 0.5 s of such audio is one segment covering all of it.
  h = harness(always);
  gst_harness_set_src_caps_str(h, kF32Caps);
  in = gst_buffer_new_allocate(nullptr, 8000 * sizeof(float), nullptr);
  gst_buffer_memset(in, 0, 0, 8000 * sizeof(float));
  GST_BUFFER_PTS(in) = 0;
  ASSERT_EQ(gst_harness_push(h, in), GST_FLOW_OK);
  EXPECT_TRUE(segment_messages().empty());  // still open
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  EXPECT_EQ(segment_messages(), (std::vector<oxi::vad::SpeechSegment>{{0, 8000}}));
  gst_harness_teardown(h);
}

TEST_F(OxiVad, FlushDropsTheOpenSegment) {
  auto tensors = oxi::test::random_vad_tensors(4);
  std::fill(tensors["final_conv.weight"].values.begin(), tensors["final_conv.weight"].values.end(),
            0.0f);
  tensors["final_conv.bias"].values = {3.0f};
  const fs::path always = dir_ / "always.safetensors";
  oxi::test::write_vad_model(tensors, always);
  GstHarness* h = harness(always);
  gst_harness_set_src_caps_str(h, kF32Caps);
  GstBuffer* in = gst_buffer_new_allocate(nullptr, 8000 * sizeof(float), nullptr);
  gst_buffer_memset(in, 0, 0, 8000 * sizeof(float));
  ASSERT_EQ(gst_harness_push(h, in), GST_FLOW_OK);
  gst_buffer_unref(gst_harness_pull(h));
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_flush_start()));
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_flush_stop(TRUE)));
  GstSegment seg;
  gst_segment_init(&seg, GST_FORMAT_TIME);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_segment(&seg)));
  in = gst_buffer_new_allocate(nullptr, 6000 * sizeof(float), nullptr);
  gst_buffer_memset(in, 0, 0, 6000 * sizeof(float));
  GST_BUFFER_PTS(in) = 0;
  ASSERT_EQ(gst_harness_push(h, in), GST_FLOW_OK);
  GstBuffer* out = gst_harness_pull(h);
  EXPECT_EQ(speech_meta(out)->offset, 0u);  // counting restarted
  gst_buffer_unref(out);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  // Only the stream after the flush: 6000 samples.
  EXPECT_EQ(segment_messages(), (std::vector<oxi::vad::SpeechSegment>{{0, 6000}}));
  gst_harness_teardown(h);
}

TEST_F(OxiVad, DiscontinuityPostsTheOpenSegmentAndRestarts) {
  auto tensors = oxi::test::random_vad_tensors(4);
  std::fill(tensors["final_conv.weight"].values.begin(), tensors["final_conv.weight"].values.end(),
            0.0f);
  tensors["final_conv.bias"].values = {3.0f};
  const fs::path always = dir_ / "always.safetensors";
  oxi::test::write_vad_model(tensors, always);
  GstHarness* h = harness(always);
  gst_harness_set_src_caps_str(h, kF32Caps);
  GstBuffer* in = gst_buffer_new_allocate(nullptr, 8000 * sizeof(float), nullptr);
  gst_buffer_memset(in, 0, 0, 8000 * sizeof(float));
  GST_BUFFER_PTS(in) = 0;
  ASSERT_EQ(gst_harness_push(h, in), GST_FLOW_OK);
  gst_buffer_unref(gst_harness_pull(h));
  EXPECT_TRUE(segment_messages().empty());
  in = gst_buffer_new_allocate(nullptr, 6000 * sizeof(float), nullptr);
  gst_buffer_memset(in, 0, 0, 6000 * sizeof(float));
  GST_BUFFER_PTS(in) = 10 * GST_SECOND;
  GST_BUFFER_FLAG_SET(in, GST_BUFFER_FLAG_DISCONT);
  ASSERT_EQ(gst_harness_push(h, in), GST_FLOW_OK);
  GstBuffer* out = gst_harness_pull(h);
  EXPECT_EQ(speech_meta(out)->offset, 0u);
  gst_buffer_unref(out);
  // The stream before the gap ends there.
  EXPECT_EQ(segment_messages(), (std::vector<oxi::vad::SpeechSegment>{{0, 8000}}));
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  GstMessage* m = gst_bus_pop_filtered(bus_, GST_MESSAGE_ELEMENT);
  ASSERT_NE(m, nullptr);
  guint64 a = 1, t0 = 0;
  gst_structure_get_uint64(gst_message_get_structure(m), "start-sample", &a);
  gst_structure_get_uint64(gst_message_get_structure(m), "start", &t0);
  EXPECT_EQ(a, 0u);                // samples count from the discontinuity
  EXPECT_EQ(t0, 10 * GST_SECOND);  // times from its timestamp
  gst_message_unref(m);
  gst_harness_teardown(h);
}

TEST_F(OxiVad, SegmentMessagesEqualTheLibrary) {
  OXI_REQUIRE_SHARED_DATA(data);
  const fs::path model = data / "vad" / "silero_vad_16k.safetensors";
  if (!fs::exists(model)) GTEST_SKIP() << "no " << model;
  const std::vector<float> audio =
      oxi::media::decode_audio_file(data / "vad" / "speech-with-pauses.wav");
  const oxi::vad::SpeechDetection expected =
      oxi::vad::detect_speech(oxi::vad::SileroVadModel::load(model), audio);
  ASSERT_FALSE(expected.segments.empty());

  GstHarness* h = harness(model);
  gst_harness_set_src_caps_str(h, kS16Caps);
  std::vector<oxi::vad::SpeechSegment> live;
  size_t at = 0, k = 0;
  const size_t sizes[] = {4000, 511, 1600, 3};
  while (at < audio.size()) {
    const size_t n = std::min(sizes[k++ % 4], audio.size() - at);
    ASSERT_EQ(gst_harness_push(h, s16_buffer(audio, at, n)), GST_FLOW_OK);
    gst_buffer_unref(gst_harness_pull(h));
    at += n;
    for (const auto& s : segment_messages()) {
      live.push_back(s);
      // Posted as soon as final: within 100 ms of silence (plus a window and a buffer) after
      // its end, not at EOS.
      EXPECT_LT(at, static_cast<size_t>(s.end) + 1600 + 512 + 4000);
    }
  }
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  for (const auto& s : segment_messages()) live.push_back(s);
  EXPECT_EQ(live, expected.segments);
  gst_harness_teardown(h);
}

TEST_F(OxiVad, BadModelFailsTheStateChangeWithAnError) {
  const fs::path bad = dir_ / "broken.safetensors";
  oxi::test::write_file_bytes(bad, {'n', 'o', 't', ' ', 'a', ' ', 'm', 'o', 'd', 'e', 'l'});
  for (const std::string& model : {bad.string(), (dir_ / "absent.safetensors").string()}) {
    GstElement* pipeline = gst_pipeline_new(nullptr);
    GstElement* src = gst_element_factory_make("fakesrc", nullptr);
    GstElement* vad = gst_element_factory_make("oxivad", nullptr);
    GstElement* sink = gst_element_factory_make("fakesink", nullptr);
    ASSERT_TRUE(src && vad && sink);
    g_object_set(vad, "model", model.c_str(), nullptr);
    gst_bin_add_many(GST_BIN(pipeline), src, vad, sink, nullptr);
    ASSERT_TRUE(gst_element_link_many(src, vad, sink, nullptr));
    EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
    GstBus* bus = gst_element_get_bus(pipeline);
    const std::optional<oxi::test::BusError> err = oxi::test::pop_bus_error(bus);
    gst_object_unref(bus);
    ASSERT_TRUE(err) << model;
    EXPECT_NE(err->message.find(model), std::string::npos) << err->message;
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(pipeline);
  }
}

}  // namespace
