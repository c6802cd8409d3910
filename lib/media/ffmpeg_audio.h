// The FFmpeg side of audio_decoder.h, built into the media module (media_module.h), never into
// the core library: decoding with libavformat / libavcodec and conversion with libswresample.
// Errors are oxi::Error, which the module's entry points turn into messages.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "lib/media/audio_decoder.h"  // SampleFormat

namespace oxi::media::ffmpeg {

// decode_audio_file's work: the best audio stream of `path`, mono at `sample_rate` Hz.
std::vector<float> decode_file(const std::string& path, int sample_rate);

// to_mono_16k's work, at any output rate.
std::vector<float> to_mono(const void* samples, size_t frames, SampleFormat format, int channels,
                           int rate, int out_rate);

}  // namespace oxi::media::ffmpeg
