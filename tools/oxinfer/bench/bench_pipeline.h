// What the oxiwhisper GStreamer element costs over calling lib/whisper directly, on the same
// audio and model: the library's Transcriber::transcribe on decoded samples, the element in a
// file pipeline (filesrc ! decodebin ! audioconvert ! audioresample ! oxiwhisper ! fakesink),
// and the element's live decoder fed from appsrc as fast as it accepts.
#pragma once

#include <string>
#include <vector>

namespace oxi::cli {
// oxinfer bench pipeline -m MODEL [--audio FILE] [--threads N] [--runs N] [--json]
int run_bench_pipeline(const std::vector<std::string>& argv);
}  // namespace oxi::cli
