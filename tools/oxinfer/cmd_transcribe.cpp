// oxinfer transcribe FILE... -m MODEL: speech to text (or subtitles) with a Whisper model,
// openai-whisper's transcribe() on lib/whisper's Transcriber.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_backend.h"
#include "lib/core/error.h"
#include "lib/hub/hub.h"
#include "lib/media/audio_decoder.h"
#include "lib/whisper/subtitles.h"
#include "lib/whisper/transcriber.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/commands.h"

namespace oxi::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void write_bytes(const fs::path& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) throw Error(path.string(), "cannot write");
}

// Text output: one line per segment, with "[start --> end]" when asked.
std::string format_text(const whisper::Transcript& t, bool timestamps) {
  if (!timestamps) return whisper::to_text(t);
  std::string out;
  for (const whisper::Segment& s : t.segments) {
    std::string_view text = s.text;
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    if (text.empty()) continue;
    out.append("[").append(whisper::format_timestamp(s.t0, '.')).append(" --> ");
    out.append(whisper::format_timestamp(s.t1, '.')).append("]  ").append(text).append("\n");
  }
  return out;
}

std::string extension_of(const std::string& format) {
  return format == "text" ? "txt" : format;
}

}  // namespace

int run_transcribe(const Argv& argv) {
  ArgParser p("transcribe",
              "oxinfer transcribe FILE... -m MODEL [--language xx|auto] [--translate] "
              "[--timestamps|--no-timestamps] [--word-timestamps] [--format text|json|srt|vtt] "
              "[--initial-prompt T] [--fallback] [--condition-on-prev] [--threads N] "
              "[--quant q8|q4] [--kv-cache f32|f16] [-o OUT]",
              "Transcribe audio or video files (any format FFmpeg reads) with a Whisper model.\n"
              "MODEL: a Hugging Face directory, an OpenAI .pt, a whisper.cpp ggml .bin, or a\n"
              "Hub repo id. With several files, OUT is a directory (default: the current one,\n"
              "one FILE-stem.EXT per input); with one file, OUT is the output file (default:\n"
              "standard output).");
  p.option("model", "MODEL", "Whisper model: path or Hub repo id", "m");
  p.option("language", "xx|auto", "spoken language code, or auto to detect (default auto)", "l");
  p.flag("translate", "translate to English (multilingual models)");
  p.flag("timestamps",
         "decode timestamp tokens: segments timed by the model (default for srt and vtt; "
         "otherwise one segment per window); text output shows [start --> end]");
  p.flag("no-timestamps", "no timestamp tokens, also for srt and vtt (one cue per window)");
  p.flag("word-timestamps", "word-level timestamps (JSON words, subtitle cue timing)");
  p.option("format", "FMT", "text, json, srt or vtt (default text)", "f");
  p.option("initial-prompt", "T", "text that precedes the first window (names, spelling)");
  p.flag("fallback", "retry failed windows at temperatures 0.2 .. 1.0 (openai's default)");
  p.flag("condition-on-prev", "use each window's text as the next window's prompt");
  p.threads_option();
  p.option("quant", "q8|q4", "re-quantize the decoder at load");
  p.option("kv-cache", "f32|f16",
           "element type of the decoder's KV caches (default f32, the reference's arithmetic; "
           "f16 halves their memory, as whisper.cpp keeps them)");
  p.option("output", "OUT", "output file (one input) or directory (several)", "o");
  p.option("dump-mel", "F", "write the first window's log-mel (float32 n_mels x n_frames)");
  p.option("dump-logits", "F", "write the raw logits (float32 n_vocab) of the first step");
  p.flag("show-tokens", "print each window's generated token ids on stderr");
  p.option("seed", "N", "seed for sampling at temperatures > 0 (default 0)");
  const ParsedArgs args = p.parse(argv);

  const auto model_arg = args.get("model");
  if (!model_arg) throw UsageError("-m MODEL is required");
  const std::vector<std::string>& files = args.positional();
  if (files.empty()) throw UsageError("expected at least one audio FILE");
  const std::string format = args.get_or("format", "text");
  if (format != "text" && format != "json" && format != "srt" && format != "vtt")
    throw UsageError("--format must be text, json, srt or vtt");
  const long long threads = args.get_int("threads", 0);
  if (threads < 0 || threads > 4096) throw UsageError("--threads must be at least 1");

  whisper::LoadOptions load;
  if (const auto q = args.get("quant")) {
    if (*q == "q8" || *q == "q8_0")
      load.quant = kernels::DType::Q8_0;
    else if (*q == "q4" || *q == "q4_0")
      load.quant = kernels::DType::Q4_0;
    else
      throw UsageError("--quant must be q8 or q4");
  }

  const std::string kv_cache = args.get_or("kv-cache", "f32");
  if (kv_cache != "f32" && kv_cache != "f16") throw UsageError("--kv-cache must be f32 or f16");

  whisper::TranscribeOptions options;
  options.language = args.get_or("language", "auto");
  // Subtitles want segments timed by the model, as openai-whisper and whisper.cpp make them.
  options.timestamps = !args.flag("no-timestamps") &&
                       (args.flag("timestamps") || format == "srt" || format == "vtt");
  options.translate = args.flag("translate");
  options.word_timestamps = args.flag("word-timestamps");
  options.initial_prompt = args.get_or("initial-prompt", "");
  options.condition_on_previous_text = args.flag("condition-on-prev");
  if (args.flag("fallback")) options.temperatures = {0.0f, 0.2f, 0.4f, 0.6f, 0.8f, 1.0f};
  options.seed = static_cast<uint64_t>(args.get_int("seed", 0));

  const auto t_load = Clock::now();
  const fs::path model_path = hub::resolve_model(*model_arg, hub::HubOptions::from_environment());
  const auto model = whisper::WhisperModel::load(model_path, load);
  const double load_ms = ms_since(t_load);
  const auto backend = backends::make_cpu_backend(static_cast<int>(threads));
  whisper::Transcriber transcriber(model, *backend);
  transcriber.set_kv_cache(kv_cache == "f16" ? kernels::DType::F16 : kernels::DType::F32);
  if (args.flag("show-tokens")) {
    transcriber.set_window_callback([&](const whisper::WindowResult& r) {
      std::string line = "generated tokens:";
      for (int32_t t : r.tokens) line.append(" ").append(std::to_string(t));
      if (r.ended) line.append(" ").append(std::to_string(model->vocab().eot));
      std::fprintf(stderr, "%s\n", line.c_str());
    });
  }

  const auto output = args.get("output");
  const bool several = files.size() > 1;
  if (several && output) fs::create_directories(*output);
  const bool show_progress = ::isatty(STDERR_FILENO) == 1;

  for (size_t fi = 0; fi < files.size(); ++fi) {
    const fs::path input = files[fi];
    const std::vector<float> samples = media::decode_audio_file(input);
    if (fi == 0) {
      if (const auto f = args.get("dump-mel")) {
        const whisper::LogMel mel = transcriber.first_window_mel(samples);
        write_bytes(*f, mel.data.data(), mel.data.size() * sizeof(float));
      }
      if (const auto f = args.get("dump-logits")) {
        const std::vector<float> logits = transcriber.first_step_logits(samples, options.language);
        write_bytes(*f, logits.data(), logits.size() * sizeof(float));
      }
    }

    const auto t0 = Clock::now();
    const auto progress = [&](double done) {
      if (show_progress)
        std::fprintf(stderr, "\r%s: %3.0f%%", input.filename().string().c_str(), 100.0 * done);
    };
    const whisper::Transcript transcript = transcriber.transcribe(samples, options, progress);
    if (show_progress) std::fprintf(stderr, "\n");
    const double transcribe_ms = ms_since(t0);
    const double audio_s = static_cast<double>(samples.size()) / media::kWhisperSampleRate;

    std::string text;
    if (format == "srt")
      text = whisper::to_srt(transcript);
    else if (format == "vtt")
      text = whisper::to_vtt(transcript);
    else if (format == "text")
      text = format_text(transcript, args.flag("timestamps"));
    else {
      nlohmann::ordered_json j = nlohmann::ordered_json::parse(whisper::to_json(transcript));
      j["file"] = input.string();
      j["timings"] = {{"audio_seconds", audio_s},
                      {"load_ms", load_ms},
                      {"transcribe_ms", transcribe_ms},
                      {"rtf", audio_s > 0 ? transcribe_ms / 1000.0 / audio_s : 0.0}};
      text = j.dump(2) + "\n";
    }

    if (!several && !output) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
      continue;
    }
    fs::path out_path;
    if (!several && !fs::is_directory(*output))
      out_path = *output;
    else {
      const fs::path dir = output ? fs::path(*output) : fs::current_path();
      out_path = dir / (input.stem().string() + "." + extension_of(format));
    }
    write_bytes(out_path, text.data(), text.size());
    std::fprintf(stderr, "%s -> %s\n", input.string().c_str(), out_path.string().c_str());
  }
  return 0;
}

}  // namespace oxi::cli
