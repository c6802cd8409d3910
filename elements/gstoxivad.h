/* oxivad: voice activity detection with Silero VAD v5 on 16 kHz mono audio, passed through
 * unchanged with a GstOxiSpeechMeta on every buffer and an oxivad-segment element message for
 * each speech segment as soon as it is final. */
#pragma once

#include <gst/base/gstbasetransform.h>
#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_OXI_VAD (gst_oxi_vad_get_type())
G_DECLARE_FINAL_TYPE(GstOxiVad, gst_oxi_vad, GST, OXI_VAD, GstBaseTransform)

typedef struct _GstOxiVadStream GstOxiVadStream; /* the C++ streaming state (gstoxivad.cpp) */

struct _GstOxiVad {
  GstBaseTransform parent;

  /* properties, protected by the object lock; read when the element starts */
  gchar* model;
  gfloat threshold;
  guint min_silence_ms;
  guint min_speech_ms;
  guint speech_pad_ms;

  /* streaming thread only */
  gboolean is_s16;         /* S16LE input, else F32LE */
  GstOxiVadStream* stream; /* created in start(), owned */
};

GST_ELEMENT_REGISTER_DECLARE(oxivad);

G_END_DECLS
