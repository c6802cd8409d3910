/**
 * SECTION:element-oxisubenc
 * @title: oxisubenc
 *
 * Writes timed text (`text/x-raw,format=utf8` with PTS and duration, as `oxiwhisper` and
 * `oxillm` produce it) as SubRip, WebVTT or JSON lines. Times are stream times of the input
 * segment. Each input buffer becomes its cue(s) immediately, so a live pipeline's subtitle file
 * grows as captions are committed; in a live pipeline (upstream answers the LATENCY query as
 * live) every cue buffer is flagged SYNC_AFTER, so `filesink` writes it out at once instead of
 * collecting 64 kB first.
 *
 * With `merge=true` (SRT and WebVTT; JSON lines keep one object per buffer) consecutive buffers
 * (`oxiwhisper word-timestamps=true` words, or short live commits) are merged into cues:
 * a buffer joins the pending cue unless the silence before it exceeds `max-pause`, the cue
 * would last longer than `max-cue-duration`, or its text would no longer fit 84 characters (or,
 * when wrapping, `max-lines` lines). A cue whose text ends a sentence is pushed at once; a
 * held cue is pushed when the next buffer does not join it, when a GAP event shows `max-pause`
 * of silence after it, at EOS, and in a live pipeline at the latest 0.9 s (running time on the
 * pipeline clock) after its last buffer arrived, so every cue reaches the sink within a second
 * of its last word.
 *
 * Long captions can be wrapped to at most `max-lines` lines of `max-line-length` characters
 * (32 and 2 is the CEA-608 limit): text that does not fit becomes several cues, timed by its
 * words (by character count without word times); a word longer than a line is cut.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 filesrc location=talk.flac ! decodebin ! audioconvert ! audioresample !
 *   oxiwhisper model=openai/whisper-base ! oxisubenc format=srt ! filesink location=talk.srt
 * ]|
 */
#include "elements/gstoxisubenc.h"

#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "lib/whisper/subtitles.h"

GST_DEBUG_CATEGORY_STATIC(gst_oxi_subenc_debug);
#define GST_CAT_DEFAULT gst_oxi_subenc_debug

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS("text/x-raw, format=(string)utf8"));

static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS,
                            GST_STATIC_CAPS("application/x-subtitle; application/x-subtitle-vtt; "
                                            "application/x-json, format=(string)lines"));

enum {
  PROP_0,
  PROP_FORMAT,
  PROP_MAX_LINE_LENGTH,
  PROP_MAX_LINES,
  PROP_MERGE,
  PROP_MAX_CUE_DURATION,
  PROP_MAX_PAUSE
};

#define DEFAULT_FORMAT GST_OXI_SUBENC_FORMAT_SRT
#define DEFAULT_MAX_LINE_LENGTH 0
#define DEFAULT_MAX_LINES 2
#define DEFAULT_MERGE FALSE
#define DEFAULT_MAX_CUE_DURATION 6000
#define DEFAULT_MAX_PAUSE 500

// How long a merged cue may wait for a next word in a live pipeline: under a second, so that
// with the push and the sink's write the cue is out within a second of its last word.
static constexpr GstClockTime kMaxHold = 900 * GST_MSECOND;

struct _GstOxiSubencState {
  std::mutex mutex;
  std::condition_variable cond;  // the task waits here for a held cue (or for stopping)

  // Streaming state: changed by the streaming thread, read by the task when it pushes a cue.
  GstSegment segment;
  bool header_sent = false;
  std::unique_ptr<oxi::whisper::SubtitleWriter> writer;  // created at the first buffer
  std::unique_ptr<oxi::whisper::CueMerger> merger;       // only with merge=true (SRT, WebVTT)
  bool live_known = false;
  bool live = false;  // upstream answered the LATENCY query as live (asked at the first buffer)

  // The pending cue's deadline: on `clock` (owned), GST_CLOCK_TIME_NONE when none is held.
  GstClock* clock = nullptr;
  GstClockTime deadline = GST_CLOCK_TIME_NONE;
  GstClockID clock_id = nullptr;  // the task's current wait, to unschedule it
  uint64_t generation = 0;        // bumped whenever the pending cue or its deadline changes
  bool stopping = false;
  GstFlowReturn task_flow = GST_FLOW_OK;  // a failed push of the task, returned by the next chain

