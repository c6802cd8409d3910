#include "tools/oxinfer/bench/bench_whisper.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <thread>

#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_backend.h"
#include "lib/hub/hub.h"
#include "lib/media/audio_decoder.h"
#include "lib/whisper/transcriber.h"
#include "lib/whisper/whisper_state.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/bench/bench_args.h"

namespace oxi::bench {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

std::vector<float> generated_speech_like_audio(double seconds) {
  const size_t n = static_cast<size_t>(seconds * media::kWhisperSampleRate);
  std::vector<float> out(n);
  double phase = 0.0;
  uint32_t noise = 12345;
  for (size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i) / media::kWhisperSampleRate;
    const double pitch = 120.0 + 30.0 * std::sin(2 * std::numbers::pi * 0.7 * t);
    phase += 2 * std::numbers::pi * pitch / media::kWhisperSampleRate;
    double voiced = 0.0;
    for (int h = 1; h <= 12; ++h) voiced += std::sin(h * phase) / h;
    const double syllable = 0.5 + 0.5 * std::sin(2 * std::numbers::pi * 4.0 * t);
    const bool pause = std::fmod(t, 2.5) > 2.0;  // half a second of silence every 2.5 s
    noise = noise * 1664525u + 1013904223u;
    const double hiss = (static_cast<double>(noise >> 8) / (1 << 24) - 0.5) * 0.02;
    out[i] = static_cast<float>((pause ? 0.0 : 0.2 * syllable * voiced) + hiss);
  }
  return out;
}

WhisperBenchResult bench_whisper(std::shared_ptr<const whisper::WhisperModel> model,
                                 backends::Backend& backend, std::span<const float> audio,
                                 int reps) {
  const whisper::WhisperConfig& c = model->config();
  const whisper::WhisperVocab& v = model->vocab();
  WhisperBenchResult r;
  r.audio_seconds = static_cast<double>(audio.size()) / media::kWhisperSampleRate;

  whisper::Transcriber transcriber(model, backend);
  const whisper::LogMel mel = transcriber.first_window_mel(audio);
  whisper::WhisperState state(model, backend);

  // Encoder: one warm-up, then reps windows.
  state.encode(mel.data, mel.n_frames);
  std::vector<double> encode_ms;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    state.encode(mel.data, mel.n_frames);
    encode_ms.push_back(ms_since(t0));
  }
  r.encoder_ms_per_window = median(encode_ms);

  // Decoder: single-token steps after the start sequence, up to half the text context.
  std::vector<int32_t> prompt = {v.sot};
  if (v.no_timestamps >= 0) prompt.push_back(v.no_timestamps);
  state.decode(prompt, 0);
  const int32_t token = std::min<int32_t>(v.eot - 1, 220);  // an ordinary text token
  std::vector<double> step_ms;
  const size_t steps = static_cast<size_t>(std::max(1, c.n_text_ctx / 2));
  for (int rep = 0; rep < reps; ++rep) {
    for (size_t k = 0; k < steps && prompt.size() + k < static_cast<size_t>(c.n_text_ctx); ++k) {
      const auto t0 = Clock::now();
      state.decode(std::span(&token, 1), prompt.size() + k);
      step_ms.push_back(ms_since(t0));
    }
  }
  r.decoder_ms_per_token = median(step_ms);

  // The whole transcription.
  transcriber.set_window_callback([&](const whisper::WindowResult& w) {
    ++r.windows;
    r.generated_tokens += w.tokens.size() + (w.ended ? 1 : 0);
  });
  const auto t0 = Clock::now();
  transcriber.transcribe(audio, {});
  r.transcribe_ms = ms_since(t0);
  r.rtf = r.audio_seconds > 0 ? r.transcribe_ms / 1000.0 / r.audio_seconds : 0.0;
  return r;
}

}  // namespace oxi::bench

namespace oxi::cli {

int run_bench_whisper(const std::vector<std::string>& argv) {
  ArgParser p("bench whisper", "oxinfer bench whisper -m MODEL [--file F] [--threads N] [--json]",
              "Encoder ms per window, decoder ms per token, and the real-time factor of a\n"
              "transcription of F (default: 10 s of generated speech-like audio).");
  p.option("model", "MODEL", "Whisper model: path or Hub repo id", "m");
  p.option("file", "F", "audio file to transcribe (any format FFmpeg reads)");
  p.option("reps", "N", "repetitions of the encoder and decoder timings (default 3)");
  p.threads_option();
  p.flag("json", "print one JSON object");
  const ParsedArgs args = p.parse(argv);
  const BenchModelArgs model_args = parse_bench_model_args(args);
  const long long threads = model_args.threads;
  const long long reps = parse_bench_count(args, "reps", 3);

  const auto model = whisper::WhisperModel::load(
      hub::resolve_model(model_args.model, hub::HubOptions::from_environment()));
  const auto backend = backends::make_cpu_backend(static_cast<int>(threads));
  const auto file = args.get("file");
  const std::vector<float> audio =
      file ? media::decode_audio_file(*file) : bench::generated_speech_like_audio(10.0);
  const bench::WhisperBenchResult r =
      bench::bench_whisper(model, *backend, audio, static_cast<int>(reps));

  if (args.flag("json")) {
    const nlohmann::ordered_json j = {{"model", model->path().string()},
                                      {"file", file ? *file : std::string("generated")},
                                      {"threads", threads},
                                      {"audio_seconds", r.audio_seconds},
                                      {"encoder_ms_per_window", r.encoder_ms_per_window},
                                      {"decoder_ms_per_token", r.decoder_ms_per_token},
                                      {"transcribe_ms", r.transcribe_ms},
                                      {"rtf", r.rtf},
                                      {"windows", r.windows},
                                      {"generated_tokens", r.generated_tokens}};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("model %s, threads %lld, audio %.2f s (%s)\n", model->path().string().c_str(),
              threads, r.audio_seconds, file ? file->c_str() : "generated");
  std::printf("  encoder          %10.2f ms / window (%d frames)\n", r.encoder_ms_per_window,
              model->config().n_frames);
  std::printf("  decoder          %10.3f ms / token\n", r.decoder_ms_per_token);
  std::printf("  transcription    %10.1f ms, %zu windows, %zu tokens\n", r.transcribe_ms, r.windows,
              r.generated_tokens);
  std::printf("  real-time factor %10.4f\n", r.rtf);
  return 0;
}

}  // namespace oxi::cli
