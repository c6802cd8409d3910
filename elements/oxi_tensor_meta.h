/* GstOxiTensorMeta: describes the tensor carried by an application/x-oxinfer-tensor buffer
 * (embeddings, soft tokens passed between towers and models). GStreamer 1.22 has no analytics
 * meta, so oxinfer defines its own; see docs/frames.md. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_OXI_TENSOR_CAPS "application/x-oxinfer-tensor"
#define GST_OXI_TOKENS_CAPS "application/x-oxinfer-tokens"
#define GST_OXI_TENSOR_MAX_DIMS 8

typedef enum {
  GST_OXI_DTYPE_F32 = 0,
  GST_OXI_DTYPE_F16 = 1,
  GST_OXI_DTYPE_BF16 = 30,
  GST_OXI_DTYPE_I32 = 26,
} GstOxiDType;

typedef struct {
  GstMeta meta;
  GstOxiDType dtype;
  guint n_dims;
  gint64 shape[GST_OXI_TENSOR_MAX_DIMS]; /* row-major, outermost first */
  gchar* role;                           /* "text-embedding", "audio-soft-tokens", ... */
} GstOxiTensorMeta;

GType gst_oxi_tensor_meta_api_get_type(void);
const GstMetaInfo* gst_oxi_tensor_meta_get_info(void);
#define GST_OXI_TENSOR_META_API_TYPE (gst_oxi_tensor_meta_api_get_type())
#define gst_buffer_get_oxi_tensor_meta(b) \
  ((GstOxiTensorMeta*)gst_buffer_get_meta((b), GST_OXI_TENSOR_META_API_TYPE))

/* Adds a tensor meta; shape has n_dims entries (n_dims <= GST_OXI_TENSOR_MAX_DIMS). */
GstOxiTensorMeta* gst_buffer_add_oxi_tensor_meta(GstBuffer* buffer, GstOxiDType dtype, guint n_dims,
                                                 const gint64* shape, const gchar* role);

G_END_DECLS
