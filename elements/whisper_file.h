/* oxiwhisper's file session (worker thread): the samples of a run are collected and, at its end,
 * transcribed with openai-whisper's long-form algorithm, so the text and times equal
 * `oxinfer transcribe --timestamps` on the same samples. */
#pragma once

#include <gst/gst.h>

#include "elements/whisper_context.h"

/* Transcribes the collected samples of the ending run and pushes the text. */
G_GNUC_INTERNAL void gst_oxi_whisper_file_end(GstOxiWhisper* self);
