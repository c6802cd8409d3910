/**
 * SECTION:element-oxivad
 * @title: oxivad
 *
 * Voice activity detection with Silero VAD v5 (16 kHz mono, F32LE or S16LE). Audio passes
 * through unchanged; each buffer gets a #GstOxiSpeechMeta saying which of its samples are
 * speech (the live decision of each 32 ms window), and for every speech segment, as soon as it
 * is final, the element posts an element message `oxivad-segment`:
 *
 *  - `start-sample`, `end-sample` (guint64): 16 kHz sample indices since the start of the stream
 *    (the last flush or discontinuity), end exclusive;
 *  - `start`, `end` (guint64, ns): stream times (the media position) of those samples;
 *  - `running-time-start`, `running-time-end` (guint64, ns): their running times.
 *
 * Segments are cut as the authors' get_speech_timestamps cuts them (threshold, end threshold
 * threshold - 0.15, min-speech-ms, min-silence-ms, speech-pad-ms). With the default settings a
 * segment is posted 100 ms after its speech ends; at EOS the open segment is posted. A flush
 * drops the state; a discontinuity posts what is open and starts a new stream.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 -m filesrc location=talk.flac ! decodebin ! audioconvert ! audioresample !
 *   audio/x-raw,rate=16000,channels=1 ! oxivad model=silero_vad_16k.safetensors ! fakesink
 * ]|
 */
#include "elements/gstoxivad.h"

#include <gst/audio/audio.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "elements/audio_samples.h"
#include "elements/model_loading.h"
#include "elements/oxi_speech_meta.h"
#include "elements/property_fields.h"
#include "lib/vad/vad_stream.h"

GST_DEBUG_CATEGORY_STATIC(gst_oxi_vad_debug);
#define GST_CAT_DEFAULT gst_oxi_vad_debug

#define OXI_VAD_CAPS                                                                 \
  "audio/x-raw, format=(string){ F32LE, S16LE }, rate=(int)16000, channels=(int)1, " \
  "layout=(string)interleaved"

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS(OXI_VAD_CAPS));
static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS(OXI_VAD_CAPS));

enum {
  PROP_0,
  PROP_MODEL,
  PROP_THRESHOLD,
  PROP_MIN_SILENCE_MS,
  PROP_MIN_SPEECH_MS,
  PROP_SPEECH_PAD_MS,
};

#define DEFAULT_THRESHOLD 0.5f
#define DEFAULT_MIN_SILENCE_MS 100
#define DEFAULT_MIN_SPEECH_MS 250
#define DEFAULT_SPEECH_PAD_MS 30

static const OxiPropertyField properties[] = {
    OXI_PROPERTY_FIELD(PROP_MODEL, GstOxiVad, model),
    OXI_PROPERTY_FIELD(PROP_THRESHOLD, GstOxiVad, threshold),
    OXI_PROPERTY_FIELD(PROP_MIN_SILENCE_MS, GstOxiVad, min_silence_ms),
    OXI_PROPERTY_FIELD(PROP_MIN_SPEECH_MS, GstOxiVad, min_speech_ms),
    OXI_PROPERTY_FIELD(PROP_SPEECH_PAD_MS, GstOxiVad, speech_pad_ms),
};

/* One stream through the model: the C++ state behind the GObject. */
struct _GstOxiVadStream {
  std::shared_ptr<const oxi::vad::SileroVadModel> model;
  oxi::vad::VadStream vad;
  oxi::vad::SpeechSegmenter segmenter;
  GstClockTime base_pts = GST_CLOCK_TIME_NONE; /* the PTS of stream sample 0 */
  std::vector<float> samples;                  /* the buffer as float */
  std::vector<bool> decisions;                 /* live speech flag per window of the buffer */
  std::vector<GstOxiSpeechRange> ranges;

  _GstOxiVadStream(std::shared_ptr<const oxi::vad::SileroVadModel> m,
                   const oxi::vad::SegmentParams& params)
      : model(m), vad(m), segmenter(params) {}

  void reset() {
    vad.reset();
    segmenter.reset();
    base_pts = GST_CLOCK_TIME_NONE;
  }
};

