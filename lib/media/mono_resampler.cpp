#include "lib/media/mono_resampler.h"

#include <vector>

#include "lib/core/error.h"

namespace oxi::media {
namespace {
// swresample's own limit (SWR_CH_MAX is private to it).
constexpr int kMaxChannels = 64;
}  // namespace

MonoResampler::MonoResampler(const AVChannelLayout& in_layout, AVSampleFormat in_format,
                             int in_rate, int out_rate, std::string_view context)
    : context_(context), in_format_(in_format), in_rate_(in_rate) {
  const int channels = in_layout.nb_channels;
  if (channels <= 0 || channels > kMaxChannels) {
    throw Error(context_, "unsupported channel count " + std::to_string(channels));
  }
  if (in_rate <= 0 || out_rate <= 0) {
    throw Error(context_, "invalid sample rate " + std::to_string(in_rate) + " -> " +
                              std::to_string(out_rate));
  }
  // The mixing matrix below makes channel positions irrelevant, but swresample wants a layout
  // it understands: give unspecified ones the default layout of their channel count.
  if (in_layout.order == AV_CHANNEL_ORDER_UNSPEC) {
    av_channel_layout_default(&in_layout_.layout, channels);
  } else if (av_channel_layout_copy(&in_layout_.layout, &in_layout) < 0) {
    throw Error(context_, "cannot copy the channel layout");
  }

  SwrContext* raw = nullptr;
  AVChannelLayout mono = AV_CHANNEL_LAYOUT_MONO;  // FFmpeg 5.1 takes it non-const
  int err = swr_alloc_set_opts2(&raw, &mono, AV_SAMPLE_FMT_FLT, out_rate, &in_layout_.layout,
                                in_format, in_rate, 0, nullptr);
  swr_.reset(raw);
  if (err < 0) throw Error(context_, "cannot configure the resampler: " + av_error_text(err));
  const std::vector<double> matrix(static_cast<size_t>(channels), 1.0 / channels);
  err = swr_set_matrix(swr_.get(), matrix.data(), channels);
  if (err < 0) throw Error(context_, "cannot set the down-mix matrix: " + av_error_text(err));
  err = swr_init(swr_.get());
  if (err < 0) throw Error(context_, "cannot initialise the resampler: " + av_error_text(err));
}

bool MonoResampler::accepts(const AVChannelLayout& layout, AVSampleFormat format, int rate) const {
  if (format != in_format_ || rate != in_rate_) return false;
  if (layout.order == AV_CHANNEL_ORDER_UNSPEC)
    return layout.nb_channels == in_layout_.layout.nb_channels;
  return av_channel_layout_compare(&layout, &in_layout_.layout) == 0;
}

int MonoResampler::convert(const uint8_t* const* planes, int frames, std::vector<float>& out) {
  // swr_get_out_samples bounds the output of this call, so nothing stays buffered for lack of
  // space; passing no input (planes == nullptr) drains the filter's delay line.
  const int capacity = swr_get_out_samples(swr_.get(), frames);
  if (capacity < 0) throw Error(context_, "resampling failed: " + av_error_text(capacity));
  const size_t old_size = out.size();
  out.resize(old_size + static_cast<size_t>(capacity));
  auto* dst = reinterpret_cast<uint8_t*>(out.data() + old_size);
  const int produced =
      swr_convert(swr_.get(), &dst, capacity, const_cast<const uint8_t**>(planes), frames);
  if (produced < 0) {
    out.resize(old_size);
    throw Error(context_, "resampling failed: " + av_error_text(produced));
  }
  out.resize(old_size + static_cast<size_t>(produced));
  return produced;
}

void MonoResampler::push(const uint8_t* const* planes, int frames, std::vector<float>& out) {
  if (frames > 0) convert(planes, frames, out);
}

void MonoResampler::flush(std::vector<float>& out) {
  while (convert(nullptr, 0, out) > 0) {
  }
}

}  // namespace oxi::media
