#include "tools/oxinfer/gst_support.h"

#include "lib/core/error.h"

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

GstElement* parse_launch(const std::string& description, const std::string& context) {
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(description.c_str(), &error);
  if (error) {
    const std::string message = error->message;
    g_error_free(error);
    if (pipeline) gst_object_unref(pipeline);
    throw Error(context, message + "\n  in: " + description);
  }
  return pipeline;
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
