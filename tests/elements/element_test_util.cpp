#include "tests/elements/element_test_util.h"

#include <utility>

namespace oxi::test {

bool load_oxinfer_plugin() {
  gst_init(nullptr, nullptr);
  GstRegistry* registry = gst_registry_get();
  return gst_registry_scan_path(registry, OXI_PLUGIN_DIR) ||
         gst_registry_find_plugin(registry, "oxinfer");
}

GstBuffer* text_buffer(const std::string& text, GstClockTime pts, GstClockTime duration) {
  GstBuffer* b = gst_buffer_new_memdup(text.data(), text.size());
  GST_BUFFER_PTS(b) = pts;
  GST_BUFFER_DURATION(b) = duration;
  return b;
}

std::string buffer_text(GstBuffer* buffer) {
  GstMapInfo map;
  gst_buffer_map(buffer, &map, GST_MAP_READ);
  std::string s(reinterpret_cast<const char*>(map.data), map.size);
  gst_buffer_unmap(buffer, &map);
  return s;
}

bool wait_for_eos(GstHarness* h) {
  while (GstEvent* e = gst_harness_pull_event(h)) {
    const bool eos = GST_EVENT_TYPE(e) == GST_EVENT_EOS;
    gst_event_unref(e);
    if (eos) return true;
  }
  return false;
}

BusError::BusError(BusError&& other) noexcept
    : error(std::exchange(other.error, nullptr)),
      message(std::move(other.message)),
      debug(std::move(other.debug)) {}

BusError::~BusError() {
  if (error) g_error_free(error);
}

std::optional<BusError> pop_bus_error(GstBus* bus, GstClockTime timeout) {
  GstMessage* m = gst_bus_timed_pop_filtered(bus, timeout, GST_MESSAGE_ERROR);
  if (!m) return std::nullopt;
  std::optional<BusError> out(std::in_place);
  gchar* debug = nullptr;
  gst_message_parse_error(m, &out->error, &debug);
  out->message = out->error->message;
  out->debug = debug ? debug : "";
  g_free(debug);
  gst_message_unref(m);
  return out;
}

GstMessageType wait_for_eos_or_error(GstElement* pipeline, GstClockTime timeout) {
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* m = gst_bus_timed_pop_filtered(
      bus, timeout, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  gst_object_unref(bus);
  if (!m) return GST_MESSAGE_UNKNOWN;
  const GstMessageType type = GST_MESSAGE_TYPE(m);
  gst_message_unref(m);
  return type;
}

}  // namespace oxi::test
