#include "tools/oxinfer/bench/bench_pipeline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numbers>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_backend.h"
#include "lib/core/error.h"
#include "lib/hub/hub.h"
#include "lib/media/audio_decoder.h"
#include "lib/whisper/transcriber.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/bench/bench_args.h"
#include "tools/oxinfer/bench/stopwatch.h"
#include "tools/oxinfer/gst_support.h"

#ifdef OXI_HAVE_GSTREAMER
#include <gst/gst.h>
#endif

namespace oxi::cli {

#ifndef OXI_HAVE_GSTREAMER

int run_bench_pipeline(const std::vector<std::string>&) {
  throw Error("oxinfer was built without GStreamer: no pipeline to benchmark");
}

#else

namespace {

namespace fs = std::filesystem;
using bench::Clock;
using bench::seconds_since;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// The default audio: JFK's inaugural sentence from the shared test data when it is there (as
// the tests find it: $OXINFER_SHARED_DATA, else ../shared/data from the working directory).
std::optional<fs::path> shared_jfk() {
  std::vector<fs::path> roots;
  if (const char* env = std::getenv("OXINFER_SHARED_DATA")) roots.emplace_back(env);
  roots.emplace_back("../shared/data");
  for (const fs::path& root : roots) {
    const fs::path p = root / "audio" / "jfk.wav";
    if (fs::is_regular_file(p)) return p;
  }
  return std::nullopt;
}

// 10 s of a 220 Hz tone with 4 Hz tremolo and white noise, 16 kHz mono 16-bit PCM, into a
// temporary file: the file pipeline needs a file, and without speech data any audio will do
// to time the paths (deterministic).
fs::path write_generated_wav() {
  const int rate = 16000;
  const size_t n = 10 * rate;
  std::vector<int16_t> pcm(n);
  uint32_t noise = 2463534242u;
  for (size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i) / rate;
    noise ^= noise << 13;
    noise ^= noise >> 17;
    noise ^= noise << 5;
    const double white = (static_cast<double>(noise) / 4294967296.0 - 0.5) * 0.1;
    const double tone = 0.3 * (0.6 + 0.4 * std::sin(2 * std::numbers::pi * 4 * t)) *
                        std::sin(2 * std::numbers::pi * 220 * t);
    pcm[i] = static_cast<int16_t>(std::lround(std::clamp(tone + white, -1.0, 1.0) * 32767));
  }
  const fs::path path =
      fs::temp_directory_path() / ("oxinfer-bench-pipeline-" + std::to_string(::getpid()) + ".wav");
  std::ofstream out(path, std::ios::binary);
  const auto u32 = [&out](uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
  const auto u16 = [&out](uint16_t v) { out.write(reinterpret_cast<const char*>(&v), 2); };
  const uint32_t data_bytes = static_cast<uint32_t>(n * 2);
  out.write("RIFF", 4);
  u32(36 + data_bytes);
  out.write("WAVEfmt ", 8);
  u32(16);
  u16(1);  // PCM
  u16(1);  // mono
  u32(rate);
  u32(rate * 2);
  u16(2);
  u16(16);
  out.write("data", 4);
  u32(data_bytes);
  out.write(reinterpret_cast<const char*>(pcm.data()), data_bytes);
  if (!out) throw Error("cannot write " + path.string());
  return path;
}

// Runs a pipeline to EOS; the seconds from PLAYING to EOS. Throws on an error message.
double run_to_eos(GstElement* pipeline) {
  GstBus* bus = gst_element_get_bus(pipeline);
  const auto t0 = Clock::now();
  if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    gst_object_unref(bus);
    throw Error("the benchmark pipeline does not start (is the oxinfer plugin found?)");
  }
  GstMessage* m = gst_bus_timed_pop_filtered(
      bus, GST_CLOCK_TIME_NONE, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  const double seconds = seconds_since(t0);
  std::string error;
  if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR) {
    GError* err = nullptr;
    gst_message_parse_error(m, &err, nullptr);
    error = std::string("error from ") + GST_OBJECT_NAME(GST_MESSAGE_SRC(m)) + ": " + err->message;
    g_error_free(err);
  }
  gst_message_unref(m);
  gst_object_unref(bus);
  if (!error.empty()) throw Error(error);
  return seconds;
}

// From EOS, a flushing seek to the start, to the next EOS.
double replay_to_eos(GstElement* pipeline) {
  const auto t0 = Clock::now();
  if (!gst_element_seek_simple(pipeline, GST_FORMAT_TIME,
                               static_cast<GstSeekFlags>(GST_SEEK_FLAG_FLUSH), 0))
    throw Error("the benchmark pipeline does not seek back to its start");
  const double seek_seconds = seconds_since(t0);
  return seek_seconds + run_to_eos(pipeline);
}

void collect_text(GstElement*, GstBuffer* buffer, GstPad*, gpointer text) {
  GstMapInfo map;
  if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) return;
  static_cast<std::string*>(text)->append(reinterpret_cast<const char*>(map.data), map.size);
  gst_buffer_unmap(buffer, &map);
}

