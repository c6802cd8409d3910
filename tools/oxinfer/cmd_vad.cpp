// oxinfer vad FILE -m MODEL: speech segments of an audio file with Silero VAD v5, cut as the
// authors' get_speech_timestamps cuts them.
//
// Output: one line per segment, start and end in seconds ("0.290 2.110"); with --json exactly
// one JSON object {"segments": [[start_sample, end_sample], ...], "probs": [...]} (16 kHz sample
// indices, one probability per 512-sample window) — an interface other tools read: keep it.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/core/error.h"
#include "lib/hub/hub.h"
#include "lib/media/audio_decoder.h"
#include "lib/vad/vad_stream.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/commands.h"

namespace oxi::cli {
namespace {

int duration_ms(const ParsedArgs& args, const std::string& name, int fallback) {
  const long long v = args.get_int(name, fallback);
  if (v < 0 || v > 3600 * 1000) throw UsageError("--" + name + " must be within 0 .. 3600000");
  return static_cast<int>(v);
}

}  // namespace

int run_vad(const Argv& argv) {
  ArgParser p(
      "vad",
      "oxinfer vad FILE -m MODEL [--json] [--threshold X] [--min-silence-ms N] "
      "[--min-speech-ms N] [--speech-pad-ms N]",
      "Find the speech in an audio or video file (any format FFmpeg reads) with\n"
      "Silero VAD v5. Prints one line per speech segment, its start and end in seconds\n"
      "(\"0.290 2.110\"); --json prints {\"segments\": [[start, end], ...], \"probs\": [...]}\n"
      "with 16 kHz sample indices and one speech probability per 32 ms (512 samples).\n"
      "MODEL: silero_vad_16k.safetensors, a directory holding it, or a Hub repo id.");
  p.option("model", "MODEL", "Silero VAD model: .safetensors file, directory or Hub repo id", "m");
  p.flag("json", "print segments (sample indices) and probabilities as one JSON object");
  p.option("threshold", "X",
           "speech starts at this probability (default 0.5); it ends below X - 0.15");
  p.option("min-silence-ms", "N", "silence that ends a segment (default 100)");
  p.option("min-speech-ms", "N", "drop segments not longer than this (default 250)");
  p.option("speech-pad-ms", "N", "padding added on each side of a segment (default 30)");
  const ParsedArgs args = p.parse(argv);

  const auto model_arg = args.get("model");
  if (!model_arg) throw UsageError("-m MODEL is required");
  if (args.positional().size() != 1) throw UsageError("expected one audio FILE");

  vad::SegmentParams params;
  const double threshold = args.get_double("threshold", params.threshold);
  if (!(threshold >= 0.0 && threshold <= 1.0))
    throw UsageError("--threshold must be within [0, 1]");
  params.threshold = static_cast<float>(threshold);
  params.min_silence_ms = duration_ms(args, "min-silence-ms", params.min_silence_ms);
  params.min_speech_ms = duration_ms(args, "min-speech-ms", params.min_speech_ms);
  params.speech_pad_ms = duration_ms(args, "speech-pad-ms", params.speech_pad_ms);

  const auto model =
      vad::SileroVadModel::load_spec(*model_arg, hub::HubOptions::from_environment());
  const std::vector<float> samples =
      media::decode_audio_file(args.positional().front(), vad::kSampleRate);
  const vad::SpeechDetection detection = vad::detect_speech(model, samples, params);

  std::string out;
  if (args.flag("json")) {
    nlohmann::ordered_json j;
    j["segments"] = nlohmann::ordered_json::array();
    for (const vad::SpeechSegment& s : detection.segments)
      j["segments"].push_back({s.start, s.end});
    j["probs"] = detection.probs;
    out = j.dump() + "\n";
  } else {
    char line[64];
    for (const vad::SpeechSegment& s : detection.segments) {
      std::snprintf(line, sizeof(line), "%.3f %.3f\n",
                    static_cast<double>(s.start) / vad::kSampleRate,
                    static_cast<double>(s.end) / vad::kSampleRate);
      out += line;
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace oxi::cli
