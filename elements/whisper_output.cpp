#include "elements/whisper_output.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <mutex>
#include <string_view>

#include "lib/core/json_string.h"

#define GST_CAT_DEFAULT gst_oxi_whisper_debug

namespace {

// Three decimals (times in seconds, probabilities), locale-independent (no decimal comma), as
// JSON wants.
std::string json_number(double v) {
  char buf[32];
  const auto r =
      std::to_chars(buf, buf + sizeof buf, std::isfinite(v) ? v : 0.0, std::chars_format::fixed, 3);
  return std::string(buf, r.ptr);
}

}  // namespace

GstClockTime gst_oxi_whisper_run_time(GstOxiWhisperContext* c, double seconds) {
  const double ns = std::max(0.0, seconds) * static_cast<double>(GST_SECOND);
  return c->run_start + static_cast<GstClockTime>(std::llround(ns));
}

void gst_oxi_whisper_note_flow(GstOxiWhisper* self, GstFlowReturn ret) {
  if (ret == GST_FLOW_OK) return;
  GstOxiWhisperContext* c = self->ctx;
  std::lock_guard lock(c->mutex);
  if (c->flow == GST_FLOW_OK) c->flow = ret;
}

void gst_oxi_whisper_push_gap(GstOxiWhisper* self, GstClockTime until) {
  GstOxiWhisperContext* c = self->ctx;
  if (!GST_CLOCK_TIME_IS_VALID(c->pushed_until) || until <= c->pushed_until) return;
  gst_pad_push_event(self->srcpad, gst_event_new_gap(c->pushed_until, until - c->pushed_until));
  c->pushed_until = until;
}

GstClockTime gst_oxi_whisper_running_time_now(GstOxiWhisper* self) {
  GstClock* clock = gst_element_get_clock(GST_ELEMENT(self));
  if (!clock) return GST_CLOCK_TIME_NONE;
  const GstClockTime now = gst_clock_get_time(clock);
  gst_object_unref(clock);
  const GstClockTime base = gst_element_get_base_time(GST_ELEMENT(self));
  if (!GST_CLOCK_TIME_IS_VALID(now) || !GST_CLOCK_TIME_IS_VALID(base) || now < base)
    return GST_CLOCK_TIME_NONE;
  return now - base;
}

// Live text: how late it is, measured as the issue of honest latency asks: the running time
// of the push on the pipeline clock minus the running time where the text's audio ends.
// Nothing is measured without a clock (an element outside a pipeline).
static void gst_oxi_whisper_note_delay(GstOxiWhisper* self, GstClockTime end) {
  GstOxiWhisperContext* c = self->ctx;
  const GstClockTime pushed = gst_oxi_whisper_running_time_now(self);
  const guint64 audio_end = gst_segment_to_running_time(&c->segment, GST_FORMAT_TIME, end);
  if (!GST_CLOCK_TIME_IS_VALID(pushed) || !GST_CLOCK_TIME_IS_VALID(audio_end)) return;
  // Audio that came faster than real time (a file forced to live) is not late: 0.
  const GstClockTime delay = pushed > audio_end ? pushed - audio_end : 0;
  GST_LOG_OBJECT(self, "delay %" GST_TIME_FORMAT " after the audio's end at %" GST_TIME_FORMAT,
                 GST_TIME_ARGS(delay), GST_TIME_ARGS(audio_end));
  std::lock_guard lock(c->stats_mutex);
  c->stats.delays.push_back(delay);
  c->stats.max_delay = std::max(c->stats.max_delay, delay);
}

