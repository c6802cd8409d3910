#include "elements/enum_type.h"

GType oxi_enum_type(GType* type, const char* name, const GEnumValue* values) {
  if (g_once_init_enter(type)) g_once_init_leave(type, g_enum_register_static(name, values));
  return *type;
}
