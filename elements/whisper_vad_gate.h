/* VAD gating of oxiwhisper's live runs (worker thread): Silero VAD judges the audio window by
 * window; speech (with a pre-roll before it) goes to the streaming transcriber, silence never
 * reaches the decoder and becomes GAP events, and each stretch of speech is committed in full
 * once it has ended. */
#pragma once

#include <gst/gst.h>

#include <vector>

#include "elements/whisper_context.h"

/* A fresh VAD state for a live run starting now. */
G_GNUC_INTERNAL void gst_oxi_whisper_vad_start(GstOxiWhisperContext* c);

/* Run audio through the gate. */
G_GNUC_INTERNAL void gst_oxi_whisper_vad_samples(GstOxiWhisper* self,
                                                 const std::vector<float>& samples);

/* End of the run: the last partial VAD window is kept by speech in progress, dropped in
 * silence; the VAD state is released. */
G_GNUC_INTERNAL void gst_oxi_whisper_vad_end(GstOxiWhisperContext* c);
