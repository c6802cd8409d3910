/* Element properties kept as plain fields of the instance struct, guarded by the object lock.
 * A table of (property id, field offset) stands for the set_property / get_property switch
 * every element would otherwise spell out; the field's C type follows its GParamSpec's value
 * type (string: gchar*, boolean: gboolean, enum: the enum, int, uint, int64, float, double). */
#pragma once

#include <gst/gst.h>

#include <span>

struct OxiPropertyField {
  guint prop_id;
  glong offset; /* G_STRUCT_OFFSET of the field in the instance struct */
};

#define OXI_PROPERTY_FIELD(prop_id, Type, member) \
  OxiPropertyField {                              \
    (prop_id), G_STRUCT_OFFSET(Type, member)      \
  }

/* Every field set to its property's default (instance init; strings are copied). */
G_GNUC_INTERNAL void oxi_property_fields_init(GObject* object,
                                              std::span<const OxiPropertyField> fields);

/* Frees the string fields (finalize). */
G_GNUC_INTERNAL void oxi_property_fields_free(GObject* object,
                                              std::span<const OxiPropertyField> fields);

/* Stores `value` in the field of `prop_id` (under the object lock), or returns FALSE when the
 * table has no such property. */
G_GNUC_INTERNAL gboolean oxi_property_fields_set(GObject* object,
                                                 std::span<const OxiPropertyField> fields,
                                                 guint prop_id, const GValue* value,
                                                 GParamSpec* pspec);

/* Reads the field of `prop_id` into `value` (under the object lock), or returns FALSE. */
G_GNUC_INTERNAL gboolean oxi_property_fields_get(GObject* object,
                                                 std::span<const OxiPropertyField> fields,
                                                 guint prop_id, GValue* value, GParamSpec* pspec);
