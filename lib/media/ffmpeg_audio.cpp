#include "lib/media/ffmpeg_audio.h"

#include <algorithm>
#include <optional>
#include <string>

#include "lib/core/error.h"
#include "lib/media/ffmpeg_handles.h"
#include "lib/media/mono_resampler.h"

namespace oxi::media::ffmpeg {
namespace {

AVSampleFormat av_format(SampleFormat format) {
  switch (format) {
    case SampleFormat::s16:
      return AV_SAMPLE_FMT_S16;
    case SampleFormat::s32:
      return AV_SAMPLE_FMT_S32;
    case SampleFormat::f32:
      return AV_SAMPLE_FMT_FLT;
    case SampleFormat::f64:
      return AV_SAMPLE_FMT_DBL;
    case SampleFormat::u8:
      return AV_SAMPLE_FMT_U8;
  }
  return AV_SAMPLE_FMT_NONE;
}

// Decodes one stream, feeding every frame through a resampler that is rebuilt whenever the
// stream changes format mid-way (some MP3 and Ogg files do).
class StreamDecoder {
 public:
  StreamDecoder(AVCodecContext* codec, int out_rate, std::string context)
      : codec_(codec), out_rate_(out_rate), context_(std::move(context)), frame_(av_frame_alloc()) {
    if (!frame_) throw Error(context_, "out of memory allocating a frame");
  }

  // Sends one packet (nullptr: end of stream) and converts every frame it yields. A packet the
  // decoder rejects as invalid data is skipped, as FFmpeg's own tools do.
  void decode(const AVPacket* packet, std::vector<float>& out) {
    int err = avcodec_send_packet(codec_, packet);
    if (err == AVERROR_INVALIDDATA) {
      ++skipped_packets_;
      return;
    }
    if (err < 0 && err != AVERROR_EOF) {
      throw Error(context_, "decoding failed: " + av_error_text(err));
    }
    for (;;) {
      err = avcodec_receive_frame(codec_, frame_.get());
      if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) break;
      if (err == AVERROR_INVALIDDATA) {
        ++skipped_packets_;
        continue;
      }
      if (err < 0) throw Error(context_, "decoding failed: " + av_error_text(err));
      convert_frame(out);
      av_frame_unref(frame_.get());
    }
  }

  void finish(std::vector<float>& out) {
    if (resampler_) resampler_->flush(out);
  }

  size_t skipped_packets() const { return skipped_packets_; }

 private:
  void convert_frame(std::vector<float>& out) {
    const AVFrame& f = *frame_;
    const auto format = static_cast<AVSampleFormat>(f.format);
    if (resampler_ && !resampler_->accepts(f.ch_layout, format, f.sample_rate)) {
      resampler_->flush(out);
      resampler_.reset();
    }
    if (!resampler_) resampler_.emplace(f.ch_layout, format, f.sample_rate, out_rate_, context_);
    resampler_->push(f.extended_data, f.nb_samples, out);
  }

  AVCodecContext* codec_;
  int out_rate_;
  std::string context_;
  FramePtr frame_;
  std::optional<MonoResampler> resampler_;
  size_t skipped_packets_ = 0;
};

}  // namespace

std::vector<float> decode_file(const std::string& path, int sample_rate) {
  const std::string& context = path;
  if (sample_rate <= 0)
    throw Error(context, "invalid output sample rate " + std::to_string(sample_rate));

  AVFormatContext* raw_format = nullptr;
  int err = avformat_open_input(&raw_format, context.c_str(), nullptr, nullptr);
  if (err < 0) throw Error(context, "cannot open audio file: " + av_error_text(err));
  const FormatContextPtr format(raw_format);
  err = avformat_find_stream_info(format.get(), nullptr);
  if (err < 0) throw Error(context, "cannot read stream information: " + av_error_text(err));

  const AVCodec* decoder = nullptr;
  const int stream_index =
      av_find_best_stream(format.get(), AVMEDIA_TYPE_AUDIO, -1, -1, &decoder, 0);
  if (stream_index == AVERROR_STREAM_NOT_FOUND) throw Error(context, "no audio stream");
  if (stream_index < 0 || !decoder) {
    throw Error(context, "no decoder for the audio stream's codec");
  }
  const AVStream* stream = format->streams[stream_index];

  const CodecContextPtr codec(avcodec_alloc_context3(decoder));
  if (!codec) throw Error(context, "out of memory allocating a decoder");
  err = avcodec_parameters_to_context(codec.get(), stream->codecpar);
  if (err < 0) throw Error(context, "bad codec parameters: " + av_error_text(err));
  codec->pkt_timebase = stream->time_base;
  err = avcodec_open2(codec.get(), decoder, nullptr);
  if (err < 0) {
    throw Error(context, std::string("cannot open the ") + decoder->name +
                             " decoder: " + av_error_text(err));
  }

  const PacketPtr packet(av_packet_alloc());
  if (!packet) throw Error(context, "out of memory allocating a packet");
  StreamDecoder stream_decoder(codec.get(), sample_rate, context);
  std::vector<float> out;
  while ((err = av_read_frame(format.get(), packet.get())) >= 0) {
    if (packet->stream_index == stream_index) {
      try {
        stream_decoder.decode(packet.get(), out);
      } catch (...) {
        av_packet_unref(packet.get());
        throw;
      }
    }
    av_packet_unref(packet.get());
  }
  if (err != AVERROR_EOF) throw Error(context, "read error: " + av_error_text(err));
  stream_decoder.decode(nullptr, out);
  stream_decoder.finish(out);
  if (out.empty() && stream_decoder.skipped_packets() > 0) {
    throw Error(context, "no decodable audio (" + std::to_string(stream_decoder.skipped_packets()) +
                             " invalid packets)");
  }
  return out;
}

std::vector<float> to_mono(const void* samples, size_t frames, SampleFormat format, int channels,
                           int rate, int out_rate) {
  const std::string context = "PCM input";
  if (channels <= 0) throw Error(context, "invalid channel count " + std::to_string(channels));
  if (rate <= 0) throw Error(context, "invalid sample rate " + std::to_string(rate));
  if (frames == 0) return {};
  if (!samples) throw Error(context, "null sample pointer");
  if (out_rate <= 0) throw Error(context, "invalid output sample rate " + std::to_string(out_rate));

  OwnedChannelLayout layout;
  av_channel_layout_default(&layout.layout, channels);
  MonoResampler resampler(layout.layout, av_format(format), rate, out_rate, context);

  std::vector<float> out;
  out.reserve(frames * static_cast<size_t>(out_rate) / static_cast<size_t>(rate) + 64);
  // swresample counts frames in int: feed large inputs in pieces.
  const size_t frame_bytes = bytes_per_sample(format) * static_cast<size_t>(channels);
  constexpr size_t kChunkFrames = size_t{1} << 20;
  const auto* bytes = static_cast<const uint8_t*>(samples);
  for (size_t done = 0; done < frames; done += kChunkFrames) {
    const size_t n = std::min(kChunkFrames, frames - done);
    const uint8_t* planes[1] = {bytes + done * frame_bytes};
    resampler.push(planes, static_cast<int>(n), out);
  }
  resampler.flush(out);
  return out;
}

}  // namespace oxi::media::ffmpeg
