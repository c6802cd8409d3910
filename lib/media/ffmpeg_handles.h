// Owning handles for the FFmpeg objects the media code uses (each freed by its own FFmpeg
// function), and FFmpeg error codes as text.
#pragma once

#include <memory>
#include <string>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libswresample/swresample.h>
}

namespace oxi::media {

struct FormatContextCloser {
  void operator()(AVFormatContext* c) const noexcept { avformat_close_input(&c); }
};
struct CodecContextFreer {
  void operator()(AVCodecContext* c) const noexcept { avcodec_free_context(&c); }
};
struct PacketFreer {
  void operator()(AVPacket* p) const noexcept { av_packet_free(&p); }
};
struct FrameFreer {
  void operator()(AVFrame* f) const noexcept { av_frame_free(&f); }
};
struct SwrFreer {
  void operator()(SwrContext* s) const noexcept { swr_free(&s); }
};

using FormatContextPtr = std::unique_ptr<AVFormatContext, FormatContextCloser>;
using CodecContextPtr = std::unique_ptr<AVCodecContext, CodecContextFreer>;
using PacketPtr = std::unique_ptr<AVPacket, PacketFreer>;
using FramePtr = std::unique_ptr<AVFrame, FrameFreer>;
using SwrPtr = std::unique_ptr<SwrContext, SwrFreer>;

// An AVChannelLayout value that releases its custom channel map (if any) when destroyed.
struct OwnedChannelLayout {
  AVChannelLayout layout{};
  OwnedChannelLayout() = default;
  ~OwnedChannelLayout() { av_channel_layout_uninit(&layout); }
  OwnedChannelLayout(const OwnedChannelLayout&) = delete;
  OwnedChannelLayout& operator=(const OwnedChannelLayout&) = delete;
};

inline std::string av_error_text(int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, buf, sizeof(buf));
  return buf;
}

}  // namespace oxi::media
