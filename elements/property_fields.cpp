#include "elements/property_fields.h"

namespace {

const OxiPropertyField* find_field(std::span<const OxiPropertyField> fields, guint prop_id) {
  for (const OxiPropertyField& f : fields)
    if (f.prop_id == prop_id) return &f;
  return nullptr;
}

// How a field of each value type is stored and read; strings are copied (the field owns its).
struct FieldCodec {
  GType type;
  void (*store)(gpointer field, const GValue* value);
  void (*load)(gconstpointer field, GValue* value);
};

#define OXI_FIELD_CODEC(gtype, ctype, get, set)                                   \
  FieldCodec {                                                                    \
    gtype, [](gpointer f, const GValue* v) { *static_cast<ctype*>(f) = get(v); }, \
        [](gconstpointer f, GValue* v) { set(v, *static_cast<const ctype*>(f)); } \
  }

void store_string(gpointer f, const GValue* v) {
  g_free(*static_cast<gchar**>(f));
  *static_cast<gchar**>(f) = g_value_dup_string(v);
}

void load_string(gconstpointer f, GValue* v) {
  g_value_set_string(v, *static_cast<gchar* const*>(f));
}

const FieldCodec kCodecs[] = {
    {G_TYPE_STRING, store_string, load_string},
    OXI_FIELD_CODEC(G_TYPE_BOOLEAN, gboolean, g_value_get_boolean, g_value_set_boolean),
    OXI_FIELD_CODEC(G_TYPE_ENUM, gint, g_value_get_enum, g_value_set_enum),
    OXI_FIELD_CODEC(G_TYPE_INT, gint, g_value_get_int, g_value_set_int),
    OXI_FIELD_CODEC(G_TYPE_UINT, guint, g_value_get_uint, g_value_set_uint),
    OXI_FIELD_CODEC(G_TYPE_INT64, gint64, g_value_get_int64, g_value_set_int64),
    OXI_FIELD_CODEC(G_TYPE_FLOAT, gfloat, g_value_get_float, g_value_set_float),
    OXI_FIELD_CODEC(G_TYPE_DOUBLE, gdouble, g_value_get_double, g_value_set_double),
};

const FieldCodec& codec(GParamSpec* pspec) {
  const GType type = G_TYPE_FUNDAMENTAL(G_PARAM_SPEC_VALUE_TYPE(pspec));
  for (const FieldCodec& c : kCodecs)
    if (c.type == type) return c;
  g_error("property '%s': property_fields stores no %s", pspec->name, g_type_name(type));
}

// The caller holds the object lock, or the object is not shared yet (init).
void store(GObject* object, const OxiPropertyField& f, const GValue* value, GParamSpec* pspec) {
  codec(pspec).store(G_STRUCT_MEMBER_P(object, f.offset), value);
}

void load(GObject* object, const OxiPropertyField& f, GValue* value, GParamSpec* pspec) {
  codec(pspec).load(G_STRUCT_MEMBER_P(object, f.offset), value);
}

// The element's own spec for `prop_id`: ids are per class, so a parent's property (GstObject's
// "name" is its id 1 too) must not match.
GParamSpec* own_pspec(GObject* object, guint prop_id) {
  guint n = 0;
  GParamSpec** specs = g_object_class_list_properties(G_OBJECT_GET_CLASS(object), &n);
  GParamSpec* found = nullptr;
  for (guint i = 0; i < n && !found; ++i)
    if (specs[i]->owner_type == G_OBJECT_TYPE(object) && specs[i]->param_id == prop_id)
      found = specs[i];
  g_free(specs);
  return found;
}

}  // namespace

void oxi_property_fields_init(GObject* object, std::span<const OxiPropertyField> fields) {
  for (const OxiPropertyField& f : fields) {
    GParamSpec* pspec = own_pspec(object, f.prop_id);
    g_return_if_fail(pspec != nullptr);
    store(object, f, g_param_spec_get_default_value(pspec), pspec);
  }
}

void oxi_property_fields_free(GObject* object, std::span<const OxiPropertyField> fields) {
  for (const OxiPropertyField& f : fields) {
    // Aliases share a field: each string is freed once.
    gchar** field = static_cast<gchar**>(G_STRUCT_MEMBER_P(object, f.offset));
    GParamSpec* pspec = own_pspec(object, f.prop_id);
    if (pspec && G_PARAM_SPEC_VALUE_TYPE(pspec) == G_TYPE_STRING) g_clear_pointer(field, g_free);
  }
}

gboolean oxi_property_fields_set(GObject* object, std::span<const OxiPropertyField> fields,
                                 guint prop_id, const GValue* value, GParamSpec* pspec) {
  const OxiPropertyField* f = find_field(fields, prop_id);
  if (!f) return FALSE;
  GST_OBJECT_LOCK(object);
  store(object, *f, value, pspec);
  GST_OBJECT_UNLOCK(object);
  return TRUE;
}

gboolean oxi_property_fields_get(GObject* object, std::span<const OxiPropertyField> fields,
                                 guint prop_id, GValue* value, GParamSpec* pspec) {
  const OxiPropertyField* f = find_field(fields, prop_id);
  if (!f) return FALSE;
  GST_OBJECT_LOCK(object);
  load(object, *f, value, pspec);
  GST_OBJECT_UNLOCK(object);
  return TRUE;
}