void gst_oxi_whisper_push_text(GstOxiWhisper* self, const std::string& text, double t0, double t1,
                               bool live) {
  GstOxiWhisperContext* c = self->ctx;
  GstClockTime pts = gst_oxi_whisper_run_time(c, t0);
  GstClockTime end = gst_oxi_whisper_run_time(c, std::max(t0, t1));
  if (live && GST_CLOCK_TIME_IS_VALID(c->pushed_until)) {
    pts = std::max(pts, c->pushed_until);
    end = std::max(end, pts);
  }
  gst_oxi_whisper_push_gap(self, pts);
  GstBuffer* out = gst_buffer_new_memdup(text.data(), text.size());
  GST_BUFFER_PTS(out) = pts;
  GST_BUFFER_DURATION(out) = end - pts;
  GST_LOG_OBJECT(self, "text %" GST_TIME_FORMAT " + %" GST_TIME_FORMAT ": %s", GST_TIME_ARGS(pts),
                 GST_TIME_ARGS(end - pts), text.c_str());
  c->pushed_until = GST_CLOCK_TIME_IS_VALID(c->pushed_until) ? std::max(c->pushed_until, end) : end;
  gst_oxi_whisper_note_flow(self, gst_pad_push(self->srcpad, out));
  if (live) gst_oxi_whisper_note_delay(self, end);
}

// The pad's own stream: stream-start (in the input's group), JSON caps and the input's segment
// before its first buffer or EOS.
void gst_oxi_whisper_unsynced_start(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  if (c->unsynced_started) return;
  c->unsynced_started = true;
  gchar* id = gst_pad_create_stream_id(self->unsynced_srcpad, GST_ELEMENT(self), "unsynced");
  GstEvent* start = gst_event_new_stream_start(id);
  g_free(id);
  if (c->have_group_id) gst_event_set_group_id(start, c->group_id);
  gst_pad_push_event(self->unsynced_srcpad, start);
  GstCaps* caps = gst_pad_get_pad_template_caps(self->unsynced_srcpad);
  gst_pad_push_event(self->unsynced_srcpad, gst_event_new_caps(caps));
  gst_caps_unref(caps);
  gst_pad_push_event(self->unsynced_srcpad, gst_event_new_segment(&c->segment));
}

// An unlinked pad is the normal case: NOT_LINKED (and FLUSHING, during a flush) never stop the
// element; other failures do.
void gst_oxi_whisper_push_json(GstOxiWhisper* self, const std::vector<oxi::whisper::Word>& words,
                               bool is_final, double t0, double t1) {
  GstOxiWhisperContext* c = self->ctx;
  gst_oxi_whisper_unsynced_start(self);
  std::string text;
  for (const oxi::whisper::Word& w : words) text += w.word;
  const auto seconds = [c](double t) {
    return static_cast<double>(gst_oxi_whisper_run_time(c, t)) / GST_SECOND;
  };
  std::string json = "{\"text\": " + oxi::json_string(text) + ", \"words\": [";
  for (size_t i = 0; i < words.size(); ++i) {
    const oxi::whisper::Word& w = words[i];
    if (i) json += ", ";
    json += "{\"word\": " + oxi::json_string(w.word) +
            ", \"start\": " + json_number(seconds(w.start)) +
            ", \"end\": " + json_number(seconds(w.end)) +
            ", \"probability\": " + json_number(w.probability) + "}";
  }
  json += "], \"is_final\": ";
  json += is_final ? "true" : "false";
  const std::string language = c->decoder ? c->decoder->language() : c->settings.language;
  json += ", \"language\": " + oxi::json_string(language) + "}\n";

  GstBuffer* out = gst_buffer_new_memdup(json.data(), json.size());
  const GstClockTime pts = gst_oxi_whisper_run_time(c, t0);
  GST_BUFFER_PTS(out) = pts;
  GST_BUFFER_DURATION(out) = std::max(gst_oxi_whisper_run_time(c, t1), pts) - pts;
  const GstFlowReturn ret = gst_pad_push(self->unsynced_srcpad, out);
  if (ret != GST_FLOW_NOT_LINKED && ret != GST_FLOW_FLUSHING) gst_oxi_whisper_note_flow(self, ret);
}
