/* The GType of an element's enum property, registered on first use from any thread (the
 * thread-safe once that G_DEFINE_ENUM_TYPE would write out in each get_type function). */
#pragma once

#include <glib-object.h>

G_GNUC_INTERNAL GType oxi_enum_type(GType* type, const char* name, const GEnumValue* values);
