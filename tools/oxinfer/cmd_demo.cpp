// oxinfer demo: the README's main job. Speaks a sentence with espeak-ng, transcribes the WAV
// through a GStreamer pipeline ending in oxiwhisper, and prints what was said and what was
// heard. Offline it uses the project's own demo model (examples/demo-asr); any Whisper model
// or Hub repo id can be named instead:
//
//   oxinfer demo                                   # examples/demo-asr, a fixed sentence
//   oxinfer demo model=openai/whisper-base text="set a timer for ten minutes"
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "lib/core/error.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/commands.h"
#include "tools/oxinfer/gst_support.h"

#ifdef OXI_HAVE_GSTREAMER
#include <gst/gst.h>
#endif

namespace oxi::cli {
namespace {

namespace fs = std::filesystem;

// Every word is in tools/train-demo-asr/words.txt, the demo model's vocabulary.
constexpr const char* kDefaultText = "please turn on the kitchen lights at seven thirty";

const char* kUsage =
    "usage: oxinfer demo [model=MODEL] [text=TEXT] [voice=VOICE] [language=CODE] [--print]\n"
    "  Speaks TEXT with espeak-ng, transcribes it with a GStreamer pipeline ending in oxiwhisper\n"
    "  and prints the transcript.\n"
    "  model     Whisper model dir/file or Hub repo id (default: the project's demo model,\n"
    "            examples/demo-asr, or $OXINFER_DEMO_MODEL)\n"
    "  text      sentence to speak (default: \"please turn on the kitchen lights at seven "
    "thirty\")\n"
    "  voice     espeak-ng voice (default en-us)\n"
    "  language  language code for oxiwhisper (default en)\n"
    "  --print   print the pipeline and exit\n";

std::string default_model() {
  if (const char* env = std::getenv("OXINFER_DEMO_MODEL"); env && *env) return env;
  for (const fs::path& dir :
       {fs::path(OXI_DEMO_MODEL_SOURCE_DIR), fs::path(OXI_DEMO_MODEL_INSTALL_DIR)})
    if (fs::is_regular_file(dir / "config.json")) return dir.string();
  throw Error("demo", "the demo model was not found in " + std::string(OXI_DEMO_MODEL_SOURCE_DIR) +
                          " or " + OXI_DEMO_MODEL_INSTALL_DIR + "; name one with model=DIR");
}

#ifdef OXI_HAVE_GSTREAMER

// espeak-ng TEXT into a 22.05 kHz mono WAV; run without a shell so TEXT needs no quoting.
void speak(const std::string& text, const std::string& voice, const fs::path& wav) {
  const pid_t pid = ::fork();
  if (pid < 0) throw Error("demo", "cannot start espeak-ng (fork failed)");
  if (pid == 0) {
    ::execlp("espeak-ng", "espeak-ng", "-v", voice.c_str(), "-s", "150", "-w", wav.c_str(),
             text.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 127)
    throw Error("demo", "espeak-ng is not installed (Debian package espeak-ng)");
  if (WEXITSTATUS(status) != 0 || !fs::exists(wav))
    throw Error("demo", "espeak-ng failed for voice '" + voice + "'");
}

struct Heard {
  std::vector<std::string> lines;
  std::string text;
};

// Each text buffer oxiwhisper pushes: printed as it arrives, with its media span.
GstPadProbeReturn on_text(GstPad*, GstPadProbeInfo* info, gpointer user_data) {
  auto& heard = *static_cast<Heard*>(user_data);
  GstBuffer* buffer = GST_PAD_PROBE_INFO_BUFFER(info);
  GstMapInfo map;
  if (buffer && gst_buffer_map(buffer, &map, GST_MAP_READ)) {
    const std::string piece(reinterpret_cast<const char*>(map.data), map.size);
    gst_buffer_unmap(buffer, &map);
    const double start = GST_BUFFER_PTS_IS_VALID(buffer) ? GST_BUFFER_PTS(buffer) / 1e9 : 0.0;
    const double end =
        start + (GST_BUFFER_DURATION_IS_VALID(buffer) ? GST_BUFFER_DURATION(buffer) / 1e9 : 0.0);
    std::printf("  [%6.2f s -> %6.2f s] %s\n", start, end, piece.c_str());
    std::fflush(stdout);
    heard.text += piece;
  }
  return GST_PAD_PROBE_OK;
}

// Runs the pipeline to EOS; throws with the posting element's message on an error.
void run_to_eos(const std::string& description, Heard& heard) {
  init_gstreamer();
  GstElement* pipeline = parse_launch(description, "demo pipeline");
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "text");
  GstPad* pad = gst_element_get_static_pad(sink, "sink");
  gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, on_text, &heard, nullptr);
  gst_object_unref(pad);
  gst_object_unref(sink);

  std::string failure;
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* message = gst_bus_timed_pop_filtered(
      bus, GST_CLOCK_TIME_NONE, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR) {
    GError* err = nullptr;
    gchar* debug = nullptr;
    gst_message_parse_error(message, &err, &debug);
    failure = std::string(GST_OBJECT_NAME(GST_MESSAGE_SRC(message))) + ": " + err->message +
              (debug ? std::string("\n  ") + debug : "");
    g_error_free(err);
    g_free(debug);
  }
  gst_message_unref(message);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  if (!failure.empty()) throw Error("demo pipeline", failure);
}

#endif  // OXI_HAVE_GSTREAMER

}  // namespace

int run_demo(const Argv& argv) {
  std::map<std::string, std::string> params = {
      {"text", kDefaultText}, {"voice", "en-us"}, {"language", "en"}};
  bool print_only = false;
  for (const std::string& arg : argv) {
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--print") {
      print_only = true;
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string key = arg.substr(0, eq);
    if (eq == std::string::npos || !(key == "model" || params.count(key)))
      throw UsageError("demo: unknown argument '" + arg +
                       "' (expected model=, text=, voice=, "
                       "language= or --print)");
    params[key] = arg.substr(eq + 1);
  }
  if (!params.count("model")) params["model"] = default_model();

  const fs::path wav =
      fs::temp_directory_path() / ("oxinfer-demo-" + std::to_string(::getpid()) + ".wav");
  const std::string description =
      "filesrc location=" + gst_quoted(wav.string()) +
      " ! wavparse ! audioconvert ! audioresample ! audio/x-raw,format=F32LE,rate=16000,channels=1"
      " ! oxiwhisper model=" +
      gst_quoted(params["model"]) + " language-code=" + gst_quoted(params["language"]) +
      " ! fakesink name=text sync=false";
  if (print_only) {
    std::printf("espeak-ng -v %s -s 150 -w %s %s\ngst-launch-1.0 %s\n", params["voice"].c_str(),
                wav.c_str(), gst_quoted(params["text"]).c_str(), description.c_str());
    return 0;
  }
#ifdef OXI_HAVE_GSTREAMER
  std::printf("said:  %s   (espeak-ng voice %s)\n", params["text"].c_str(),
              params["voice"].c_str());
  speak(params["text"], params["voice"], wav);
  std::printf("model: %s\nheard:\n", params["model"].c_str());
  std::fflush(stdout);
  Heard heard;
  try {
    run_to_eos(description, heard);
  } catch (...) {
    fs::remove(wav);
    throw;
  }
  fs::remove(wav);
  if (heard.text.empty()) std::printf("  (nothing)\n");
  return 0;
#else
  throw Error("demo", "this oxinfer was built without GStreamer; the demo runs a pipeline");
#endif
}

}  // namespace oxi::cli
