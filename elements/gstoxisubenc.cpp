/**
 * SECTION:element-oxisubenc
 * @title: oxisubenc
 *
 * Writes timed text (`text/x-raw,format=utf8` with PTS and duration, as `oxiwhisper` and
 * `oxillm` produce it) as SubRip, WebVTT or JSON lines. Each input buffer becomes its cue(s)
 * immediately, so a live pipeline's subtitle file grows as captions are committed. Times are
 * stream times of the input segment. Long captions can be wrapped to at most `max-lines`
 * lines of `max-line-length` characters (32 and 2 is the CEA-608 limit).
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 filesrc location=talk.flac ! decodebin ! audioconvert ! audioresample !
 *   oxiwhisper model=openai/whisper-base ! oxisubenc format=srt ! filesink location=talk.srt
 * ]|
 */
#include "elements/gstoxisubenc.h"

#include <string>

GST_DEBUG_CATEGORY_STATIC(gst_oxi_subenc_debug);
#define GST_CAT_DEFAULT gst_oxi_subenc_debug

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS("text/x-raw, format=(string)utf8"));

static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS,
                            GST_STATIC_CAPS("application/x-subtitle; application/x-subtitle-vtt; "
                                            "application/x-json, format=(string)lines"));

enum { PROP_0, PROP_FORMAT, PROP_MAX_LINE_LENGTH, PROP_MAX_LINES };

#define DEFAULT_FORMAT GST_OXI_SUBENC_FORMAT_SRT
#define DEFAULT_MAX_LINE_LENGTH 0
#define DEFAULT_MAX_LINES 0

#define GST_TYPE_OXI_SUBENC_FORMAT (gst_oxi_subenc_format_get_type())
static GType gst_oxi_subenc_format_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_OXI_SUBENC_FORMAT_SRT, "SubRip (.srt)", "srt"},
      {GST_OXI_SUBENC_FORMAT_VTT, "WebVTT (.vtt)", "vtt"},
      {GST_OXI_SUBENC_FORMAT_JSON, "JSON lines, one object per segment", "json"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type)) {
    GType t = g_enum_register_static("GstOxiSubencFormat", values);
    g_once_init_leave(&type, t);
  }
  return type;
}

G_DEFINE_TYPE(GstOxiSubenc, gst_oxi_subenc, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE(oxisubenc, "oxisubenc", GST_RANK_NONE, GST_TYPE_OXI_SUBENC);

static void gst_oxi_subenc_finalize(GObject* object);
static void gst_oxi_subenc_set_property(GObject* object, guint prop_id, const GValue* value,
                                        GParamSpec* pspec);
static void gst_oxi_subenc_get_property(GObject* object, guint prop_id, GValue* value,
                                        GParamSpec* pspec);
static GstFlowReturn gst_oxi_subenc_chain(GstPad* pad, GstObject* parent, GstBuffer* buffer);
static gboolean gst_oxi_subenc_sink_event(GstPad* pad, GstObject* parent, GstEvent* event);
static GstStateChangeReturn gst_oxi_subenc_change_state(GstElement* element,
                                                        GstStateChange transition);

static void gst_oxi_subenc_class_init(GstOxiSubencClass* klass) {
  GObjectClass* gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass* element_class = GST_ELEMENT_CLASS(klass);

  gobject_class->finalize = gst_oxi_subenc_finalize;
  gobject_class->set_property = gst_oxi_subenc_set_property;
  gobject_class->get_property = gst_oxi_subenc_get_property;

  g_object_class_install_property(
      gobject_class, PROP_FORMAT,
      g_param_spec_enum("format", "Format", "Subtitle format to write", GST_TYPE_OXI_SUBENC_FORMAT,
                        DEFAULT_FORMAT,
                        static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                                 GST_PARAM_MUTABLE_READY)));
  g_object_class_install_property(
      gobject_class, PROP_MAX_LINE_LENGTH,
      g_param_spec_uint("max-line-length", "Maximum line length",
                        "Wrap cue text to lines of at most this many characters (0 = no wrapping)",
                        0, G_MAXUINT, DEFAULT_MAX_LINE_LENGTH,
                        static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                                 GST_PARAM_MUTABLE_READY)));
  g_object_class_install_property(
      gobject_class, PROP_MAX_LINES,
      g_param_spec_uint("max-lines", "Maximum lines per cue",
                        "Split wrapped text into cues of at most this many lines (0 = any)", 0,
                        G_MAXUINT, DEFAULT_MAX_LINES,
                        static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                                 GST_PARAM_MUTABLE_READY)));

  gst_element_class_set_static_metadata(
      element_class, "oxinfer subtitle encoder", "Codec/Encoder/Subtitle",
      "Writes timed text as SRT, WebVTT or JSON lines, one cue per buffer as it arrives",
      "oxinfer authors");
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  element_class->change_state = GST_DEBUG_FUNCPTR(gst_oxi_subenc_change_state);
  gst_type_mark_as_plugin_api(GST_TYPE_OXI_SUBENC_FORMAT, static_cast<GstPluginAPIFlags>(0));

  GST_DEBUG_CATEGORY_INIT(gst_oxi_subenc_debug, "oxisubenc", 0, "oxinfer subtitle encoder");
}

