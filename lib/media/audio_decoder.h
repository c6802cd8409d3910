// Audio in, 16 kHz mono float32 out: what Whisper and the VAD consume.
//
// Files are decoded with FFmpeg (any container and codec it can open: WAV, MP3, FLAC, Ogg,
// the first audio stream of a video, ...). Channels are averaged to mono and the rate is
// converted with libswresample's default polyphase filter. Samples are in [-1, 1] for integer
// sources; float sources keep their values.
#pragma once

#include <cstddef>
#include <filesystem>
#include <vector>

namespace oxi::media {

constexpr int kWhisperSampleRate = 16000;

// Interleaved PCM sample encodings accepted by to_mono_16k. u8 is unsigned with 128 as zero.
enum class SampleFormat { s16, s32, f32, f64, u8 };

constexpr size_t bytes_per_sample(SampleFormat format) noexcept {
  switch (format) {
    case SampleFormat::s16:
      return 2;
    case SampleFormat::s32:
    case SampleFormat::f32:
      return 4;
    case SampleFormat::f64:
      return 8;
    case SampleFormat::u8:
      return 1;
  }
  return 0;
}

// Decodes the best audio stream of `path` to mono at `sample_rate` Hz. Throws oxi::Error
// naming the file when it cannot be opened, has no audio stream, or fails to decode.
std::vector<float> decode_audio_file(const std::filesystem::path& path,
                                     int sample_rate = kWhisperSampleRate);

// Converts `frames` interleaved frames of `channels` channels at `rate` Hz (frames *
// channels samples of `format` at `samples`) to 16 kHz mono. Throws oxi::Error on bad
// arguments.
std::vector<float> to_mono_16k(const void* samples, size_t frames, SampleFormat format,
                               int channels, int rate);

}  // namespace oxi::media