  _GstOxiSubencState() { gst_segment_init(&segment, GST_FORMAT_TIME); }
  ~_GstOxiSubencState() {
    if (clock) gst_object_unref(clock);
  }
  void reset() {
    gst_segment_init(&segment, GST_FORMAT_TIME);
    header_sent = false;
    writer.reset();
    merger.reset();
    live_known = live = false;
    deadline = GST_CLOCK_TIME_NONE;
    ++generation;
    task_flow = GST_FLOW_OK;
  }
};

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
static gboolean gst_oxi_subenc_src_activate_mode(GstPad* pad, GstObject* parent, GstPadMode mode,
                                                 gboolean active);
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
  g_object_class_install_property(
      gobject_class, PROP_MERGE,
      g_param_spec_boolean("merge", "Merge",
                           "Merge consecutive buffers (words) into cues by max-cue-duration, "
                           "max-pause and the line limits (SRT and WebVTT)",
                           DEFAULT_MERGE,
                           static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                                    GST_PARAM_MUTABLE_READY)));
  g_object_class_install_property(
      gobject_class, PROP_MAX_CUE_DURATION,
      g_param_spec_uint("max-cue-duration", "Maximum cue duration",
                        "merge: longest merged cue, first word's start to last word's end (ms)",
                        100, 600000, DEFAULT_MAX_CUE_DURATION,
                        static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                                 GST_PARAM_MUTABLE_READY)));
  g_object_class_install_property(
      gobject_class, PROP_MAX_PAUSE,
      g_param_spec_uint("max-pause", "Maximum pause",
                        "merge: a longer silence between two buffers starts a new cue (ms)", 0,
                        600000, DEFAULT_MAX_PAUSE,
                        static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                                 GST_PARAM_MUTABLE_READY)));

  gst_element_class_set_static_metadata(
      element_class, "oxinfer subtitle encoder", "Codec/Encoder/Subtitle",
      "Writes timed text as SRT, WebVTT or JSON lines as it arrives (words merged into cues)",
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
  gst_pad_set_activatemode_function(self->srcpad,
                                    GST_DEBUG_FUNCPTR(gst_oxi_subenc_src_activate_mode));
  gst_element_add_pad(GST_ELEMENT(self), self->srcpad);

  self->format = DEFAULT_FORMAT;
  self->max_line_length = DEFAULT_MAX_LINE_LENGTH;
  self->max_lines = DEFAULT_MAX_LINES;
  self->merge = DEFAULT_MERGE;
  self->max_cue_duration = DEFAULT_MAX_CUE_DURATION;
  self->max_pause = DEFAULT_MAX_PAUSE;
  self->state = new GstOxiSubencState();
}