G_DEFINE_TYPE(GstOxiVad, gst_oxi_vad, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE(oxivad, "oxivad", GST_RANK_NONE, GST_TYPE_OXI_VAD);

static void gst_oxi_vad_finalize(GObject* object);
static void gst_oxi_vad_set_property(GObject* object, guint prop_id, const GValue* value,
                                     GParamSpec* pspec);
static void gst_oxi_vad_get_property(GObject* object, guint prop_id, GValue* value,
                                     GParamSpec* pspec);
static gboolean gst_oxi_vad_start(GstBaseTransform* trans);
static gboolean gst_oxi_vad_stop(GstBaseTransform* trans);
static gboolean gst_oxi_vad_set_caps(GstBaseTransform* trans, GstCaps* incaps, GstCaps* outcaps);
static GstFlowReturn gst_oxi_vad_transform_ip(GstBaseTransform* trans, GstBuffer* buffer);
static gboolean gst_oxi_vad_sink_event(GstBaseTransform* trans, GstEvent* event);

static void gst_oxi_vad_class_init(GstOxiVadClass* klass) {
  GObjectClass* gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass* element_class = GST_ELEMENT_CLASS(klass);
  GstBaseTransformClass* trans_class = GST_BASE_TRANSFORM_CLASS(klass);

  gobject_class->finalize = gst_oxi_vad_finalize;
  gobject_class->set_property = gst_oxi_vad_set_property;
  gobject_class->get_property = gst_oxi_vad_get_property;

  const auto flags = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                              GST_PARAM_MUTABLE_READY);
  g_object_class_install_property(
      gobject_class, PROP_MODEL,
      g_param_spec_string("model", "Model",
                          "Silero VAD v5 model: a silero_vad_16k.safetensors file, a directory "
                          "holding it, or a Hugging Face repo id (downloaded into the oxinfer "
                          "cache)",
                          nullptr, flags));
  g_object_class_install_property(
      gobject_class, PROP_THRESHOLD,
      g_param_spec_float("threshold", "Threshold",
                         "Speech probability at which speech starts; it ends below "
                         "threshold - 0.15",
                         0.0f, 1.0f, DEFAULT_THRESHOLD, flags));
  g_object_class_install_property(
      gobject_class, PROP_MIN_SILENCE_MS,
      g_param_spec_uint("min-silence-ms", "Minimum silence",
                        "Silence in milliseconds that ends a speech segment", 0, 3600000,
                        DEFAULT_MIN_SILENCE_MS, flags));
  g_object_class_install_property(
      gobject_class, PROP_MIN_SPEECH_MS,
      g_param_spec_uint("min-speech-ms", "Minimum speech",
                        "Speech segments not longer than this many milliseconds are dropped", 0,
                        3600000, DEFAULT_MIN_SPEECH_MS, flags));
  g_object_class_install_property(
      gobject_class, PROP_SPEECH_PAD_MS,
      g_param_spec_uint("speech-pad-ms", "Speech padding",
                        "Milliseconds added on each side of a speech segment (closer segments "
                        "split the silence between them)",
                        0, 3600000, DEFAULT_SPEECH_PAD_MS, flags));

  gst_element_class_set_static_metadata(
      element_class, "oxinfer voice activity detector", "Filter/Analyzer/Audio",
      "Marks speech in 16 kHz mono audio with Silero VAD v5: a meta on every buffer and a "
      "message per speech segment",
      "oxinfer authors");
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);

  trans_class->start = GST_DEBUG_FUNCPTR(gst_oxi_vad_start);
  trans_class->stop = GST_DEBUG_FUNCPTR(gst_oxi_vad_stop);
  trans_class->set_caps = GST_DEBUG_FUNCPTR(gst_oxi_vad_set_caps);
  trans_class->transform_ip = GST_DEBUG_FUNCPTR(gst_oxi_vad_transform_ip);
  trans_class->sink_event = GST_DEBUG_FUNCPTR(gst_oxi_vad_sink_event);
  // The samples are never written; only metadata is added, which needs a writable buffer, so
  // the element is in-place rather than passthrough.
  trans_class->passthrough_on_same_caps = FALSE;
  trans_class->transform_ip_on_passthrough = FALSE;

  GST_DEBUG_CATEGORY_INIT(gst_oxi_vad_debug, "oxivad", 0, "oxinfer voice activity detector");
}

static void gst_oxi_vad_init(GstOxiVad* self) {
  oxi_property_fields_init(G_OBJECT(self), properties);
  self->is_s16 = FALSE;
  self->stream = nullptr;
  gst_base_transform_set_in_place(GST_BASE_TRANSFORM(self), TRUE);
}

