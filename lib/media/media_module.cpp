// The media module's exported table (media_module.h): each entry runs the FFmpeg code and turns
// whatever it throws into a message, so that no exception crosses the dlopen boundary.
#include "lib/media/media_module.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "lib/media/ffmpeg_audio.h"

namespace oxi::media {
namespace {

void write_error(const char* message, char* error, size_t error_size) {
  if (error == nullptr || error_size == 0) return;
  const size_t n = std::min(std::strlen(message), error_size - 1);
  std::memcpy(error, message, n);
  error[n] = '\0';
}

// Runs `work` (returning the samples) and hands its result to the sink; 0 on success.
template <typename Work>
int run(Work&& work, OxiSampleSink sink, void* sink_context, char* error, size_t error_size) {
  try {
    const std::vector<float> out = work();
    sink(sink_context, out.data(), out.size());
    return 0;
  } catch (const std::exception& e) {
    write_error(e.what(), error, error_size);
  } catch (...) {
    write_error("audio decoding: unknown error", error, error_size);
  }
  return 1;
}

int decode_file(const char* path, int sample_rate, OxiSampleSink sink, void* sink_context,
                char* error, size_t error_size) {
  return run([&] { return ffmpeg::decode_file(path, sample_rate); }, sink, sink_context, error,
             error_size);
}

int to_mono(const void* samples, size_t frames, int format, int channels, int rate, int out_rate,
            OxiSampleSink sink, void* sink_context, char* error, size_t error_size) {
  return run(
      [&] {
        return ffmpeg::to_mono(samples, frames, static_cast<SampleFormat>(format), channels, rate,
                               out_rate);
      },
      sink, sink_context, error, error_size);
}

constexpr OxiMediaModule kModule{OXI_MEDIA_MODULE_ABI, decode_file, to_mono};

}  // namespace
}  // namespace oxi::media

extern "C" __attribute__((visibility("default"))) const OxiMediaModule* oxi_media_module() {
  return &oxi::media::kModule;
}
