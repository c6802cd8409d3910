#include "elements/oxi_tensor_meta.h"

#include <cstring>

namespace {

gboolean tensor_meta_init(GstMeta* meta, gpointer, GstBuffer*) {
  auto* m = reinterpret_cast<GstOxiTensorMeta*>(meta);
  m->dtype = GST_OXI_DTYPE_F32;
  m->n_dims = 0;
  std::memset(m->shape, 0, sizeof(m->shape));
  m->role = nullptr;
  return TRUE;
}

void tensor_meta_free(GstMeta* meta, GstBuffer*) {
  auto* m = reinterpret_cast<GstOxiTensorMeta*>(meta);
  g_free(m->role);
  m->role = nullptr;
}

// The tensor describes the buffer's whole payload, so the meta survives copies but not
// transformations that change the bytes (no tags: elements that rewrite data drop it).
gboolean tensor_meta_transform(GstBuffer* dest, GstMeta* meta, GstBuffer*, GQuark type,
                               gpointer data) {
  auto* m = reinterpret_cast<GstOxiTensorMeta*>(meta);
  if (!GST_META_TRANSFORM_IS_COPY(type)) return FALSE;
  auto* copy = static_cast<GstMetaTransformCopy*>(data);
  if (copy->region) return FALSE;
  return gst_buffer_add_oxi_tensor_meta(dest, m->dtype, m->n_dims, m->shape, m->role) != nullptr;
}

}  // namespace

GType gst_oxi_tensor_meta_api_get_type(void) {
  static GType type = 0;
  static const gchar* tags[] = {nullptr};
  if (g_once_init_enter(&type)) {
    GType t = gst_meta_api_type_register("GstOxiTensorMetaAPI", tags);
    g_once_init_leave(&type, t);
  }
  return type;
}

const GstMetaInfo* gst_oxi_tensor_meta_get_info(void) {
  static const GstMetaInfo* info = nullptr;
  if (g_once_init_enter(&info)) {
    const GstMetaInfo* i = gst_meta_register(GST_OXI_TENSOR_META_API_TYPE, "GstOxiTensorMeta",
                                             sizeof(GstOxiTensorMeta), tensor_meta_init,
                                             tensor_meta_free, tensor_meta_transform);
    g_once_init_leave(&info, i);
  }
  return info;
}

GstOxiTensorMeta* gst_buffer_add_oxi_tensor_meta(GstBuffer* buffer, GstOxiDType dtype, guint n_dims,
                                                 const gint64* shape, const gchar* role) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  g_return_val_if_fail(n_dims <= GST_OXI_TENSOR_MAX_DIMS, nullptr);
  auto* m = reinterpret_cast<GstOxiTensorMeta*>(
      gst_buffer_add_meta(buffer, gst_oxi_tensor_meta_get_info(), nullptr));
  if (!m) return nullptr;
  m->dtype = dtype;
  m->n_dims = n_dims;
  for (guint i = 0; i < n_dims; ++i) m->shape[i] = shape[i];
  m->role = g_strdup(role);
  return m;
}
