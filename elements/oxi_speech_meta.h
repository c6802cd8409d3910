/* GstOxiSpeechMeta: which samples of an audio buffer are speech, as oxivad decided when the
 * buffer passed. The decision is live: each 32 ms window's hysteresis state (speech from a
 * probability >= threshold until one below threshold - 0.15), before min-speech filtering and
 * padding; samples of a window not complete yet carry the latest decision. Final segments come
 * as oxivad-segment element messages. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

typedef struct {
  guint64 start; /* first sample, relative to the buffer */
  guint64 end;   /* one past the last sample */
} GstOxiSpeechRange;

typedef struct {
  GstMeta meta;
  guint64 offset;     /* stream sample index (16 kHz) of the buffer's first sample */
  guint64 n_samples;  /* samples in the buffer */
  gboolean speech;    /* some sample of the buffer is speech (n_ranges > 0) */
  gfloat probability; /* highest probability of the windows completed in this buffer, or -1 */
  guint n_ranges;
  GstOxiSpeechRange* ranges; /* n_ranges speech ranges in increasing order, owned */
} GstOxiSpeechMeta;

/* Applications that do not link the plugin find the API type by this name once an oxivad has
 * processed a buffer: g_type_from_name(GST_OXI_SPEECH_META_API_NAME). */
#define GST_OXI_SPEECH_META_API_NAME "GstOxiSpeechMetaAPI"

GType gst_oxi_speech_meta_api_get_type(void);
const GstMetaInfo* gst_oxi_speech_meta_get_info(void);
#define GST_OXI_SPEECH_META_API_TYPE (gst_oxi_speech_meta_api_get_type())
#define gst_buffer_get_oxi_speech_meta(b) \
  ((GstOxiSpeechMeta*)gst_buffer_get_meta((b), GST_OXI_SPEECH_META_API_TYPE))

/* Adds a speech meta holding a copy of `ranges`. */
GstOxiSpeechMeta* gst_buffer_add_oxi_speech_meta(GstBuffer* buffer, guint64 offset,
                                                 guint64 n_samples, gfloat probability,
                                                 const GstOxiSpeechRange* ranges, guint n_ranges);

G_END_DECLS
