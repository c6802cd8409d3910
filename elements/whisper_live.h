/* oxiwhisper's live session (worker thread): a run decoded by lib/whisper's
 * StreamingTranscriber (LocalAgreement-2), its committed text on `src` and tentative tail on
 * `unsynced_src`, the latency statistics and stats message, and QoS with catch-up when decoding
 * falls behind the latency budget. Silence may be gated out first (whisper_vad_gate). */
#pragma once

#include <gst/gst.h>

#include <vector>

#include "elements/whisper_context.h"

/* Sets up the decoder and the streaming transcriber of a live run starting now. */
G_GNUC_INTERNAL void gst_oxi_whisper_live_start(GstOxiWhisper* self);

/* Audio of the live run, counted, then to the VAD gate or straight to the transcriber. */
G_GNUC_INTERNAL void gst_oxi_whisper_live_samples(GstOxiWhisper* self,
                                                  const std::vector<float>& samples);

/* A pass whenever a step of audio waits; its committed text, its tentative tail on
 * unsynced_src, then a gap over what is final and silent. */
G_GNUC_INTERNAL void gst_oxi_whisper_live_passes(GstOxiWhisper* self);

/* End of the live run: everything said in it is committed, and a stats message posted. */
G_GNUC_INTERNAL void gst_oxi_whisper_live_end(GstOxiWhisper* self);

/* Text the transcriber committed: on `src` (a buffer per item, or per word) and unsynced_src. */
G_GNUC_INTERNAL void gst_oxi_whisper_push_committed(
    GstOxiWhisper* self, const std::vector<oxi::whisper::CommittedText>& items);