static void gst_oxi_subenc_finalize(GObject* object) {
  GstOxiSubenc* self = GST_OXI_SUBENC(object);
  delete self->state;
  self->state = nullptr;
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
    case PROP_MERGE:
      self->merge = g_value_get_boolean(value);
      break;
    case PROP_MAX_CUE_DURATION:
      self->max_cue_duration = g_value_get_uint(value);
      break;
    case PROP_MAX_PAUSE:
      self->max_pause = g_value_get_uint(value);
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
    case PROP_MERGE:
      g_value_set_boolean(value, self->merge);
      break;
    case PROP_MAX_CUE_DURATION:
      g_value_set_uint(value, self->max_cue_duration);
      break;
    case PROP_MAX_PAUSE:
      g_value_set_uint(value, self->max_pause);
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

// Pushes subtitle bytes. In a live pipeline the buffer asks the sink to write it out now
// (filesink would otherwise keep up to 64 kB, minutes of captions, in memory).
static GstFlowReturn gst_oxi_subenc_push_text(GstOxiSubenc* self, const std::string& text,
                                              GstClockTime pts, GstClockTime duration) {
  GstBuffer* out = gst_buffer_new_memdup(text.data(), text.size());
  GST_BUFFER_PTS(out) = pts;
  GST_BUFFER_DURATION(out) = duration;
  if (self->state->live) GST_BUFFER_FLAG_SET(out, GST_BUFFER_FLAG_SYNC_AFTER);
  return gst_pad_push(self->srcpad, out);
}

static GstClockTime seconds_to_time(double seconds) {
  return seconds > 0.0 ? static_cast<GstClockTime>(std::llround(seconds * GST_SECOND)) : 0;
}

// The cues of one segment (stream times in seconds), with the buffer times they came from.
// Called with the state's mutex held.
static GstFlowReturn gst_oxi_subenc_push_segment(GstOxiSubenc* self,
                                                 const oxi::whisper::Segment& segment) {
  GstOxiSubencState* st = self->state;
  const std::string cues = st->writer->add(segment);
  if (cues.empty()) return GST_FLOW_OK;  // blank text writes nothing
  const GstClockTime start = gst_segment_position_from_stream_time(&st->segment, GST_FORMAT_TIME,
                                                                   seconds_to_time(segment.t0));
  const GstClockTime end = gst_segment_position_from_stream_time(&st->segment, GST_FORMAT_TIME,
                                                                 seconds_to_time(segment.t1));
  const GstClockTime duration =
      GST_CLOCK_TIME_IS_VALID(start) && GST_CLOCK_TIME_IS_VALID(end) && end >= start
          ? end - start
          : GST_CLOCK_TIME_NONE;
  return gst_oxi_subenc_push_text(self, cues, start, duration);
}

// After every change of the pending cue (mutex held): forgets the task's current wait and, in a
// live pipeline with a cue held, sets its deadline kMaxHold from now on the pipeline clock.
static void gst_oxi_subenc_rearm(GstOxiSubenc* self) {
  GstOxiSubencState* st = self->state;
  ++st->generation;
  if (st->clock_id) gst_clock_id_unschedule(st->clock_id);
  st->deadline = GST_CLOCK_TIME_NONE;
  if (st->merger && st->merger->has_pending() && st->live) {
    GstClock* clock = gst_element_get_clock(GST_ELEMENT(self));
    if (!clock) clock = gst_system_clock_obtain();  // not playing yet: still bound the wait
    gst_object_replace(reinterpret_cast<GstObject**>(&st->clock), GST_OBJECT(clock));
    st->deadline = gst_clock_get_time(clock) + kMaxHold;
    gst_object_unref(clock);
  }
  st->cond.notify_all();
}

// The source pad's task: waits for a held cue's deadline and pushes the cue when nothing joined
// it in time. Woken early (unscheduled) whenever the streaming thread changes the pending cue.
static void gst_oxi_subenc_loop(gpointer data) {
  GstOxiSubenc* self = GST_OXI_SUBENC(data);
  GstOxiSubencState* st = self->state;
  std::unique_lock lock(st->mutex);
  st->cond.wait(lock, [st] { return st->stopping || GST_CLOCK_TIME_IS_VALID(st->deadline); });
  if (st->stopping) {
    lock.unlock();
    gst_pad_pause_task(self->srcpad);
    return;
  }
  const uint64_t generation = st->generation;
  GstClockID id = gst_clock_new_single_shot_id(st->clock, st->deadline);
  st->clock_id = id;
  lock.unlock();
  const GstClockReturn waited = gst_clock_id_wait(id, nullptr);
  lock.lock();
  st->clock_id = nullptr;
  gst_clock_id_unref(id);
  if (st->stopping || generation != st->generation || waited == GST_CLOCK_UNSCHEDULED) return;
  st->deadline = GST_CLOCK_TIME_NONE;
  if (std::optional<oxi::whisper::Segment> cue = st->merger->flush()) {
    GST_LOG_OBJECT(self, "pushing a held cue at its deadline");
    const GstFlowReturn ret = gst_oxi_subenc_push_segment(self, *cue);
    if (ret != GST_FLOW_OK && ret != GST_FLOW_FLUSHING) st->task_flow = ret;
  }
}

static gboolean gst_oxi_subenc_src_activate_mode(GstPad* pad, GstObject* parent, GstPadMode mode,
                                                 gboolean active) {
  GstOxiSubenc* self = GST_OXI_SUBENC(parent);
  GstOxiSubencState* st = self->state;
  if (mode != GST_PAD_MODE_PUSH) return FALSE;
  if (active) {
    {
      std::lock_guard lock(st->mutex);
      st->stopping = false;
    }
    return gst_pad_start_task(pad, gst_oxi_subenc_loop, self, nullptr);
  }
  {
    std::lock_guard lock(st->mutex);
    st->stopping = true;
    if (st->clock_id) gst_clock_id_unschedule(st->clock_id);
    st->cond.notify_all();
  }
  return gst_pad_stop_task(pad);
}

static bool upstream_is_live(GstOxiSubenc* self) {
  GstQuery* query = gst_query_new_latency();
  gboolean live = FALSE;
  if (gst_pad_peer_query(self->sinkpad, query))
    gst_query_parse_latency(query, &live, nullptr, nullptr);
  gst_query_unref(query);
  return live;
}

static GstFlowReturn gst_oxi_subenc_chain(GstPad* pad, GstObject* parent, GstBuffer* buffer) {
  GstOxiSubenc* self = GST_OXI_SUBENC(parent);
  GstOxiSubencState* st = self->state;
  (void)pad;
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
  segment.text.assign(reinterpret_cast<const char*>(map.data), map.size);
  gst_buffer_unmap(buffer, &map);
  gst_buffer_unref(buffer);

  // Asked outside the mutex: the query travels upstream.
  const bool live = st->live_known ? st->live : upstream_is_live(self);

  std::lock_guard lock(st->mutex);
  if (st->task_flow != GST_FLOW_OK) return st->task_flow;
  if (!st->live_known) {
    st->live_known = true;
    st->live = live;
  }
  if (!st->writer) {
    GST_OBJECT_LOCK(self);
    const GstOxiSubencFormat format = self->format;
    const oxi::whisper::CueWrap wrap{self->max_line_length, self->max_lines};
    oxi::whisper::CueMergeRule rule;
    rule.max_duration = self->max_cue_duration / 1000.0;
    rule.max_pause = self->max_pause / 1000.0;
    rule.wrap = wrap;
    const bool merge = self->merge && format != GST_OXI_SUBENC_FORMAT_JSON;
    GST_OBJECT_UNLOCK(self);
    st->writer = std::make_unique<oxi::whisper::SubtitleWriter>(
        format == GST_OXI_SUBENC_FORMAT_VTT    ? oxi::whisper::SubtitleFormat::vtt
        : format == GST_OXI_SUBENC_FORMAT_JSON ? oxi::whisper::SubtitleFormat::json_lines
                                               : oxi::whisper::SubtitleFormat::srt,
        wrap);
    if (merge) st->merger = std::make_unique<oxi::whisper::CueMerger>(rule);
  }

  // Subtitle files count from the start of the media: stream time, not running time.
  const guint64 start = gst_segment_to_stream_time(&st->segment, GST_FORMAT_TIME, pts);
  const GstClockTime end_pts = GST_CLOCK_TIME_IS_VALID(duration) ? pts + duration : pts;
  const guint64 end = gst_segment_to_stream_time(&st->segment, GST_FORMAT_TIME, end_pts);
  segment.t0 = GST_CLOCK_TIME_IS_VALID(start) ? static_cast<double>(start) / GST_SECOND : 0.0;
  segment.t1 = GST_CLOCK_TIME_IS_VALID(end) ? static_cast<double>(end) / GST_SECOND : segment.t0;

  if (!st->header_sent) {
    st->header_sent = true;
    const std::string header = st->writer->header();
    if (!header.empty()) {
      const GstFlowReturn ret = gst_oxi_subenc_push_text(self, header, pts, 0);
      if (ret != GST_FLOW_OK) return ret;
    }
  }
  if (!st->merger) {
    // One cue per buffer: pushed with the buffer's own times.
    const std::string cues = st->writer->add(segment);
    if (cues.empty()) return GST_FLOW_OK;  // blank text writes nothing
    return gst_oxi_subenc_push_text(self, cues, pts, duration);
  }
  GstFlowReturn ret = GST_FLOW_OK;
  for (const oxi::whisper::Segment& cue : st->merger->add(segment)) {
    ret = gst_oxi_subenc_push_segment(self, cue);
    if (ret != GST_FLOW_OK) break;
  }
  gst_oxi_subenc_rearm(self);
  return ret;
}

static gboolean gst_oxi_subenc_sink_event(GstPad* pad, GstObject* parent, GstEvent* event) {
  GstOxiSubenc* self = GST_OXI_SUBENC(parent);
  GstOxiSubencState* st = self->state;
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
    case GST_EVENT_SEGMENT: {
      std::lock_guard lock(st->mutex);
      gst_event_copy_segment(event, &st->segment);
      break;
    }
    case GST_EVENT_GAP: {
      // Nothing was said: the file gets no cue, but a held cue is complete once the silence
      // after it is longer than max-pause. Downstream may still want the gap.
      GstClockTime ts = GST_CLOCK_TIME_NONE, gap_duration = GST_CLOCK_TIME_NONE;
      gst_event_parse_gap(event, &ts, &gap_duration);
      std::lock_guard lock(st->mutex);
      if (st->merger && st->merger->has_pending() && GST_CLOCK_TIME_IS_VALID(ts)) {
        const GstClockTime gap_end = GST_CLOCK_TIME_IS_VALID(gap_duration) ? ts + gap_duration : ts;
        const guint64 t = gst_segment_to_stream_time(&st->segment, GST_FORMAT_TIME, gap_end);
        if (GST_CLOCK_TIME_IS_VALID(t)) {
          if (std::optional<oxi::whisper::Segment> cue =
                  st->merger->advance(static_cast<double>(t) / GST_SECOND)) {
            gst_oxi_subenc_push_segment(self, *cue);
            gst_oxi_subenc_rearm(self);
          }
        }
      }
      break;
    }
    case GST_EVENT_EOS: {
      // The held cue is complete: nothing can join it any more.
      std::lock_guard lock(st->mutex);
      if (st->merger) {
        if (std::optional<oxi::whisper::Segment> cue = st->merger->flush())
          gst_oxi_subenc_push_segment(self, *cue);
        gst_oxi_subenc_rearm(self);
      }
      break;
    }
    case GST_EVENT_FLUSH_STOP: {
      // The held cue belonged to the flushed stretch of the stream.
      std::lock_guard lock(st->mutex);
      if (st->merger) {
        st->merger->flush();
        gst_oxi_subenc_rearm(self);
      }
      st->task_flow = GST_FLOW_OK;
      break;
    }
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
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    // The pads are inactive now: the task has stopped.
    std::lock_guard lock(self->state->mutex);
    self->state->reset();
  }
  return ret;
}
