#include "elements/whisper_live.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "elements/whisper_output.h"
#include "elements/whisper_vad_gate.h"

#define GST_CAT_DEFAULT gst_oxi_whisper_debug

namespace {

// The live decoder, counted and timed: the `rtf` property, the stats message, and the proof
// that silence gated out by the VAD costs no decoding.
class MeteredDecoder : public oxi::whisper::StreamDecoder {
 public:
  MeteredDecoder(oxi::whisper::StreamDecoder& inner, std::mutex& mutex, LiveStats& stats)
      : inner_(inner), mutex_(mutex), stats_(stats) {}
  size_t max_samples() const override { return inner_.max_samples(); }
  oxi::whisper::StreamHypothesis decode(std::span<const float> samples, const std::string& prompt,
                                        double time_offset) override {
    const auto t0 = std::chrono::steady_clock::now();
    oxi::whisper::StreamHypothesis h = inner_.decode(samples, prompt, time_offset);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
    std::lock_guard lock(mutex_);
    ++stats_.passes;
    stats_.decode_seconds += took.count();
    return h;
  }

 private:
  oxi::whisper::StreamDecoder& inner_;
  std::mutex& mutex_;
  LiveStats& stats_;
};

}  // namespace

void gst_oxi_whisper_live_start(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  const OxiWhisperSettings& s = c->settings;
  oxi::whisper::WindowOptions w;
  w.language = s.language;
  w.translate = s.translate;
  w.word_timestamps = s.word_timestamps;
  w.encode_audio_only = s.encode_audio_only;
  w.cancel = &c->cancel;
  c->decoder = std::make_unique<oxi::whisper::TranscriberStreamDecoder>(*c->transcriber, w);
  c->metered = std::make_unique<MeteredDecoder>(*c->decoder, c->stats_mutex, c->stats);
  oxi::whisper::StreamingOptions o;
  const double window = static_cast<double>(c->decoder->max_samples()) / 16000.0;
  o.min_chunk_seconds = oxi::whisper::StreamingOptions::step_for_latency(
      static_cast<double>(s.latency_ms) / 1000.0, window);
  o.initial_prompt = s.initial_prompt;
  o.max_delay_seconds = static_cast<double>(s.latency_ms) / 1000.0;
  if (!s.condition_on_previous_text) o.prompt_chars = 0;
  o.keep_words = true;  // the words go to unsynced_src as well
  c->stream = std::make_unique<oxi::whisper::StreamingTranscriber>(*c->metered, o, 0.0);
  c->pass_overheads.clear();
  if (c->vad_model) gst_oxi_whisper_vad_start(c);
  GST_DEBUG_OBJECT(self, "live run from %" GST_TIME_FORMAT ", step %.3f s of a %.1f s window%s",
                   GST_TIME_ARGS(c->run_start), c->stream->step_seconds(), window,
                   c->run_vad ? ", VAD gated" : "");
}

void gst_oxi_whisper_live_samples(GstOxiWhisper* self, const std::vector<float>& samples) {
  GstOxiWhisperContext* c = self->ctx;
  {
    std::lock_guard lock(c->stats_mutex);
    c->stats.audio_samples += samples.size();
  }
  if (c->run_vad)
    gst_oxi_whisper_vad_samples(self, samples);
  else
    c->stream->insert_audio(samples);
}

// After a live pass: the hypothesis's unstable tail as it stands now.
static void gst_oxi_whisper_push_tentative(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  const std::vector<oxi::whisper::Word>& words = c->stream->tentative();
  const double t0 = words.empty() ? c->stream->final_until() : words.front().start;
  const double t1 = words.empty() ? t0 : words.back().end;
  gst_oxi_whisper_push_json(self, words, false, t0, t1);
}

void gst_oxi_whisper_push_committed(GstOxiWhisper* self,
                                    const std::vector<oxi::whisper::CommittedText>& items) {
  GstOxiWhisperContext* c = self->ctx;
  for (const oxi::whisper::CommittedText& item : items) {
    if (c->settings.word_timestamps) {
      for (const oxi::whisper::Word& w : item.words)
        gst_oxi_whisper_push_text(self, w.word, w.start, w.end, true);
    } else {
      gst_oxi_whisper_push_text(self, item.text, item.start, item.end, true);
    }
    gst_oxi_whisper_push_json(self, item.words, true, item.start, item.end);
    std::lock_guard lock(c->stats_mutex);
    c->stats.committed_words += item.words.size();
  }
}

static void gst_oxi_whisper_post_stats(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  GstStructure* st;
  {
    std::lock_guard lock(c->stats_mutex);
    const LiveStats& s = c->stats;
    st = gst_structure_new(
        "oxiwhisper-stats", "rtf", G_TYPE_DOUBLE, s.rtf(), "max-observed-delay", G_TYPE_UINT64,
        static_cast<guint64>(s.max_delay / GST_MSECOND), "p99-delay", G_TYPE_UINT64,
        static_cast<guint64>(s.p99_delay() / GST_MSECOND), "committed-words", G_TYPE_UINT64,
        static_cast<guint64>(s.committed_words), "passes", G_TYPE_UINT64,
        static_cast<guint64>(s.passes), "shortened", G_TYPE_UINT64,
        static_cast<guint64>(s.shortened), "dropped", G_TYPE_UINT64, static_cast<guint64>(0),
        "audio-duration", G_TYPE_UINT64,
        static_cast<guint64>(gst_util_uint64_scale_int(s.audio_samples, GST_SECOND, 16000)),
        "skipped-silence", G_TYPE_UINT64,
        static_cast<guint64>(gst_util_uint64_scale_int(s.skipped_samples, GST_SECOND, 16000)),
        nullptr);
  }
  if (c->encoder) {
    const oxi::whisper::EncoderBatcher::Stats e = c->encoder->stats();
    gst_structure_set(st, "encoder-passes", G_TYPE_UINT64, static_cast<guint64>(e.passes),
                      "encoder-windows", G_TYPE_UINT64, static_cast<guint64>(e.windows), nullptr);
  }
  gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self), st));
}