static void gst_oxi_vad_finalize(GObject* object) {
  GstOxiVad* self = GST_OXI_VAD(object);
  delete self->stream;
  self->stream = nullptr;
  oxi_property_fields_free(object, properties);
  G_OBJECT_CLASS(gst_oxi_vad_parent_class)->finalize(object);
}

static void gst_oxi_vad_set_property(GObject* object, guint prop_id, const GValue* value,
                                     GParamSpec* pspec) {
  if (!oxi_property_fields_set(object, properties, prop_id, value, pspec))
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
}

static void gst_oxi_vad_get_property(GObject* object, guint prop_id, GValue* value,
                                     GParamSpec* pspec) {
  if (!oxi_property_fields_get(object, properties, prop_id, value, pspec))
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
}

/* READY -> PAUSED: the model is loaded (or shared with other elements naming it) here, so a
 * bad model fails the state change with an error naming the file, before any data flows. */
static gboolean gst_oxi_vad_start(GstBaseTransform* trans) {
  GstOxiVad* self = GST_OXI_VAD(trans);
  GST_OBJECT_LOCK(self);
  const std::string spec = self->model ? self->model : "";
  oxi::vad::SegmentParams params;
  params.threshold = self->threshold;
  params.min_silence_ms = static_cast<int>(self->min_silence_ms);
  params.min_speech_ms = static_cast<int>(self->min_speech_ms);
  params.speech_pad_ms = static_cast<int>(self->speech_pad_ms);
  GST_OBJECT_UNLOCK(self);

  if (spec.empty()) {
    GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND, ("No VAD model given"),
                      ("set the 'model' property to a silero_vad_16k.safetensors file or a "
                       "Hugging Face repo id"));
    return FALSE;
  }
  try {
    auto model = oxi_shared_vad_model(spec);
    delete self->stream;
    self->stream = new GstOxiVadStream(std::move(model), params);
  } catch (const std::exception& e) {
    GST_ELEMENT_ERROR(self, RESOURCE, OPEN_READ, ("Could not load the VAD model: %s", e.what()),
                      ("model property: '%s'", spec.c_str()));
    return FALSE;
  }
  GST_INFO_OBJECT(self, "loaded VAD model %s", self->stream->model->path().c_str());
  return TRUE;
}

static gboolean gst_oxi_vad_stop(GstBaseTransform* trans) {
  GstOxiVad* self = GST_OXI_VAD(trans);
  delete self->stream;
  self->stream = nullptr;
  return TRUE;
}

static gboolean gst_oxi_vad_set_caps(GstBaseTransform* trans, GstCaps* incaps, GstCaps*) {
  GstOxiVad* self = GST_OXI_VAD(trans);
  GstAudioInfo info;
  if (!gst_audio_info_from_caps(&info, incaps)) return FALSE;
  self->is_s16 = GST_AUDIO_INFO_FORMAT(&info) == GST_AUDIO_FORMAT_S16LE;
  return TRUE;
}

/* The time of stream sample `sample` converted by `convert` (stream or running time), or
 * GST_CLOCK_TIME_NONE outside the segment. */
static guint64 sample_time(GstOxiVad* self, guint64 sample,
                           guint64 (*convert)(const GstSegment*, GstFormat, guint64)) {
  const GstClockTime pts =
      self->stream->base_pts + gst_util_uint64_scale_int(sample, GST_SECOND, oxi::vad::kSampleRate);
  return convert(&GST_BASE_TRANSFORM(self)->segment, GST_FORMAT_TIME, pts);
}

static void gst_oxi_vad_post_segments(GstOxiVad* self,
                                      const std::vector<oxi::vad::SpeechSegment>& segments) {
  for (const oxi::vad::SpeechSegment& s : segments) {
    const auto start = static_cast<guint64>(s.start), end = static_cast<guint64>(s.end);
    GstStructure* st = gst_structure_new(
        "oxivad-segment", "start-sample", G_TYPE_UINT64, start, "end-sample", G_TYPE_UINT64, end,
        "start", G_TYPE_UINT64, sample_time(self, start, gst_segment_to_stream_time), "end",
        G_TYPE_UINT64, sample_time(self, end, gst_segment_to_stream_time), "running-time-start",
        G_TYPE_UINT64, sample_time(self, start, gst_segment_to_running_time), "running-time-end",
        G_TYPE_UINT64, sample_time(self, end, gst_segment_to_running_time), nullptr);
    GST_DEBUG_OBJECT(self, "speech segment %" G_GUINT64_FORMAT " .. %" G_GUINT64_FORMAT, start,
                     end);
    gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self), st));
  }
}

