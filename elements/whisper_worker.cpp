#include "elements/whisper_worker.h"

#include <exception>
#include <mutex>
#include <utility>

#include "elements/whisper_file.h"
#include "elements/whisper_live.h"
#include "elements/whisper_output.h"

#define GST_CAT_DEFAULT gst_oxi_whisper_debug

void gst_oxi_whisper_enqueue(GstOxiWhisperContext* c, OxiWhisperQueueItem item) {
  c->queue.push_back(std::move(item));
  c->cond.notify_all();
}

void gst_oxi_whisper_reset_stream(GstOxiWhisperContext* c) {
  c->queue.clear();
  c->queued_samples = 0;
  c->flow = GST_FLOW_OK;
  c->mode_decided = false;
  c->have_samples = false;
  c->next_pts = GST_CLOCK_TIME_NONE;
  c->run_active = false;
  c->file_samples.clear();
  c->stream.reset();
  c->metered.reset();
  c->decoder.reset();
  c->run_vad = false;
  c->vad.reset();
  c->segmenter.reset();
  c->held.clear();
  c->speaking = false;
  c->pushed_until = GST_CLOCK_TIME_NONE;
  gst_segment_init(&c->segment, GST_FORMAT_TIME);
}

/* --- runs --- */

static void gst_oxi_whisper_start_run(GstOxiWhisper* self, GstClockTime pts) {
  GstOxiWhisperContext* c = self->ctx;
  c->run_active = true;
  c->run_live = c->live.load();
  c->run_samples = 0;
  if (GST_CLOCK_TIME_IS_VALID(pts))
    c->run_start = pts;
  else if (GST_CLOCK_TIME_IS_VALID(c->pushed_until))
    c->run_start = c->pushed_until;
  else
    c->run_start = c->segment.start;
  if (!GST_CLOCK_TIME_IS_VALID(c->pushed_until)) c->pushed_until = c->run_start;
  c->file_samples.clear();
  c->run_vad = false;
  const GstOxiWhisperKvCache kv = c->settings.kv_cache;
  const bool kv_f16 =
      kv == GST_OXI_WHISPER_KV_CACHE_F16 || (kv == GST_OXI_WHISPER_KV_CACHE_AUTO && c->run_live);
  c->transcriber->set_kv_cache(kv_f16 ? oxi::kernels::DType::F16 : oxi::kernels::DType::F32);
  if (c->run_live) {
    gst_oxi_whisper_live_start(self);
    // An empty GAP where the output stands lets downstream sinks preroll now, so in a
    // pipeline that prerolls (a file replayed in real time) the first live text does not wait
    // in a sink until every other branch has had output too.
    gst_pad_push_event(self->srcpad, gst_event_new_gap(c->pushed_until, 0));
  } else
    GST_DEBUG_OBJECT(self, "file run from %" GST_TIME_FORMAT, GST_TIME_ARGS(c->run_start));
}

// End of a run (EOS, new segment, discontinuity): everything said in it is pushed, then a gap
// to its end.
static void gst_oxi_whisper_end_run(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  if (!c->run_active) return;
  c->run_active = false;
  if (c->run_live)
    gst_oxi_whisper_live_end(self);
  else if (!c->file_samples.empty())
    gst_oxi_whisper_file_end(self);
  if (!c->cancel)
    gst_oxi_whisper_push_gap(
        self, gst_oxi_whisper_run_time(c, static_cast<double>(c->run_samples) / 16000.0));
}

/* --- the worker thread --- */