// Every stats-interval of live audio (for a live source, of wall time too).
static void gst_oxi_whisper_maybe_post_stats(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  const uint64_t interval = static_cast<uint64_t>(c->settings.stats_interval_ms) * 16;
  if (interval == 0) return;
  uint64_t received;
  {
    std::lock_guard lock(c->stats_mutex);
    received = c->stats.audio_samples;
  }
  if (received < c->next_stats_samples) return;
  c->next_stats_samples = (received / interval + 1) * interval;
  gst_oxi_whisper_post_stats(self);
}

// Before a live pass: audio waiting for decoding beyond the latency budget switches the stream
// to catch-up mode (commit each pass, short buffers; StreamingTranscriber::update_catch_up),
// with a QoS message, and the first time a warning.
static void gst_oxi_whisper_check_backlog(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  oxi::whisper::StreamingTranscriber& stream = *c->stream;
  const uint64_t backlog = stream.pending_samples() + c->queued_samples.load();
  if (!stream.update_catch_up(static_cast<double>(backlog) / 16000.0,
                              static_cast<double>(c->settings.latency_ms) / 1000.0))
    return;
  if (stream.catch_up()) {
    const GstClockTime late = gst_util_uint64_scale_int(backlog, GST_SECOND, 16000);
    const GstClockTime at = gst_oxi_whisper_run_time(c, stream.buffer_end());
    double rtf;
    uint64_t received;
    {
      std::lock_guard lock(c->stats_mutex);
      rtf = c->stats.rtf();
      received = c->stats.audio_samples;
    }
    GST_INFO_OBJECT(self, "%" GST_TIME_FORMAT " of audio waits for decoding: catching up",
                    GST_TIME_ARGS(late));
    GstMessage* qos = gst_message_new_qos(
        GST_OBJECT(self), TRUE, gst_segment_to_running_time(&c->segment, GST_FORMAT_TIME, at),
        gst_segment_to_stream_time(&c->segment, GST_FORMAT_TIME, at), at, late);
    // jitter: how far behind; proportion: the real-time factor so far; nothing dropped.
    gst_message_set_qos_values(qos, static_cast<gint64>(late), rtf, 1000000);
    gst_message_set_qos_stats(qos, GST_FORMAT_TIME,
                              gst_util_uint64_scale_int(received, GST_SECOND, 16000), 0);
    gst_element_post_message(GST_ELEMENT(self), qos);
    if (!c->qos_warned) {
      c->qos_warned = true;
      GST_ELEMENT_WARNING(self, STREAM, FAILED, ("Speech recognition cannot keep up"),
                          ("%.1f s of audio wait for decoding, more than the latency of %u ms: "
                           "committing each pass over a short buffer until it catches up "
                           "(no audio is dropped)",
                           static_cast<double>(backlog) / 16000.0, c->settings.latency_ms));
    }
  } else {
    GST_INFO_OBJECT(self, "caught up");
  }
}

// After a pass: how long after the end of the audio it decoded its text went out (the wait
// for the worker, the VAD's hold and the pass itself). The stream's latency rule assumes the
// next pass is as late as the latest of the last few (without a clock: one step).
static void gst_oxi_whisper_note_pass_overhead(GstOxiWhisper* self) {
  constexpr size_t kRecentPasses = 8;
  GstOxiWhisperContext* c = self->ctx;
  const GstClockTime now = gst_oxi_whisper_running_time_now(self);
  const GstClockTime audio_end = gst_segment_to_running_time(
      &c->segment, GST_FORMAT_TIME, gst_oxi_whisper_run_time(c, c->stream->decoded_end()));
  if (!GST_CLOCK_TIME_IS_VALID(now) || !GST_CLOCK_TIME_IS_VALID(audio_end)) return;
  c->pass_overheads.push_back(now > audio_end ? static_cast<double>(now - audio_end) / GST_SECOND
                                              : 0.0);
  if (c->pass_overheads.size() > kRecentPasses) c->pass_overheads.pop_front();
  c->stream->set_pass_overhead(
      *std::max_element(c->pass_overheads.begin(), c->pass_overheads.end()));
}

void gst_oxi_whisper_live_passes(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  bool passed = false;
  while (c->run_active && c->run_live && c->stream->ready() && !c->cancel) {
    passed = true;
    gst_oxi_whisper_check_backlog(self);
    if (c->stream->catch_up()) {
      std::lock_guard lock(c->stats_mutex);
      ++c->stats.shortened;
    }
    gst_oxi_whisper_push_committed(self, c->stream->process());
    if (c->cancel) break;
    gst_oxi_whisper_note_pass_overhead(self);
    gst_oxi_whisper_push_tentative(self);
    gst_oxi_whisper_push_gap(self, gst_oxi_whisper_run_time(c, c->stream->final_until()));
  }
  // Until the next step's audio arrives the stream holds only its audio and text: many live
  // elements then cost little more memory than one (docs/live.md).
  if (passed) c->transcriber->release_working_memory();
  if (c->run_active && c->run_live && !c->cancel) gst_oxi_whisper_maybe_post_stats(self);
}

void gst_oxi_whisper_live_end(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  if (c->run_vad) gst_oxi_whisper_vad_end(c);
  gst_oxi_whisper_push_committed(self, c->stream->finish());
  c->stream.reset();
  c->metered.reset();
  c->decoder.reset();
  gst_oxi_whisper_post_stats(self);
}
