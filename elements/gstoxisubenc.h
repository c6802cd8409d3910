/* oxisubenc: timed text in, SRT / WebVTT / JSON lines out, one cue per input buffer as soon as
 * it arrives (live captions reach the file within one buffer, not at EOS). */
#pragma once

#include <gst/gst.h>

#include <memory>

#include "lib/whisper/subtitles.h"

G_BEGIN_DECLS

#define GST_TYPE_OXI_SUBENC (gst_oxi_subenc_get_type())
G_DECLARE_FINAL_TYPE(GstOxiSubenc, gst_oxi_subenc, GST, OXI_SUBENC, GstElement)

typedef enum {
  GST_OXI_SUBENC_FORMAT_SRT = 0,
  GST_OXI_SUBENC_FORMAT_VTT = 1,
  GST_OXI_SUBENC_FORMAT_JSON = 2,
} GstOxiSubencFormat;

struct _GstOxiSubenc {
  GstElement parent;

  GstPad* sinkpad;
  GstPad* srcpad;

  /* properties, protected by the object lock */
  GstOxiSubencFormat format;
  guint max_line_length;
  guint max_lines;

  /* streaming state, used from the streaming thread only */
  GstSegment segment;
  gboolean header_sent;
  oxi::whisper::SubtitleWriter* writer; /* created at the first buffer, owned */
};

GST_ELEMENT_REGISTER_DECLARE(oxisubenc);

G_END_DECLS
