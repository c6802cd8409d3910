#include "elements/oxi_speech_meta.h"

#include <gst/audio/audio.h>

#include <cstring>

namespace {

gboolean speech_meta_init(GstMeta* meta, gpointer, GstBuffer*) {
  auto* m = reinterpret_cast<GstOxiSpeechMeta*>(meta);
  m->offset = 0;
  m->n_samples = 0;
  m->speech = FALSE;
  m->probability = -1.0f;
  m->n_ranges = 0;
  m->ranges = nullptr;
  return TRUE;
}

void speech_meta_free(GstMeta* meta, GstBuffer*) {
  auto* m = reinterpret_cast<GstOxiSpeechMeta*>(meta);
  g_free(m->ranges);
  m->ranges = nullptr;
  m->n_ranges = 0;
}

// The ranges count samples of the whole buffer: copies keep the meta, region copies (which
// would shift the samples) and other transformations drop it.
gboolean speech_meta_transform(GstBuffer* dest, GstMeta* meta, GstBuffer*, GQuark type,
                               gpointer data) {
  auto* m = reinterpret_cast<GstOxiSpeechMeta*>(meta);
  if (!GST_META_TRANSFORM_IS_COPY(type)) return FALSE;
  if (static_cast<GstMetaTransformCopy*>(data)->region) return FALSE;
  return gst_buffer_add_oxi_speech_meta(dest, m->offset, m->n_samples, m->probability, m->ranges,
                                        m->n_ranges) != nullptr;
}

}  // namespace

GType gst_oxi_speech_meta_api_get_type(void) {
  static GType type = 0;
  // Audio metadata that depends on the sample rate: converters that resample drop it.
  static const gchar* tags[] = {GST_META_TAG_AUDIO_STR, GST_META_TAG_AUDIO_RATE_STR, nullptr};
  if (g_once_init_enter(&type)) {
    GType t = gst_meta_api_type_register(GST_OXI_SPEECH_META_API_NAME, tags);
    g_once_init_leave(&type, t);
  }
  return type;
}

const GstMetaInfo* gst_oxi_speech_meta_get_info(void) {
  static const GstMetaInfo* info = nullptr;
  if (g_once_init_enter(&info)) {
    const GstMetaInfo* i = gst_meta_register(GST_OXI_SPEECH_META_API_TYPE, "GstOxiSpeechMeta",
                                             sizeof(GstOxiSpeechMeta), speech_meta_init,
                                             speech_meta_free, speech_meta_transform);
    g_once_init_leave(&info, i);
  }
  return info;
}

GstOxiSpeechMeta* gst_buffer_add_oxi_speech_meta(GstBuffer* buffer, guint64 offset,
                                                 guint64 n_samples, gfloat probability,
                                                 const GstOxiSpeechRange* ranges, guint n_ranges) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  g_return_val_if_fail(n_ranges == 0 || ranges != nullptr, nullptr);
  auto* m = reinterpret_cast<GstOxiSpeechMeta*>(
      gst_buffer_add_meta(buffer, gst_oxi_speech_meta_get_info(), nullptr));
  if (!m) return nullptr;
  m->offset = offset;
  m->n_samples = n_samples;
  m->probability = probability;
  m->n_ranges = n_ranges;
  m->speech = n_ranges > 0;
  m->ranges =
      n_ranges
          ? static_cast<GstOxiSpeechRange*>(g_memdup2(ranges, sizeof(GstOxiSpeechRange) * n_ranges))
          : nullptr;
  return m;
}