/* End of a stream (EOS, discontinuity): the zero-padded last window, the open segment, and a
 * fresh state for whatever follows. */
static void gst_oxi_vad_finish_stream(GstOxiVad* self) {
  GstOxiVadStream* st = self->stream;
  const auto n_samples = static_cast<int64_t>(st->vad.samples());
  if (n_samples > 0) {
    if (const auto last = st->vad.flush())
      gst_oxi_vad_post_segments(self, st->segmenter.push(*last));
    gst_oxi_vad_post_segments(self, st->segmenter.finish(n_samples));
  }
  st->reset();
}

static GstFlowReturn gst_oxi_vad_transform_ip(GstBaseTransform* trans, GstBuffer* buffer) {
  GstOxiVad* self = GST_OXI_VAD(trans);
  GstOxiVadStream* st = self->stream;
  if (!st) return GST_FLOW_NOT_NEGOTIATED;
  if (GST_BUFFER_IS_DISCONT(buffer) && st->vad.samples() > 0) {
    GST_DEBUG_OBJECT(self, "discontinuity: closing the stream so far");
    gst_oxi_vad_finish_stream(self);
  }
  if (!GST_CLOCK_TIME_IS_VALID(st->base_pts)) {
    const GstSegment& segment = trans->segment;
    st->base_pts = GST_BUFFER_PTS_IS_VALID(buffer) ? GST_BUFFER_PTS(buffer)
                   : segment.format == GST_FORMAT_TIME && GST_CLOCK_TIME_IS_VALID(segment.start)
                       ? segment.start
                       : 0;
  }

  GstMapInfo map;
  if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Could not map the audio buffer"), (nullptr));
    return GST_FLOW_ERROR;
  }
  oxi_audio_samples_to_float(map, self->is_s16, st->samples);
  const size_t n = st->samples.size();
  gst_buffer_unmap(buffer, &map);

  const uint64_t offset = st->vad.samples();
  const std::vector<float> probs = st->vad.push(st->samples);
  st->decisions.clear();
  float best = -1.0f;
  for (float p : probs) {
    gst_oxi_vad_post_segments(self, st->segmenter.push(p));
    st->decisions.push_back(st->segmenter.in_speech());
    best = std::max(best, p);
  }

  // Speech ranges of this buffer: the windows it overlaps start with the one holding its first
  // sample (the first window completed by this push); windows still incomplete carry the latest
  // decision.
  st->ranges.clear();
  const uint64_t window = oxi::vad::kWindow, first_window = offset / window;
  for (uint64_t s = 0; s < n;) {
    const uint64_t w = (offset + s) / window;
    const uint64_t end = std::min<uint64_t>(n, (w + 1) * window - offset);
    const size_t k = static_cast<size_t>(w - first_window);
    const bool speech = k < st->decisions.size() ? st->decisions[k] : st->segmenter.in_speech();
    if (speech) {
      if (!st->ranges.empty() && st->ranges.back().end == s)
        st->ranges.back().end = end;
      else
        st->ranges.push_back({s, end});
    }
    s = end;
  }
  gst_buffer_add_oxi_speech_meta(buffer, offset, n, best, st->ranges.data(),
                                 static_cast<guint>(st->ranges.size()));
  return GST_FLOW_OK;
}

static gboolean gst_oxi_vad_sink_event(GstBaseTransform* trans, GstEvent* event) {
  GstOxiVad* self = GST_OXI_VAD(trans);
  if (self->stream) {
    switch (GST_EVENT_TYPE(event)) {
      case GST_EVENT_FLUSH_STOP:
        // A seek: what was buffered belongs to another position. Nothing is posted.
        self->stream->reset();
        break;
      case GST_EVENT_EOS:
        gst_oxi_vad_finish_stream(self);
        break;
      default:
        break;
    }
  }
  return GST_BASE_TRANSFORM_CLASS(gst_oxi_vad_parent_class)->sink_event(trans, event);
}