static void gst_oxi_subenc_init(GstOxiSubenc* self) {
  self->sinkpad = gst_pad_new_from_static_template(&sink_template, "sink");
  gst_pad_set_chain_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_oxi_subenc_chain));
  gst_pad_set_event_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_oxi_subenc_sink_event));
  gst_element_add_pad(GST_ELEMENT(self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template(&src_template, "src");
  gst_pad_use_fixed_caps(self->srcpad);
  gst_element_add_pad(GST_ELEMENT(self), self->srcpad);

  self->format = DEFAULT_FORMAT;
  self->max_line_length = DEFAULT_MAX_LINE_LENGTH;
  self->max_lines = DEFAULT_MAX_LINES;
  gst_segment_init(&self->segment, GST_FORMAT_TIME);
  self->header_sent = FALSE;
  self->writer = nullptr;
}

static void gst_oxi_subenc_reset(GstOxiSubenc* self) {
  delete self->writer;
  self->writer = nullptr;
  self->header_sent = FALSE;
  gst_segment_init(&self->segment, GST_FORMAT_TIME);
}

static void gst_oxi_subenc_finalize(GObject* object) {
  gst_oxi_subenc_reset(GST_OXI_SUBENC(object));
  G_OBJECT_CLASS(gst_oxi_subenc_parent_class)->finalize(object);
}

static void gst_oxi_subenc_set_property(GObject* object, guint prop_id, const GValue* value,
                                        GParamSpec* pspec) {
  GstOxiSubenc* self = GST_OXI_SUBENC(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_FORMAT:
      self->format = static_cast<GstOxiSubencFormat>(g_value_get_enum(value));
      break;
    case PROP_MAX_LINE_LENGTH:
      self->max_line_length = g_value_get_uint(value);
      break;
    case PROP_MAX_LINES:
      self->max_lines = g_value_get_uint(value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void gst_oxi_subenc_get_property(GObject* object, guint prop_id, GValue* value,
                                        GParamSpec* pspec) {
  GstOxiSubenc* self = GST_OXI_SUBENC(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_FORMAT:
      g_value_set_enum(value, self->format);
      break;
    case PROP_MAX_LINE_LENGTH:
      g_value_set_uint(value, self->max_line_length);
      break;
    case PROP_MAX_LINES:
      g_value_set_uint(value, self->max_lines);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static GstCaps* gst_oxi_subenc_src_caps(GstOxiSubencFormat format) {
  switch (format) {
    case GST_OXI_SUBENC_FORMAT_VTT:
      return gst_caps_new_empty_simple("application/x-subtitle-vtt");
    case GST_OXI_SUBENC_FORMAT_JSON:
      return gst_caps_new_simple("application/x-json", "format", G_TYPE_STRING, "lines", nullptr);
    case GST_OXI_SUBENC_FORMAT_SRT:
    default:
      return gst_caps_new_empty_simple("application/x-subtitle");
  }
}

static GstFlowReturn gst_oxi_subenc_push_text(GstOxiSubenc* self, const std::string& text,
                                              GstClockTime pts, GstClockTime duration) {
  GstBuffer* out = gst_buffer_new_memdup(text.data(), text.size());
  GST_BUFFER_PTS(out) = pts;
  GST_BUFFER_DURATION(out) = duration;
  return gst_pad_push(self->srcpad, out);
}

static GstFlowReturn gst_oxi_subenc_chain(GstPad* pad, GstObject* parent, GstBuffer* buffer) {
  GstOxiSubenc* self = GST_OXI_SUBENC(parent);
  (void)pad;
  if (!self->writer) {
    GST_OBJECT_LOCK(self);
    const auto format = self->format == GST_OXI_SUBENC_FORMAT_VTT    ? oxi::whisper::SubtitleFormat::vtt
                        : self->format == GST_OXI_SUBENC_FORMAT_JSON ? oxi::whisper::SubtitleFormat::json_lines
                                                                     : oxi::whisper::SubtitleFormat::srt;
    const oxi::whisper::CueWrap wrap{self->max_line_length, self->max_lines};
    GST_OBJECT_UNLOCK(self);
    self->writer = new oxi::whisper::SubtitleWriter(format, wrap);
  }

  const GstClockTime pts = GST_BUFFER_PTS(buffer);
  const GstClockTime duration = GST_BUFFER_DURATION(buffer);
  if (!GST_CLOCK_TIME_IS_VALID(pts)) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("text buffer without a timestamp"),
                      ("oxisubenc needs PTS (and duration) on every text buffer"));
    gst_buffer_unref(buffer);
    return GST_FLOW_ERROR;
  }
  GstMapInfo map;
  if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) {
    gst_buffer_unref(buffer);
    return GST_FLOW_ERROR;
  }
  oxi::whisper::Segment segment;
  // Subtitle files count from the start of the media: stream time, not running time.
  const guint64 start = gst_segment_to_stream_time(&self->segment, GST_FORMAT_TIME, pts);
  const GstClockTime end_pts = GST_CLOCK_TIME_IS_VALID(duration) ? pts + duration : pts;
  const guint64 end = gst_segment_to_stream_time(&self->segment, GST_FORMAT_TIME, end_pts);
  segment.t0 = GST_CLOCK_TIME_IS_VALID(start) ? static_cast<double>(start) / GST_SECOND : 0.0;
  segment.t1 = GST_CLOCK_TIME_IS_VALID(end) ? static_cast<double>(end) / GST_SECOND : segment.t0;
  segment.text.assign(reinterpret_cast<const char*>(map.data), map.size);
  gst_buffer_unmap(buffer, &map);
  gst_buffer_unref(buffer);

  if (!self->header_sent) {
    self->header_sent = TRUE;
    const std::string header = self->writer->header();
    if (!header.empty()) {
      const GstFlowReturn ret = gst_oxi_subenc_push_text(self, header, pts, 0);
      if (ret != GST_FLOW_OK) return ret;
    }
  }
  const std::string cues = self->writer->add(segment);
  if (cues.empty()) return GST_FLOW_OK;  // blank text writes nothing
  return gst_oxi_subenc_push_text(self, cues, pts, duration);
}

static gboolean gst_oxi_subenc_sink_event(GstPad* pad, GstObject* parent, GstEvent* event) {
  GstOxiSubenc* self = GST_OXI_SUBENC(parent);
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_CAPS: {
      // Input caps are fixed by the template; announce the output format instead.
      GST_OBJECT_LOCK(self);
      const GstOxiSubencFormat format = self->format;
      GST_OBJECT_UNLOCK(self);
      GstCaps* caps = gst_oxi_subenc_src_caps(format);
      const gboolean ok = gst_pad_set_caps(self->srcpad, caps);
      gst_caps_unref(caps);
      gst_event_unref(event);
      return ok;
    }
    case GST_EVENT_SEGMENT:
      gst_event_copy_segment(event, &self->segment);
      break;
    case GST_EVENT_GAP:
      // Nothing was said: the file gets no cue. Downstream may still want the gap.
      break;
    default:
      break;
  }
  return gst_pad_event_default(pad, parent, event);
}

static GstStateChangeReturn gst_oxi_subenc_change_state(GstElement* element,
                                                        GstStateChange transition) {
  GstOxiSubenc* self = GST_OXI_SUBENC(element);
  const GstStateChangeReturn ret =
      GST_ELEMENT_CLASS(gst_oxi_subenc_parent_class)->change_state(element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) gst_oxi_subenc_reset(self);
  return ret;
}
