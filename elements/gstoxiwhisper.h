/* oxiwhisper: speech to text with a Whisper model. 16 kHz mono audio in, timed UTF-8 text out:
 * committed text of a live stream within the `latency` budget (LocalAgreement-2 on
 * lib/whisper's StreamingTranscriber, silence gated out by Silero VAD, tentative hypotheses as
 * JSON on `unsynced_src`), or the long-form transcription of a file, equal to
 * `oxinfer transcribe --timestamps`, at the end of the stream. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_OXI_WHISPER (gst_oxi_whisper_get_type())
G_DECLARE_FINAL_TYPE(GstOxiWhisper, gst_oxi_whisper, GST, OXI_WHISPER, GstElement)

typedef enum {
  GST_OXI_WHISPER_QUANT_NONE = 0,
  GST_OXI_WHISPER_QUANT_Q8 = 1,
  GST_OXI_WHISPER_QUANT_Q4 = 2,
} GstOxiWhisperQuant;

typedef enum {
  GST_OXI_WHISPER_MODE_AUTO = 0,
  GST_OXI_WHISPER_MODE_LIVE = 1,
  GST_OXI_WHISPER_MODE_FILE = 2,
} GstOxiWhisperMode;

typedef enum {
  GST_OXI_WHISPER_VAD_AUTO = 0,
  GST_OXI_WHISPER_VAD_OFF = 1,
  GST_OXI_WHISPER_VAD_ON = 2,
} GstOxiWhisperVad;

typedef enum {
  GST_OXI_WHISPER_KV_CACHE_AUTO = 0,
  GST_OXI_WHISPER_KV_CACHE_F32 = 1,
  GST_OXI_WHISPER_KV_CACHE_F16 = 2,
} GstOxiWhisperKvCache;

/* The model, the worker thread and the stream state (C++, elements/gstoxiwhisper.cpp). */
typedef struct _GstOxiWhisperContext GstOxiWhisperContext;

struct _GstOxiWhisper {
  GstElement parent;

  GstPad* sinkpad;
  GstPad* srcpad;
  GstPad* unsynced_srcpad; /* tentative hypotheses as JSON lines; may stay unlinked */

  /* properties, protected by the object lock */
  gchar* model;
  gchar* language_code; /* as set: "en-US", "auto" */
  gboolean translate;
  gboolean word_timestamps;
  guint threads;
  GstOxiWhisperQuant quant;
  GstOxiWhisperKvCache kv_cache;
  gchar* initial_prompt;
  guint latency_ms;
  gchar* model_instance_id;
  GstOxiWhisperMode mode;
  GstOxiWhisperVad vad;
  gchar* vad_model;
  gfloat vad_threshold;
  gboolean encode_audio_only;
  gboolean condition_on_previous_text;
  guint stats_interval_ms;

  GstOxiWhisperContext* ctx; /* owned */
};

GST_ELEMENT_REGISTER_DECLARE(oxiwhisper);

G_END_DECLS
