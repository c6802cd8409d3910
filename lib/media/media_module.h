// The boundary between the core library and the FFmpeg media module (liboxi_media_ffmpeg.so).
//
// FFmpeg and the libraries it pulls in (codecs, TLS, XML, SVG: ~120 shared objects on Debian
// 12) are loaded only when a file is first decoded: linked into every binary, they were mapped
// and relocated at every start and kept ~16 MB resident in processes that never decode audio
// (an LLM generating text measured 29 MB resident before loading its model). audio_decoder.cpp
// loads the module with dlopen, as backends/ loads GPU drivers, and asks it for this table; plain
// C types only, so that nothing but these calls crosses it. Results come back through a sink;
// errors as one-line messages (what oxi::Error said inside the module).
#pragma once

#include <stddef.h>

extern "C" {

// Raised whenever the table below changes, so that a stale module is refused, not misread.
#define OXI_MEDIA_MODULE_ABI 1
// The module's one exported symbol: const OxiMediaModule* oxi_media_module(void).
#define OXI_MEDIA_MODULE_ENTRY "oxi_media_module"

// Receives a call's output samples (once, all of them; the pointer is valid during the call).
typedef void (*OxiSampleSink)(void* context, const float* samples, size_t count);

struct OxiMediaModule {
  int abi;  // OXI_MEDIA_MODULE_ABI
  // decode_audio_file (audio_decoder.h). 0 on success; otherwise nonzero with a message of at
  // most error_size - 1 bytes written (NUL-terminated) to error.
  int (*decode_file)(const char* path, int sample_rate, OxiSampleSink sink, void* sink_context,
                     char* error, size_t error_size);
  // to_mono_16k at `out_rate`; `format` is a SampleFormat's value.
  int (*to_mono)(const void* samples, size_t frames, int format, int channels, int rate,
                 int out_rate, OxiSampleSink sink, void* sink_context, char* error,
                 size_t error_size);
};

typedef const OxiMediaModule* (*OxiMediaModuleEntry)(void);

}  // extern "C"
