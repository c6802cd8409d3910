// Any PCM layout, format and rate to mono float32 at one output rate, with libswresample.
// Channels are averaged with an explicit mixing matrix (each input channel weighted 1/C), so a
// stereo file with two identical channels keeps its level; swresample's default matrix would
// raise it by 3 dB for float output.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/media/ffmpeg_handles.h"

namespace oxi::media {

class MonoResampler {
 public:
  // `context` (a file name or "PCM input") prefixes error messages.
  MonoResampler(const AVChannelLayout& in_layout, AVSampleFormat in_format, int in_rate,
                int out_rate, std::string_view context);
  MonoResampler(const MonoResampler&) = delete;
  MonoResampler& operator=(const MonoResampler&) = delete;

  // Whether input with this layout, format and rate can be pushed without a new resampler.
  bool accepts(const AVChannelLayout& layout, AVSampleFormat format, int rate) const;

  // Converts `frames` frames (`planes` as in AVFrame::extended_data: one pointer for interleaved
  // formats, one per channel for planar ones) and appends the output to `out`.
  void push(const uint8_t* const* planes, int frames, std::vector<float>& out);
  // Appends the samples still held in the filter's delay line.
  void flush(std::vector<float>& out);

 private:
  // Returns the number of samples appended.
  int convert(const uint8_t* const* planes, int frames, std::vector<float>& out);

  std::string context_;
  OwnedChannelLayout in_layout_;
  AVSampleFormat in_format_ = AV_SAMPLE_FMT_NONE;
  int in_rate_ = 0;
  SwrPtr swr_;
};

}  // namespace oxi::media
