// Every pipelines/*.pipeline run headless to EOS through `oxinfer run`, on generated media (a
// speech-like WAV, a WebM with picture and sound) and tiny random models (tests/whisper_model's
// Whisper writer, tests/llm's Llama GGUF). Outputs are checked against independent paths:
// `oxinfer transcribe` for the subtitles, oxi::llm::Engine for the summary, a decoding pipeline
// for the captioned video. live-captions reads audiotestsrc (its `source` parameter) instead of
// a sound card. Also: --print and parameter errors, bus errors naming the element, Ctrl-C.
#include <fcntl.h>
#include <gst/gst.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_backend.h"
#include "lib/llm/engine.h"
#include "lib/media/audio_decoder.h"
#include "lib/whisper/transcriber.h"
#include "tests/common/test_data.h"
#include "tests/elements/element_test_util.h"
#include "tests/llm_engine/engine_fixture.h"
#include "tests/whisper_decode/wav_writer.h"
#include "tests/whisper_model/tiny_whisper.h"
#include "tools/oxinfer/pipeline_file.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using oxi::llm::test::CommandResult;
using oxi::llm::test::run_oxinfer;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Runs a launch description in this process to EOS; "" or the first error's message.
std::string run_launch(const std::string& description) {
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(description.c_str(), &error);
  if (error) {
    std::string message = error->message;
    g_error_free(error);
    if (pipeline) gst_object_unref(pipeline);
    return message;
  }
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* m = gst_bus_timed_pop_filtered(
      bus, 120 * GST_SECOND, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  std::string result = m ? "" : "timed out";
  if (m && GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR) {
    GError* err = nullptr;
    gst_message_parse_error(m, &err, nullptr);
    result = err->message;
    g_error_free(err);
  }
  if (m) gst_message_unref(m);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
  return result;
}

void count_buffer(GstElement*, GstBuffer*, GstPad*, gpointer counter) {
  ++*static_cast<int*>(counter);
}

// Decoded video frames and audio buffers of a media file.
std::pair<int, int> count_frames(const fs::path& file) {
  const std::string description = "filesrc location=\"" + file.string() +
                                  "\" ! decodebin name=d d. ! video/x-raw ! queue ! fakesink "
                                  "name=v signal-handoffs=true d. ! audio/x-raw ! queue ! "
                                  "fakesink name=a signal-handoffs=true";
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(description.c_str(), &error);
  EXPECT_EQ(error, nullptr);
  if (error) {
    g_error_free(error);
    return {-1, -1};
  }
  int video = 0, audio = 0;
  GstElement* v = gst_bin_get_by_name(GST_BIN(pipeline), "v");
  GstElement* a = gst_bin_get_by_name(GST_BIN(pipeline), "a");
  g_signal_connect(v, "handoff", G_CALLBACK(count_buffer), &video);
  g_signal_connect(a, "handoff", G_CALLBACK(count_buffer), &audio);
  gst_object_unref(v);
  gst_object_unref(a);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* m = gst_bus_timed_pop_filtered(
      bus, 60 * GST_SECOND, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  EXPECT_TRUE(m && GST_MESSAGE_TYPE(m) == GST_MESSAGE_EOS);
  if (m) gst_message_unref(m);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
  return {video, audio};
}

// Every cue of an SRT text is "N\nHH:MM:SS,mmm --> HH:MM:SS,mmm\ntext...\n\n", numbered from 1.
void expect_srt(const std::string& srt) {
  static const std::regex cue(
      R"((\d+)\n\d\d:\d\d:\d\d,\d\d\d --> \d\d:\d\d:\d\d,\d\d\d\n(?:[^\n]+\n)+\n)");
  int expected = 1;
  auto it = srt.cbegin();
  std::smatch m;
  while (it != srt.cend()) {
    ASSERT_TRUE(std::regex_search(it, srt.cend(), m, cue, std::regex_constants::match_continuous))
        << "not SRT from: " << std::string(it, srt.cend());
    EXPECT_EQ(std::stoi(m[1]), expected++);
    it = m[0].second;
  }
}

class PipelinesRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(oxi::test::load_oxinfer_plugin());
    GstRegistry* registry = gst_registry_get();
    if (GstPluginFeature* f = gst_registry_lookup_feature(registry, "oxiwhisper")) {
      have_whisper_ = true;
      gst_object_unref(f);
    }
    dir_ = new oxi::test::TempDir();
    oxi::whisper::test::write_hf_dir(oxi::whisper::test::make_tiny_whisper(42), *dir_ / "whisper");
    oxi::whisper::test::write_wav16(*dir_ / "speech.wav", oxi::whisper::test::speech_like(2.4));
    oxi::llm::test::write_tiny_llama(*dir_ / "llm.gguf");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (!std::getenv("OXINFER_BUILD_ROOT"))
      GTEST_SKIP() << "OXINFER_BUILD_ROOT not set (run through meson test)";
  }
  static fs::path path(const std::string& name) { return *dir_ / name; }
  static std::string whisper() { return path("whisper").string(); }

  static bool have_whisper_;
  static oxi::test::TempDir* dir_;
};

