/* oxisubenc: timed text in, SRT / WebVTT / JSON lines out as it arrives: one cue per input
 * buffer, or (merge=true) consecutive words merged into cues, each pushed at most 0.9 s after its
 * last word arrived in a live pipeline (live captions reach the file as they are committed, not
 * at EOS). */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_OXI_SUBENC (gst_oxi_subenc_get_type())
G_DECLARE_FINAL_TYPE(GstOxiSubenc, gst_oxi_subenc, GST, OXI_SUBENC, GstElement)

typedef enum {
  GST_OXI_SUBENC_FORMAT_SRT = 0,
  GST_OXI_SUBENC_FORMAT_VTT = 1,
  GST_OXI_SUBENC_FORMAT_JSON = 2,
} GstOxiSubencFormat;

/* The C++ state (writer, merger, pending-cue timer), defined in gstoxisubenc.cpp. */
typedef struct _GstOxiSubencState GstOxiSubencState;

struct _GstOxiSubenc {
  GstElement parent;

  GstPad* sinkpad;
  GstPad* srcpad;

  /* properties, protected by the object lock */
  GstOxiSubencFormat format;
  guint max_line_length;
  guint max_lines;
  gboolean merge;
  guint max_cue_duration; /* ms */
  guint max_pause;        /* ms */

  /* owned; its mutex guards what the streaming thread and the source pad's task (which pushes
   * held cues when their time is up) share */
  GstOxiSubencState* state;
};

GST_ELEMENT_REGISTER_DECLARE(oxisubenc);

G_END_DECLS
