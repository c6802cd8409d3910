/* oxiwhisper's worker thread: takes the items the streaming thread queues (audio, discontinuity
 * marks, serialized events) in order, splits the audio into runs (live or file sessions) and
 * forwards the events after the text of the audio before them. Decoding never holds up the
 * streaming thread. */
#pragma once

#include <gst/gst.h>

#include "elements/whisper_context.h"

/* Queues an item for the worker; the caller holds c->mutex. */
G_GNUC_INTERNAL void gst_oxi_whisper_enqueue(GstOxiWhisperContext* c, OxiWhisperQueueItem item);

/* Forgets the stream (after a flush or at start/stop); the worker must be idle or stopped and the
 * caller holds c->mutex. */
G_GNUC_INTERNAL void gst_oxi_whisper_reset_stream(GstOxiWhisperContext* c);

/* READY->PAUSED, after the model is loaded: a fresh stream and the worker thread. */
G_GNUC_INTERNAL void gst_oxi_whisper_start_worker(GstOxiWhisper* self);

/* PAUSED->READY: cancels decoding and joins the worker. */
G_GNUC_INTERNAL void gst_oxi_whisper_stop_worker(GstOxiWhisper* self);