bool PipelinesRun::have_whisper_ = false;
oxi::test::TempDir* PipelinesRun::dir_ = nullptr;

#define REQUIRE_OXIWHISPER() \
  if (!have_whisper_) GTEST_SKIP() << "oxiwhisper is not in the plugin (yet)"

TEST_F(PipelinesRun, EveryPipelineParsesWithItsElements) {
  for (const auto& entry : fs::directory_iterator(OXI_PIPELINES_DIR)) {
    if (entry.path().extension() != ".pipeline") continue;
    SCOPED_TRACE(entry.path().string());
    const oxi::cli::PipelineFile p = oxi::cli::load_pipeline_file(entry.path());
    std::map<std::string, std::string> values;
    for (const oxi::cli::PipelineParam& param : p.params)
      if (param.required()) values[param.name] = path("x-" + param.name).string();
    const std::string launch = oxi::cli::expand_pipeline(p, values);
    if (!have_whisper_ && contains(launch, "oxiwhisper")) continue;
    GError* error = nullptr;
    GstElement* pipeline = gst_parse_launch(launch.c_str(), &error);
    EXPECT_EQ(error, nullptr) << (error ? error->message : "") << "\n" << launch;
    if (error) g_error_free(error);
    if (pipeline) gst_object_unref(pipeline);
  }
}

