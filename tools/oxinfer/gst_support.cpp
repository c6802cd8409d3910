#include "tools/oxinfer/gst_support.h"

#ifdef OXI_HAVE_GSTREAMER
#include <gst/gst.h>
#endif

namespace oxi::cli {

#ifdef OXI_HAVE_GSTREAMER
void init_gstreamer() {
  gst_init(nullptr, nullptr);
#ifdef OXI_BUILD_PLUGIN_DIR
  GstRegistry* registry = gst_registry_get();
  if (GstPlugin* plugin = gst_registry_find_plugin(registry, "oxinfer")) {
    gst_object_unref(plugin);
    return;
  }
  if (g_file_test(OXI_BUILD_PLUGIN_DIR, G_FILE_TEST_IS_DIR))
    gst_registry_scan_path(registry, OXI_BUILD_PLUGIN_DIR);
#endif
}
#endif

std::string gst_quoted(const std::string& value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace oxi::cli
