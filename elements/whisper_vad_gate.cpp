#include "elements/whisper_vad_gate.h"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <span>

#include "elements/whisper_live.h"
#include "elements/whisper_output.h"

#define GST_CAT_DEFAULT gst_oxi_whisper_debug

/* VAD gating (samples at 16 kHz). Audio before the window where speech is detected goes to
 * the decoder too: Silero's probability crosses the threshold a little into a soft onset.
 * Speech ends after this much audio below the end threshold: short pauses inside a sentence
 * do not cut it (each cut commits the tentative words without a second pass). */
#define VAD_PREROLL_SAMPLES 4800  /* 300 ms */
#define VAD_HANGOVER_SAMPLES 8000 /* 500 ms */

void gst_oxi_whisper_vad_start(GstOxiWhisperContext* c) {
  oxi::vad::SegmentParams params;
  params.threshold = c->settings.vad_threshold;
  c->vad = std::make_unique<oxi::vad::VadStream>(c->vad_model);
  c->segmenter = std::make_unique<oxi::vad::SpeechSegmenter>(params);
  c->run_vad = true;
  c->held.clear();
  c->held_start = 0;
  c->judged_end = 0;
  c->speaking = false;
  c->quiet_samples = 0;
}

// Gives the decoder the held samples before run sample `until`.
static void gst_oxi_whisper_vad_feed(GstOxiWhisperContext* c, uint64_t until) {
  if (until <= c->held_start) return;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(until - c->held_start, c->held.size()));
  c->stream->insert_audio(std::span<const float>(c->held).first(n));
  c->held.erase(c->held.begin(), c->held.begin() + static_cast<ptrdiff_t>(n));
  c->held_start += n;
}

// Drops the held samples before run sample `until`: silence, never decoded.
static void gst_oxi_whisper_vad_skip(GstOxiWhisperContext* c, uint64_t until) {
  if (until <= c->held_start) return;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(until - c->held_start, c->held.size()));
  c->held.erase(c->held.begin(), c->held.begin() + static_cast<ptrdiff_t>(n));
  c->held_start += n;
  std::lock_guard lock(c->stats_mutex);
  c->stats.skipped_samples += n;
}

// Speech ended (or the run did): everything said is committed now, with no second pass.
static void gst_oxi_whisper_vad_speech_ends(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  c->speaking = false;
  c->quiet_samples = 0;
  gst_oxi_whisper_push_committed(self, c->stream->finish());
  GST_LOG_OBJECT(self, "speech ends at %.3f s", static_cast<double>(c->held_start) / 16000.0);
}

void gst_oxi_whisper_vad_samples(GstOxiWhisper* self, const std::vector<float>& samples) {
  GstOxiWhisperContext* c = self->ctx;
  c->held.insert(c->held.end(), samples.begin(), samples.end());
  for (const float p : c->vad->push(samples)) {
    c->segmenter->push(p);
    const uint64_t window_start = c->judged_end;
    c->judged_end += oxi::vad::kWindow;
    if (c->segmenter->in_speech()) {
      c->quiet_samples = 0;
      if (!c->speaking) {
        const uint64_t from =
            window_start > VAD_PREROLL_SAMPLES ? window_start - VAD_PREROLL_SAMPLES : 0;
        gst_oxi_whisper_vad_skip(c, from);
        const double t = static_cast<double>(c->held_start) / 16000.0;
        GST_LOG_OBJECT(self, "speech starts at %.3f s", t);
        // Nothing was said before the pre-roll: a gap to it, then decoding resumes there.
        gst_oxi_whisper_push_gap(self, gst_oxi_whisper_run_time(c, t));
        if (c->stream->buffered_samples() == 0)
          c->stream->resume_at(t);
        else
          c->stream->reset(t);  // a cancelled finish() left audio: start afresh
        c->speaking = true;
      }
    } else if (c->speaking) {
      c->quiet_samples += oxi::vad::kWindow;
    }
    if (c->speaking) {
      gst_oxi_whisper_vad_feed(c, c->judged_end);
      if (c->quiet_samples >= VAD_HANGOVER_SAMPLES) gst_oxi_whisper_vad_speech_ends(self);
    }
  }
  if (!c->speaking) {
    // Silence: hold only the pre-roll the next speech may start with; the rest is a gap.
    if (c->judged_end > VAD_PREROLL_SAMPLES)
      gst_oxi_whisper_vad_skip(c, c->judged_end - VAD_PREROLL_SAMPLES);
    gst_oxi_whisper_push_gap(
        self, gst_oxi_whisper_run_time(c, static_cast<double>(c->held_start) / 16000.0));
  }
}

void gst_oxi_whisper_vad_end(GstOxiWhisperContext* c) {
  if (c->speaking)
    gst_oxi_whisper_vad_feed(c, c->held_start + c->held.size());
  else
    gst_oxi_whisper_vad_skip(c, c->held_start + c->held.size());
  c->speaking = false;
  c->vad.reset();
  c->segmenter.reset();
  c->held.clear();
}
