/* The samples of a mapped 16 kHz mono audio buffer as floats: F32LE copied, S16LE scaled by
 * 1/32768 (what lib/ and openai-whisper's decoding use), for elements that take either. */
#pragma once

#include <gst/gst.h>

#include <vector>

G_GNUC_INTERNAL void oxi_audio_samples_to_float(const GstMapInfo& map, bool is_s16,
                                                std::vector<float>& out);