TEST_F(PipelinesRun, PrintAndParameterErrors) {
  const CommandResult printed = run_oxinfer({"run", "transcribe-file", "input=/in put.wav",
                                             "output=o.srt", "model=m", "format=vtt", "--print"});
  ASSERT_EQ(printed.exit_code, 0) << printed.err;
  const oxi::cli::PipelineFile p =
      oxi::cli::load_pipeline_file(fs::path(OXI_PIPELINES_DIR) / "transcribe-file.pipeline");
  EXPECT_EQ(
      printed.out,
      oxi::cli::expand_pipeline(
          p, {{"input", "/in put.wav"}, {"output", "o.srt"}, {"model", "m"}, {"format", "vtt"}}) +
          "\n");

  const CommandResult unknown =
      run_oxinfer({"run", "transcribe-file", "input=a", "output=b", "model=m", "fromat=vtt"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_TRUE(contains(unknown.err, "unknown parameter 'fromat'")) << unknown.err;
  EXPECT_TRUE(contains(unknown.err, "input, output, model, language, format")) << unknown.err;

  const CommandResult missing = run_oxinfer({"run", "transcribe-file", "input=a"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_TRUE(contains(missing.err, "output=..., model=...")) << missing.err;

  const CommandResult listed = run_oxinfer({"run", "--list"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  for (const char* name : {"transcribe-file", "live-captions", "burn-captions",
                           "live-burn-captions", "transcribe-summarize"})
    EXPECT_TRUE(contains(listed.out, std::string(name) + "\n")) << listed.out;
  EXPECT_TRUE(contains(listed.out, "language=auto")) << listed.out;

  EXPECT_NE(run_oxinfer({"run", "no-such-pipeline"}).exit_code, 0);
}

TEST_F(PipelinesRun, BusErrorsNameTheElement) {
  const CommandResult r =
      run_oxinfer({"run", "transcribe-file", "input=" + path("missing.wav").string(),
                   "output=" + path("never.srt").string(), "model=" + whisper(), "--no-progress"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "error from filesrc0: ")) << r.err;
  EXPECT_TRUE(contains(r.err, "debug info")) << r.err;
  EXPECT_TRUE(contains(r.err, "missing.wav")) << r.err;
}

TEST_F(PipelinesRun, TranscribeFileWritesWhatTranscribeWrites) {
  REQUIRE_OXIWHISPER();
  const fs::path out = path("pipeline.srt");
  const CommandResult r =
      run_oxinfer({"run", "transcribe-file", "input=" + path("speech.wav").string(),
                   "output=" + out.string(), "model=" + whisper(), "threads=2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string srt = read_text(out);
  ASSERT_FALSE(srt.empty());  // the tiny model says something about this audio
  expect_srt(srt);
  // oxiwhisper transcribes a file as `oxinfer transcribe` does; SRT output decodes timed
  // segments by default, as openai-whisper and whisper.cpp do.
  const CommandResult cli = run_oxinfer({"transcribe", path("speech.wav").string(), "-m", whisper(),
                                         "--format", "srt", "--threads", "2"});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(srt, cli.out);

  // A model that does not load: the error names the element and the model.
  const CommandResult bad =
      run_oxinfer({"run", "transcribe-file", "input=" + path("speech.wav").string(),
                   "output=" + path("bad.srt").string(), "model=" + path("no-model").string()});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_TRUE(contains(bad.err, "oxiwhisper")) << bad.err;
  EXPECT_TRUE(contains(bad.err, path("no-model").string())) << bad.err;
}

// bench pipeline times the library and the element on the same file: a new pipeline per run
// and one pipeline replayed by a flushing seek to its start, all with
// the library's text.
TEST_F(PipelinesRun, BenchPipelineComparesTheSameText) {
  REQUIRE_OXIWHISPER();
  const CommandResult r =
      run_oxinfer({"bench", "pipeline", "-m", whisper(), "--audio", path("speech.wav").string(),
                   "--runs", "2", "--threads", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j.at("same_text").get<bool>()) << r.out;
  for (const char* key : {"library_s", "element_s", "element_reused_pipeline_s",
                          "library_new_transcriber_s", "live_rtf"})
    EXPECT_GT(j.at(key).get<double>(), 0.0) << key;
  EXPECT_EQ(j.at("runs").get<int>(), 2);
}

TEST_F(PipelinesRun, LiveCaptionsFromATestSource) {
  REQUIRE_OXIWHISPER();
  const CommandResult r = run_oxinfer(
      {"run", "live-captions", "model=" + whisper(), "latency=1000", "threads=2",
       "source=audiotestsrc is-live=true num-buffers=30 samplesperbuffer=1600 wave=pink-noise ! "
       "audio/x-raw,rate=16000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_srt(r.out);
}

// Live test sources (the pipeline's source parameters) instead of a camera and a sound card, the
// captioned picture written frame by frame: every frame comes out, captions waited for.
TEST_F(PipelinesRun, LiveBurnCaptionsFromTestSources) {
  REQUIRE_OXIWHISPER();
  const fs::path frames = path("live-frames");
  fs::create_directories(frames);
  const CommandResult r =
      run_oxinfer({"run", "live-burn-captions", "model=" + whisper(), "latency=1000", "threads=2",
                   "video-source=videotestsrc is-live=true num-buffers=25 pattern=ball ! "
                   "video/x-raw,width=160,height=120,framerate=10/1",
                   "audio-source=audiotestsrc is-live=true num-buffers=25 samplesperbuffer=1600 "
                   "wave=pink-noise ! audio/x-raw,rate=16000",
                   "sink=jpegenc ! multifilesink location=" + (frames / "frame-%03d.jpg").string(),
                   "--no-progress"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int count = 0;
  for (const auto& entry : fs::directory_iterator(frames)) {
    ++count;
    EXPECT_GT(fs::file_size(entry.path()), 0u) << entry.path();
  }
  EXPECT_EQ(count, 25);
}

// Ctrl-C on a live pipeline ends the stream with EOS: the command exits 0, not 130.
TEST_F(PipelinesRun, InterruptEndsTheStreamCleanly) {
  REQUIRE_OXIWHISPER();
  std::vector<std::string> args = {
      oxi::llm::test::oxinfer_binary().string(),
      "run",
      "live-captions",
      "model=" + whisper(),
      "format=vtt",
      "latency=1000",
      "threads=1",
      "source=audiotestsrc is-live=true samplesperbuffer=1600 ! audio/x-raw,rate=16000"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string out = path("interrupt.out").string(), err = path("interrupt.err").string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  kill(pid, SIGINT);
  int status = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(60)) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      FAIL() << "oxinfer run did not finish after SIGINT";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(WIFEXITED(status)) << read_text(err);
  EXPECT_EQ(WEXITSTATUS(status), 0) << read_text(err);
  EXPECT_TRUE(contains(read_text(err), "interrupted")) << read_text(err);
  const std::string vtt = read_text(out);
  if (!vtt.empty()) {
    EXPECT_EQ(vtt.rfind("WEBVTT\n\n", 0), 0u) << vtt;
  }
}

TEST_F(PipelinesRun, BurnCaptionsKeepsEveryFrameAndTheSound) {
  REQUIRE_OXIWHISPER();
  const fs::path input = path("clip.webm");
  ASSERT_EQ(run_launch("videotestsrc num-buffers=30 pattern=ball ! "
                       "video/x-raw,width=160,height=120,framerate=10/1 ! vp8enc deadline=1 ! "
                       "webmmux name=mux ! filesink location=\"" +
                       input.string() + "\" filesrc location=\"" + path("speech.wav").string() +
                       "\" ! wavparse ! audioconvert ! vorbisenc ! mux."),
            "");
  const auto [in_video, in_audio] = count_frames(input);
  ASSERT_EQ(in_video, 30);
  ASSERT_GT(in_audio, 0);

  const fs::path output = path("captioned.webm");
  const CommandResult r =
      run_oxinfer({"run", "burn-captions", "input=" + input.string(), "output=" + output.string(),
                   "model=" + whisper(), "threads=2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto [out_video, out_audio] = count_frames(output);
  EXPECT_EQ(out_video, 30);
  EXPECT_GT(out_audio, 0);
}

// The transcript of `wav` as `oxinfer transcribe --timestamps` makes it (what oxiwhisper
// promises for a file), joined as oxillm joins buffers: a space where neither side has one.
// Through the library, not the CLI's JSON, which replaces broken UTF-8 of a random model.
std::string transcript_of(const fs::path& wav, const fs::path& model_dir) {
  const auto model = oxi::whisper::WhisperModel::load(model_dir);
  const auto backend = oxi::backends::make_cpu_backend(1);
  oxi::whisper::Transcriber transcriber(model, *backend);
  oxi::whisper::TranscribeOptions options;
  options.timestamps = true;
  const oxi::whisper::Transcript t =
      transcriber.transcribe(oxi::media::decode_audio_file(wav), options);
  std::string text;
  for (const oxi::whisper::Segment& s : t.segments) {
    const std::string& piece = s.text;
    if (!text.empty() && !piece.empty() && !std::isspace(static_cast<unsigned char>(text.back())) &&
        !std::isspace(static_cast<unsigned char>(piece.front())))
      text += ' ';
    text += piece;
  }
  return text;
}

TEST_F(PipelinesRun, TranscribeSummarizeAnswersTheTranscript) {
  REQUIRE_OXIWHISPER();
  const fs::path out = path("summary.txt");
  const CommandResult r = run_oxinfer(
      {"run", "transcribe-summarize", "input=" + path("speech.wav").string(),
       "output=" + out.string(), "model=" + whisper(), "llm=" + path("llm.gguf").string(),
       "temperature=0", "max-tokens=8", "threads=2", "prompt=Summarize: {text}"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(out));

  // Independently: the transcript as the library makes it, answered by the engine.
  const std::string transcript = transcript_of(path("speech.wav"), path("whisper"));
  ASSERT_FALSE(transcript.empty());
  auto engine = oxi::llm::Engine::load(path("llm.gguf").string());
  oxi::llm::GenerateOptions g;
  g.sampling.temperature = 0;
  g.max_tokens = 8;
  const std::string expected = engine->send({{"user", "Summarize: " + transcript}}, g).text;
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(read_text(out), expected) << "transcript: '" << transcript << "'";
}

}  // namespace
