// Helpers shared by the element and pipeline tests: loading the plugin from the build tree,
// text buffers in and out, and the EOS and error messages tests wait for.
#pragma once

#include <gst/check/gstharness.h>
#include <gst/gst.h>

#include <optional>
#include <string>

namespace oxi::test {

// gst_init, then the oxinfer plugin from the build tree (OXI_PLUGIN_DIR); false if not found.
bool load_oxinfer_plugin();

// A text buffer over [pts, pts + duration).
GstBuffer* text_buffer(const std::string& text, GstClockTime pts, GstClockTime duration);

// The bytes of `buffer` as a string.
std::string buffer_text(GstBuffer* buffer);

// Pulls events from the harness until EOS (each pull waits up to a minute); false if none.
bool wait_for_eos(GstHarness* h);

// An error message's fields.
struct BusError {
  GError* error = nullptr;
  std::string message;
  std::string debug;
  BusError() = default;
  BusError(const BusError&) = delete;
  BusError(BusError&& other) noexcept;
  ~BusError();
  bool matches(GQuark domain, gint code) const { return g_error_matches(error, domain, code); }
};

// The first error message on `bus` (waiting up to `timeout`), or nullopt.
std::optional<BusError> pop_bus_error(GstBus* bus, GstClockTime timeout = 0);

// The pipeline's EOS or error message, waiting up to `timeout`: GST_MESSAGE_EOS,
// GST_MESSAGE_ERROR, or GST_MESSAGE_UNKNOWN when neither came.
GstMessageType wait_for_eos_or_error(GstElement* pipeline, GstClockTime timeout);

}  // namespace oxi::test
