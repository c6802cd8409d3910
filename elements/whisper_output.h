/* What oxiwhisper's worker pushes: timed text and GAP events on `src`, and JSON hypotheses on
 * `unsynced_src` with that pad's own stream-start, caps and segment. Worker thread only. */
#pragma once

#include <gst/gst.h>

#include <string>
#include <vector>

#include "elements/whisper_context.h"

/* `seconds` into the current run, as a stream timestamp. */
G_GNUC_INTERNAL GstClockTime gst_oxi_whisper_run_time(GstOxiWhisperContext* c, double seconds);
// The running time now on the pipeline clock; GST_CLOCK_TIME_NONE without a clock.
G_GNUC_INTERNAL GstClockTime gst_oxi_whisper_running_time_now(GstOxiWhisper* self);

/* Keeps the first failed downstream flow return, for the chain function to return. */
G_GNUC_INTERNAL void gst_oxi_whisper_note_flow(GstOxiWhisper* self, GstFlowReturn ret);

/* A GAP event up to `until`: nothing was said in [pushed_until, until). */
G_GNUC_INTERNAL void gst_oxi_whisper_push_gap(GstOxiWhisper* self, GstClockTime until);

/* One text buffer for [t0, t1] seconds of the current run. `live` moves a start before text
 * already pushed to its end, so buffers stay in running order, and measures the delay; files
 * keep the transcriber's times exactly. */
G_GNUC_INTERNAL void gst_oxi_whisper_push_text(GstOxiWhisper* self, const std::string& text,
                                               double t0, double t1, bool live);

/* unsynced_src's stream-start (in the input's group), caps and segment, once per stream. */
G_GNUC_INTERNAL void gst_oxi_whisper_unsynced_start(GstOxiWhisper* self);

/* One JSON object for `words` (times of the current run) on unsynced_src. */
G_GNUC_INTERNAL void gst_oxi_whisper_push_json(GstOxiWhisper* self,
                                               const std::vector<oxi::whisper::Word>& words,
                                               bool is_final, double t0, double t1);