struct LiveResult {
  double wall_seconds = 0;
  std::optional<double> rtf_property;  // oxiwhisper's `rtf`, when the element has it
};

// appsrc ! oxiwhisper mode=live ! fakesink, the samples pushed in 100 ms buffers as fast as
// appsrc accepts them (it blocks beyond half a second queued).
LiveResult run_live(const std::string& whisper, const std::vector<float>& samples) {
  GstElement* pipeline = parse_launch(
      "appsrc name=src format=time block=true max-bytes=32000 "
      "caps=audio/x-raw,format=F32LE,rate=16000,channels=1,layout=interleaved ! " +
          whisper + " mode=live ! fakesink sync=false",
      "benchmark pipeline");
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement* asr = gst_bin_get_by_name(GST_BIN(pipeline), "asr");
  LiveResult r;
  GstBus* bus = gst_element_get_bus(pipeline);
  const auto t0 = Clock::now();
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  const size_t chunk = 1600;
  for (size_t i = 0; i < samples.size(); i += chunk) {
    const size_t n = std::min(chunk, samples.size() - i);
    GstBuffer* b = gst_buffer_new_memdup(samples.data() + i, n * sizeof(float));
    GST_BUFFER_PTS(b) = gst_util_uint64_scale(i, GST_SECOND, 16000);
    GST_BUFFER_DURATION(b) = gst_util_uint64_scale(n, GST_SECOND, 16000);
    GstFlowReturn ret = GST_FLOW_OK;
    g_signal_emit_by_name(src, "push-buffer", b, &ret);
    gst_buffer_unref(b);
    if (ret != GST_FLOW_OK) break;
  }
  GstFlowReturn ret = GST_FLOW_OK;
  g_signal_emit_by_name(src, "end-of-stream", &ret);
  GstMessage* m = gst_bus_timed_pop_filtered(
      bus, GST_CLOCK_TIME_NONE, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  r.wall_seconds = seconds_since(t0);
  const bool failed = GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR;
  gst_message_unref(m);
  // Read before NULL, which may reset the element's statistics.
  if (g_object_class_find_property(G_OBJECT_GET_CLASS(asr), "rtf")) {
    double rtf = 0;
    g_object_get(asr, "rtf", &rtf, nullptr);
    r.rtf_property = rtf;
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(asr);
  gst_object_unref(src);
  gst_object_unref(pipeline);
  if (failed) throw Error("the live benchmark pipeline failed");
  return r;
}

}  // namespace

int run_bench_pipeline(const std::vector<std::string>& argv) {
  ArgParser p(
      "bench pipeline",
      "oxinfer bench pipeline -m MODEL [--audio FILE] [--threads N] [--runs N] [--json]",
      "What the oxiwhisper element adds over lib/whisper on the same audio: the\n"
      "library's transcribe() on decoded samples (one Transcriber reused, and a new one\n"
      "per run as each new pipeline's element makes) vs filesrc ! decodebin ! audioconvert\n"
      "! audioresample ! oxiwhisper ! fakesink, a new pipeline per run and one pipeline\n"
      "replayed by seeking to its start (median wall times, overhead, real-time factors), and the\n"
      "live decoder (mode=live) fed from appsrc as fast as it accepts.\n"
      "Default audio: ../shared/data/audio/jfk.wav, else 10 s of generated tone + noise.");
  p.option("model", "MODEL", "Whisper model: path or Hub repo id", "m");
  p.option("audio", "FILE", "audio file (any format both FFmpeg and GStreamer decode)");
  p.option("runs", "N", "timed runs of each path, medians reported (default 3)");
  p.threads_option();
  p.flag("json", "print one JSON object");
  const ParsedArgs args = p.parse(argv);
  const BenchModelArgs model_args = parse_bench_model_args(args);
  const long long threads = model_args.threads;
  const long long runs = parse_bench_count(args, "runs", 3);
  const bool json = args.flag("json");

  const fs::path model_path =
      hub::resolve_model(model_args.model, hub::HubOptions::from_environment());
  std::optional<fs::path> audio_path;
  if (const auto a = args.get("audio")) audio_path = fs::path(*a);
  if (!audio_path) audio_path = shared_jfk();
  fs::path generated;
  if (!audio_path) audio_path = generated = write_generated_wav();
  struct RemoveGenerated {
    fs::path p;
    ~RemoveGenerated() {
      std::error_code ec;
      if (!p.empty()) fs::remove(p, ec);
    }
  } remove_generated{generated};

  // (a) the library on decoded samples; the decode is timed apart.
  auto t0 = Clock::now();
  const std::vector<float> samples = media::decode_audio_file(*audio_path);
  const double decode_seconds = seconds_since(t0);
  const double audio_seconds = static_cast<double>(samples.size()) / media::kWhisperSampleRate;
  if (samples.empty()) throw Error("no audio in " + audio_path->string());
  t0 = Clock::now();
  const auto model = whisper::WhisperModel::load(model_path);
  const double load_seconds = seconds_since(t0);
  const auto backend = backends::make_cpu_backend(static_cast<int>(threads));
  whisper::Transcriber transcriber(model, *backend);

  init_gstreamer();
  const std::string whisper = "oxiwhisper name=asr model=" + gst_quoted(model_path.string()) +
                              " threads=" + std::to_string(threads);
  // The element's model is loaded once, outside the timings: this element holds it in the
  // process's model cache (same model and options), so each timed pipeline finds it there, as
  // the library path reuses its loaded model.
  GstElement* holder = gst_element_factory_make("oxiwhisper", nullptr);
  if (!holder) throw Error("no oxiwhisper element (is the oxinfer plugin built and found?)");
  g_object_set(holder, "model", model_path.string().c_str(), "threads", static_cast<guint>(threads),
               nullptr);
  if (gst_element_set_state(holder, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE) {
    gst_object_unref(holder);
    throw Error("oxiwhisper cannot load " + model_path.string());
  }

  // (b) the file pipeline, its text collected to compare with the library's.
  const std::string file_pipeline = "filesrc location=" + gst_quoted(audio_path->string()) +
                                    " ! decodebin ! audioconvert ! audioresample ! " + whisper +
                                    " ! fakesink name=out signal-handoffs=true";
  std::vector<double> library_s, library_new_s, element_s, element_reused_s;
  std::string library_text, element_text, element_reused_text;
  // One pipeline played again after each run from a flushing seek to the start, as an
  // application replaying or seeking does: the element keeps its transcriber, as the library
  // path keeps its Transcriber. (Not through READY: gst_parse_launch links decodebin's
  // dynamic pad once, and a decodebin started again makes a new one.)
  GstElement* reused = parse_launch(file_pipeline, "benchmark pipeline");
  {
    GstElement* out = gst_bin_get_by_name(GST_BIN(reused), "out");
    g_signal_connect(out, "handoff", G_CALLBACK(collect_text), &element_reused_text);
    gst_object_unref(out);
  }
  const auto release = [&] {
    gst_element_set_state(reused, GST_STATE_NULL);
    gst_object_unref(reused);
    gst_element_set_state(holder, GST_STATE_NULL);
    gst_object_unref(holder);
  };
  for (long long run = 0; run < runs; ++run) {
    t0 = Clock::now();
    const whisper::Transcript t = transcriber.transcribe(samples, {});
    library_s.push_back(seconds_since(t0));
    library_text.clear();
    for (const whisper::Segment& s : t.segments) library_text += s.text;
    // A new Transcriber, as each new pipeline's element makes one: its per-stream buffers
    // (cross-attention keys/values, caches) are fresh memory, page-faulted in during the run.
    t0 = Clock::now();
    whisper::Transcriber(model, *backend).transcribe(samples, {});
    library_new_s.push_back(seconds_since(t0));

    GstElement* pipeline = parse_launch(file_pipeline, "benchmark pipeline");
    GstElement* out = gst_bin_get_by_name(GST_BIN(pipeline), "out");
    element_text.clear();
    g_signal_connect(out, "handoff", G_CALLBACK(collect_text), &element_text);
    gst_object_unref(out);
    try {
      element_s.push_back(run_to_eos(pipeline));
      element_reused_text.clear();
      element_reused_s.push_back(run == 0 ? run_to_eos(reused) : replay_to_eos(reused));
    } catch (...) {
      gst_element_set_state(pipeline, GST_STATE_NULL);
      gst_object_unref(pipeline);
      release();
      throw;
    }
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(pipeline);
  }

  // (c) the live decoder, once per run.
  std::vector<double> live_wall_s, live_rtf_prop;
  for (long long run = 0; run < runs; ++run) {
    const LiveResult r = run_live(whisper, samples);
    live_wall_s.push_back(r.wall_seconds);
    if (r.rtf_property) live_rtf_prop.push_back(*r.rtf_property);
  }
  release();

  const double lib = median(library_s), elem = median(element_s), live = median(live_wall_s);
  const double elem_reused = median(element_reused_s);
  const double overhead_reused_pct = lib > 0 ? 100.0 * (elem_reused - lib) / lib : 0.0;
  const double overhead_pct = lib > 0 ? 100.0 * (elem - lib) / lib : 0.0;
  const double lib_new = median(library_new_s);
  const double overhead_new_pct = 100.0 * (elem - lib_new) / lib_new;
  // The pipeline also decodes the file, which the library path does before its timing: the
  // same comparison with FFmpeg's decode added shows what the element itself adds.
  const double lib_decode = lib + decode_seconds;
  const double overhead_decode_pct = 100.0 * (elem - lib_decode) / lib_decode;
  const bool have_rtf_prop = !live_rtf_prop.empty();
  const double live_rtf = have_rtf_prop ? median(live_rtf_prop) : live / audio_seconds;
  const bool same_text = library_text == element_text && library_text == element_reused_text;

  if (json) {
    const nlohmann::ordered_json j = {
        {"model", model_path.string()},
        {"audio", generated.empty() ? audio_path->string() : std::string("generated")},
        {"audio_seconds", audio_seconds},
        {"threads", threads},
        {"runs", runs},
        {"decode_s", decode_seconds},
        {"model_load_s", load_seconds},
        {"library_s", lib},
        {"element_s", elem},
        {"overhead_pct", overhead_pct},
        {"element_reused_pipeline_s", elem_reused},
        {"overhead_reused_pipeline_pct", overhead_reused_pct},
        {"library_new_transcriber_s", lib_new},
        {"overhead_vs_new_transcriber_pct", overhead_new_pct},
        {"library_with_decode_s", lib_decode},
        {"overhead_vs_library_with_decode_pct", overhead_decode_pct},
        {"library_rtf", lib / audio_seconds},
        {"element_rtf", elem / audio_seconds},
        {"same_text", same_text},
        {"live_wall_s", live},
        {"live_rtf", live_rtf},
        {"live_rtf_source", have_rtf_prop ? "rtf property" : "wall time / audio duration"}};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("model %s, threads %lld, %lld run(s), medians\n", model_path.string().c_str(),
              threads, runs);
  std::printf("audio %s, %.2f s (decoded by FFmpeg in %.1f ms; model loaded in %.1f ms)\n",
              generated.empty() ? audio_path->string().c_str() : "generated tone + noise",
              audio_seconds, decode_seconds * 1000, load_seconds * 1000);
  std::printf("  library  Transcriber::transcribe   %10.1f ms   RTF %.4f\n", lib * 1000,
              lib / audio_seconds);
  std::printf("  element  filesrc ... oxiwhisper    %10.1f ms   RTF %.4f\n", elem * 1000,
              elem / audio_seconds);
  std::printf("  overhead of the element            %+9.2f %%   (target < 2 %%)\n", overhead_pct);
  std::printf("  element, one pipeline replayed      %10.1f ms   %+.2f %% over the library\n",
              elem_reused * 1000, overhead_reused_pct);
  std::printf("  library, new Transcriber per run   %10.1f ms   element %+.2f %% over it\n",
              lib_new * 1000, overhead_new_pct);
  std::printf("  library + FFmpeg decode            %10.1f ms   element %+.2f %% over it\n",
              lib_decode * 1000, overhead_decode_pct);
  std::printf("  same text from both                %10s\n", same_text ? "yes" : "no");
  std::printf(
      "  live     appsrc ! oxiwhisper mode=live, as fast as accepted: %.1f ms wall, RTF "
      "%.4f (%s)\n",
      live * 1000, live_rtf,
      have_rtf_prop ? "the element's rtf property" : "wall time / audio duration");
  return 0;
}

#endif  // OXI_HAVE_GSTREAMER

}  // namespace oxi::cli
