// oxinfer run NAME key=value...: a ready pipeline from pipelines/ (pipeline_file.h), its
// parameters substituted, run to EOS with gst_parse_launch. Ctrl-C sends EOS first so that
// muxers and subtitle writers finish their files; a second Ctrl-C stops at once.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "lib/core/error.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/commands.h"
#include "tools/oxinfer/gst_support.h"
#include "tools/oxinfer/pipeline_file.h"

#ifdef OXI_HAVE_GSTREAMER
#include <glib-unix.h>
#include <gst/gst.h>
#endif

namespace oxi::cli {
namespace {

void print_list(const std::vector<PipelineFile>& pipelines) {
  if (pipelines.empty()) {
    std::printf("no pipelines found (set OXINFER_PIPELINES_DIR)\n");
    return;
  }
  for (const PipelineFile& p : pipelines) {
    std::printf("%s\n    %s\n", p.name.c_str(), p.description.c_str());
    for (const PipelineParam& param : p.params) {
      std::string left = param.name;
      if (!param.required()) {
        // Quoted as the pipeline file spells it when it has spaces (or is empty).
        const std::string& d = *param.default_value;
        const bool quote = d.empty() || d.find_first_of(" \t\"") != std::string::npos;
        left += "=" + (quote ? "\"" + d + "\"" : d);
      }
      std::printf("      %-24s %s%s\n", left.c_str(), param.help.c_str(),
                  param.required() ? " (required)" : "");
    }
    std::printf("\n");
  }
}

#ifdef OXI_HAVE_GSTREAMER

std::string clock_text(gint64 t) {
  if (t < 0) return "--:--:--";
  const gint64 s = t / GST_SECOND;
  char text[32];
  std::snprintf(text, sizeof text, "%02lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  return text;
}

struct RunState {
  GstElement* pipeline = nullptr;
  GMainLoop* loop = nullptr;
  int exit_code = 0;
  int interrupts = 0;
  bool progress = true;
  bool progress_shown = false;
  bool tty = false;
};

void end_progress_line(RunState& s) {
  if (s.progress_shown && s.tty) std::fprintf(stderr, "\n");
  s.progress_shown = false;
}

// The element's name with the bins it is in, below the pipeline ("dec/multiqueue0").
std::string source_name(GstMessage* message) {
  std::string name;
  for (GstObject* o = GST_MESSAGE_SRC(message); o && GST_OBJECT_PARENT(o); o = GST_OBJECT_PARENT(o))
    name = GST_OBJECT_NAME(o) + (name.empty() ? "" : "/" + name);
  return name.empty() ? "the pipeline" : name;
}

gboolean on_bus_message(GstBus* bus, GstMessage* message, gpointer user_data) {
  (void)bus;
  RunState& s = *static_cast<RunState*>(user_data);
  switch (GST_MESSAGE_TYPE(message)) {
    case GST_MESSAGE_ERROR:
    case GST_MESSAGE_WARNING: {
      const bool error = GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR;
      GError* err = nullptr;
      gchar* debug = nullptr;
      if (error)
        gst_message_parse_error(message, &err, &debug);
      else
        gst_message_parse_warning(message, &err, &debug);
      end_progress_line(s);
      std::fprintf(stderr, "oxinfer run: %s from %s: %s\n", error ? "error" : "warning",
                   source_name(message).c_str(), err ? err->message : "(no message)");
      if (debug) std::fprintf(stderr, "  debug info: %s\n", debug);
      if (err) g_error_free(err);
      g_free(debug);
      if (error) {
        s.exit_code = 1;
        g_main_loop_quit(s.loop);
      }
      break;
    }
    case GST_MESSAGE_EOS:
      g_main_loop_quit(s.loop);
      break;
    default:
      break;
  }
  return TRUE;
}

gboolean on_progress(gpointer user_data) {
  RunState& s = *static_cast<RunState*>(user_data);
  if (!s.progress) return TRUE;
  gint64 position = -1, duration = -1;
  if (!gst_element_query_position(s.pipeline, GST_FORMAT_TIME, &position)) return TRUE;
  if (!gst_element_query_duration(s.pipeline, GST_FORMAT_TIME, &duration)) duration = -1;
  std::string line = clock_text(position) + " / " + clock_text(duration);
  if (duration > 0)
    line += " (" + std::to_string(static_cast<int>(100.0 * position / duration)) + "%)";
  std::fprintf(stderr, s.tty ? "\r%s " : "%s\n", line.c_str());
  s.progress_shown = true;
  return TRUE;
}

gboolean on_interrupt(gpointer user_data) {
  RunState& s = *static_cast<RunState*>(user_data);
  end_progress_line(s);
  if (++s.interrupts == 1) {
    // EOS lets muxers and writers finish their files; the bus reports it when it is through.
    std::fprintf(stderr, "oxinfer run: interrupted, finishing the stream (Ctrl-C again to stop)\n");
    gst_element_send_event(s.pipeline, gst_event_new_eos());
  } else {
    std::fprintf(stderr, "oxinfer run: stopped\n");
    s.exit_code = 130;
    g_main_loop_quit(s.loop);
  }
  return G_SOURCE_CONTINUE;
}

int run_pipeline(const std::string& description, bool progress) {
  init_gstreamer();

  GstElement* pipeline = parse_launch(description, "pipeline");

  RunState s;
  s.pipeline = pipeline;
  s.loop = g_main_loop_new(nullptr, FALSE);
  s.progress = progress;
  s.tty = ::isatty(STDERR_FILENO) == 1;
  GstBus* bus = gst_element_get_bus(pipeline);
  const guint bus_watch = gst_bus_add_watch(bus, on_bus_message, &s);
  const guint progress_timer = g_timeout_add(1000, on_progress, &s);
  const guint sigint = g_unix_signal_add(SIGINT, on_interrupt, &s);

  if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    // The reason is the first error on the bus (an element's load error, a missing file);
    // the ones after it only say that the state change failed.
    if (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
      on_bus_message(bus, m, &s);
      gst_message_unref(m);
    }
    if (s.exit_code == 0)
      std::fprintf(stderr, "oxinfer run: the pipeline could not start (no error was posted)\n");
    s.exit_code = 1;
  } else {
    g_main_loop_run(s.loop);
  }
  end_progress_line(s);

  gst_element_set_state(pipeline, GST_STATE_NULL);
  g_source_remove(sigint);
  g_source_remove(progress_timer);
  g_source_remove(bus_watch);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
  g_main_loop_unref(s.loop);
  return s.exit_code;
}

#endif  // OXI_HAVE_GSTREAMER

}  // namespace

int run_run(const Argv& argv) {
  ArgParser p("run", "oxinfer run NAME [key=value...] [--print] | oxinfer run --list",
              "Run a ready GStreamer pipeline from pipelines/ with its parameters filled in,\n"
              "until the end of the stream; Ctrl-C ends the stream cleanly (files are\n"
              "finished), a second Ctrl-C stops at once. NAME may also be a .pipeline file.\n"
              "Pipelines are searched in $OXINFER_PIPELINES_DIR, the source tree's pipelines/\n"
              "and the installed share/oxinfer/pipelines.");
  p.flag("list", "list the pipelines with their descriptions and parameters");
  p.flag("print", "print the expanded launch description (for gst-launch-1.0 -e) and exit");
  p.flag("no-progress", "do not print the position every second");
  const ParsedArgs args = p.parse(argv);

  const std::vector<std::filesystem::path> dirs = pipeline_search_dirs();
  if (args.flag("list")) {
    if (!args.positional().empty()) throw UsageError("--list takes no arguments");
    print_list(list_pipelines(dirs));
    return 0;
  }
  const std::vector<std::string>& positional = args.positional();
  if (positional.empty()) throw UsageError("expected a pipeline NAME (oxinfer run --list)");
  const PipelineFile pipeline = load_pipeline_file(find_pipeline(positional[0], dirs));
  const std::string description = expand_pipeline(
      pipeline,
      parse_assignments(std::vector<std::string>(positional.begin() + 1, positional.end())));
  if (args.flag("print")) {
    std::printf("%s\n", description.c_str());
    return 0;
  }
  spdlog::debug("pipeline: {}", description);
#ifdef OXI_HAVE_GSTREAMER
  const bool progress =
      !args.flag("no-progress") && spdlog::default_logger()->should_log(spdlog::level::info);
  return run_pipeline(description, progress);
#else
  throw Error("oxinfer run",
              "this oxinfer was built without GStreamer; --print shows the "
              "pipeline for gst-launch-1.0");
#endif
}

}  // namespace oxi::cli
