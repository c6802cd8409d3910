/* The gstoxinfer plugin: registers every oxinfer element. */
#include <gst/gst.h>

#include "elements/gstoxillm.h"
#include "elements/gstoxisubenc.h"
#include "elements/gstoxivad.h"
#include "elements/gstoxiwhisper.h"

static gboolean plugin_init(GstPlugin* plugin) {
  gboolean ok = FALSE;
  ok |= GST_ELEMENT_REGISTER(oxisubenc, plugin);
  ok |= GST_ELEMENT_REGISTER(oxivad, plugin);
  ok |= GST_ELEMENT_REGISTER(oxiwhisper, plugin);
  ok |= GST_ELEMENT_REGISTER(oxillm, plugin);
  return ok;
}

#define PACKAGE "oxinfer"
GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, oxinfer,
                  "Local AI inference stages: speech to text, LLMs, subtitles", plugin_init,
                  OXI_VERSION, "MIT", "oxinfer", "https://github.com/oxinfer/oxinfer")
