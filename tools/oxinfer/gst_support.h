// GStreamer helpers of the commands that run pipelines in process (run, demo, bench pipeline).
#pragma once

#include <string>

#ifdef OXI_HAVE_GSTREAMER
#include <gst/gst.h>
#endif

namespace oxi::cli {

// gst_init, then makes the build tree's plugin visible to an oxinfer run from the build tree
// (an installed oxinfer finds the installed plugin through GStreamer's own search path).
// Only in builds with GStreamer.
void init_gstreamer();

#ifdef OXI_HAVE_GSTREAMER
// gst_parse_launch, throwing oxi::Error(context, GStreamer's message and the description)
// instead of returning a half-built pipeline.
GstElement* parse_launch(const std::string& description, const std::string& context);
#endif

// A string literal of a launch description: "..." with quotes and backslashes escaped.
std::string gst_quoted(const std::string& value);

}  // namespace oxi::cli