static void gst_oxi_whisper_handle_item(GstOxiWhisper* self, OxiWhisperQueueItem& item) {
  GstOxiWhisperContext* c = self->ctx;
  switch (item.kind) {
    case OxiWhisperQueueItem::Kind::samples:
      c->queued_samples -= item.samples.size();
      if (!c->run_active) gst_oxi_whisper_start_run(self, item.pts);
      c->run_samples += item.samples.size();
      if (c->run_live)
        gst_oxi_whisper_live_samples(self, item.samples);
      else
        c->file_samples.insert(c->file_samples.end(), item.samples.begin(), item.samples.end());
      return;
    case OxiWhisperQueueItem::Kind::discont:
      gst_oxi_whisper_end_run(self);
      return;
    case OxiWhisperQueueItem::Kind::event:
      break;
  }
  GstEvent* event = item.event.release();
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_STREAM_START: {
      // unsynced_src starts its own stream (in the same group) before its next output.
      c->have_group_id = gst_event_parse_group_id(event, &c->group_id);
      c->unsynced_started = false;
      gst_pad_push_event(self->srcpad, event);
      return;
    }
    case GST_EVENT_CAPS: {
      gst_event_unref(event);
      GstCaps* caps = gst_pad_get_pad_template_caps(self->srcpad);
      gst_oxi_whisper_note_flow(self, gst_pad_push_event(self->srcpad, gst_event_new_caps(caps))
                                          ? GST_FLOW_OK
                                          : GST_FLOW_NOT_NEGOTIATED);
      gst_caps_unref(caps);
      return;
    }
    case GST_EVENT_SEGMENT: {
      gst_oxi_whisper_end_run(self);
      GstSegment segment;
      gst_event_copy_segment(event, &segment);
      if (segment.format != GST_FORMAT_TIME) {
        // Text is timed: a segment of bytes or samples becomes a time segment from zero.
        const guint32 seqnum = gst_event_get_seqnum(event);
        gst_event_unref(event);
        gst_segment_init(&segment, GST_FORMAT_TIME);
        event = gst_event_new_segment(&segment);
        gst_event_set_seqnum(event, seqnum);
      }
      c->segment = segment;
      c->pushed_until = GST_CLOCK_TIME_NONE;
      if (c->unsynced_started)
        gst_pad_push_event(self->unsynced_srcpad, gst_event_new_segment(&segment));
      gst_pad_push_event(self->srcpad, event);
      return;
    }
    case GST_EVENT_GAP: {
      // No audio for a span: what came before is complete, and nothing is said in the gap.
      gst_oxi_whisper_end_run(self);
      GstClockTime ts, duration;
      gst_event_parse_gap(event, &ts, &duration);
      gst_event_unref(event);
      if (GST_CLOCK_TIME_IS_VALID(ts)) {
        if (!GST_CLOCK_TIME_IS_VALID(c->pushed_until)) c->pushed_until = ts;
        gst_oxi_whisper_push_gap(self, GST_CLOCK_TIME_IS_VALID(duration) ? ts + duration : ts);
      }
      return;
    }
    case GST_EVENT_EOS: {
      gst_oxi_whisper_end_run(self);
      gst_oxi_whisper_unsynced_start(self);
      GstEvent* eos = gst_event_new_eos();
      gst_event_set_seqnum(eos, gst_event_get_seqnum(event));
      gst_pad_push_event(self->unsynced_srcpad, eos);
      gst_pad_push_event(self->srcpad, event);
      return;
    }
    default:
      gst_pad_push_event(self->srcpad, event);
      return;
  }
}

static void gst_oxi_whisper_worker(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  std::unique_lock lock(c->mutex);
  for (;;) {
    c->cond.wait(lock, [&] { return c->stopping || !c->queue.empty(); });
    if (c->stopping) break;
    std::deque<OxiWhisperQueueItem> items;
    items.swap(c->queue);
    c->busy = true;
    lock.unlock();
    try {
      // Live passes after every buffer, not once per batch: audio that piled up while a pass
      // ran is decoded a step (or, behind the budget, a short buffer) at a time, with its
      // tentative text, statistics and QoS, rather than all at once by the end of the run.
      for (OxiWhisperQueueItem& item : items) {
        if (c->cancel) break;  // flushing: the items are dropped
        gst_oxi_whisper_handle_item(self, item);
        gst_oxi_whisper_live_passes(self);
      }
    } catch (const std::exception& e) {
      GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Speech recognition failed"), ("%s", e.what()));
      gst_oxi_whisper_note_flow(self, GST_FLOW_ERROR);
      c->run_active = false;
    }
    items.clear();  // drop unhandled events outside the lock
    lock.lock();
    c->busy = false;
    c->cond.notify_all();
  }
}

void gst_oxi_whisper_start_worker(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  std::lock_guard lock(c->mutex);
  gst_oxi_whisper_reset_stream(c);
  c->stopping = false;
  c->busy = false;
  c->cancel = false;
  c->unsynced_started = false;
  c->have_group_id = false;
  c->qos_warned = false;
  c->next_stats_samples = static_cast<uint64_t>(c->settings.stats_interval_ms) * 16;
  {
    std::lock_guard stats_lock(c->stats_mutex);
    c->stats = LiveStats();
  }
  c->worker = std::thread(gst_oxi_whisper_worker, self);
}

void gst_oxi_whisper_stop_worker(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  {
    std::lock_guard lock(c->mutex);
    c->stopping = true;
    c->cancel = true;
    c->cond.notify_all();
  }
  if (c->worker.joinable()) c->worker.join();
  std::lock_guard lock(c->mutex);
  gst_oxi_whisper_reset_stream(c);
}
