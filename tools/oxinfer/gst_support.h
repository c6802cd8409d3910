// GStreamer helpers of the commands that run pipelines in process (run, demo, bench pipeline).
#pragma once

#include <string>

namespace oxi::cli {

// gst_init, then makes the build tree's plugin visible to an oxinfer run from the build tree
// (an installed oxinfer finds the installed plugin through GStreamer's own search path).
// Only in builds with GStreamer.
void init_gstreamer();

// A string literal of a launch description: "..." with quotes and backslashes escaped.
std::string gst_quoted(const std::string& value);

}  // namespace oxi::cli
