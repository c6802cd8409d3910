/**
 * SECTION:element-oxiwhisper
 * @title: oxiwhisper
 *
 * Speech to text with a Whisper model (a Hugging Face directory, an OpenAI .pt, a whisper.cpp
 * ggml .bin, or a Hub repo id). Takes 16 kHz mono audio (put `audioconvert ! audioresample` in
 * front) and pushes `text/x-raw,format=utf8` buffers whose PTS is the start of the speech they
 * transcribe and whose duration is its length, in running order, with GAP events over the spans
 * where nothing was said.
 *
 * Live streams (upstream answers the LATENCY query as live, or `mode=live`): text is committed
 * with the LocalAgreement-2 policy of whisper_streaming: the audio buffer (at most the model's
 * window) is decoded every step, and the words two consecutive passes agree on are pushed and
 * never revised. The step is a third of `latency`, the budget from audio in to text out, which
 * the element reports as its latency.
 *
 * Files (upstream not live, or `mode=file`): the samples are collected and transcribed at EOS
 * (or at a new segment, gap or discontinuity) with openai-whisper's long-form algorithm, so the
 * text and times are exactly those of `oxinfer transcribe --timestamps` on the same samples.
 * Whisper's log-mel is normalised by the whole audio's maximum, so no incremental scheme gives the
 * same result; the text of a file therefore comes at its end.
 *
 * With `word-timestamps=true` each buffer holds one word.
 *
 * Live mode only:
 *
 *  - `vad` gates the audio with Silero VAD v5 (`vad-model`, the file oxivad loads; shared with
 *    it through the model cache): audio outside speech never reaches the decoder, GAP events
 *    cover it, and each stretch of speech is committed in full half a second after it ends.
 *    `vad=auto` (the default) turns it on in live mode when `vad-model` is set; `vad=on`
 *    without `vad-model` fails READY->PAUSED.
 *  - The `unsynced_src` pad (always present, may stay unlinked) carries the tentative
 *    hypothesis after every pass as one JSON object per buffer (`application/x-json`, ending
 *    in a newline): `{"text", "words": [{"word", "start", "end", "probability"}], "is_final":
 *    false, "language"}`, times in seconds of stream time; text committed on `src` is also sent
 *    there, with `"is_final": true`. Buffers on it are pushed as soon as a pass ends, not in
 *    sync with anything.
 *  - `max-observed-delay` and `rtf` (read-only) and an element message `oxiwhisper-stats`
 *    every `stats-interval` of audio report the latency and speed actually achieved. When the
 *    audio waiting for decoding exceeds `latency`, the element posts a QoS message (and, once,
 *    a warning) and commits each pass's words without waiting for a second pass, over a short
 *    buffer, until it has caught up: no audio is ever dropped.
 *  - `encode-audio-only` (default on) runs the encoder on the buffered audio only, so compute
 *    grows with the audio instead of always costing a full window; models trained on full
 *    windows only (OpenAI's) transcribe somewhat worse that way.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 filesrc location=talk.flac ! decodebin ! audioconvert ! audioresample !
 *   oxiwhisper model=openai/whisper-base ! oxisubenc format=srt ! filesink location=talk.srt
 * gst-launch-1.0 pulsesrc ! audioconvert ! audioresample ! oxiwhisper model=whisper-small/
 *   latency=3000 language-code=en-US ! fakesink dump=true
 * ]|
 */
#include "elements/gstoxiwhisper.h"

#include <gst/audio/audio.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "lib/core/model_cache.h"
#include "lib/hub/hub.h"
#include "lib/hub/hub_options.h"
#include "lib/vad/silero_vad_model.h"
#include "lib/vad/speech_segments.h"
#include "lib/vad/vad_stream.h"
#include "lib/whisper/streaming_transcriber.h"
#include "lib/whisper/transcriber.h"
#include "lib/whisper/whisper_model.h"
#include "lib/whisper/whisper_vocab.h"

GST_DEBUG_CATEGORY_STATIC(gst_oxi_whisper_debug);
#define GST_CAT_DEFAULT gst_oxi_whisper_debug

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS("audio/x-raw, format=(string){ F32LE, S16LE }, rate=(int)16000, "
                    "channels=(int)1, layout=(string)interleaved"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS("text/x-raw, format=(string)utf8"));

/* Always present, as the unsynced_src pads of GStreamer's transcriber elements, and with their
 * JSON caps: an application that wants the tentative text links it, anyone else ignores it. */
static GstStaticPadTemplate unsynced_template = GST_STATIC_PAD_TEMPLATE(
    "unsynced_src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS("application/x-json"));

enum {
  PROP_0,
  PROP_MODEL,
  PROP_LANGUAGE_CODE,
  PROP_LANGUAGE,
  PROP_TRANSLATE,
  PROP_WORD_TIMESTAMPS,
  PROP_THREADS,
  PROP_QUANT,
  PROP_INITIAL_PROMPT,
  PROP_LATENCY,
  PROP_MODEL_INSTANCE_ID,
  PROP_MODE,
  PROP_LOADED_MODELS,
  PROP_VAD,
  PROP_VAD_MODEL,
  PROP_VAD_THRESHOLD,
  PROP_ENCODE_AUDIO_ONLY,
  PROP_STATS_INTERVAL,
  PROP_MAX_OBSERVED_DELAY,
  PROP_RTF,
};

#define DEFAULT_LANGUAGE_CODE "auto"
#define DEFAULT_TRANSLATE FALSE
#define DEFAULT_WORD_TIMESTAMPS FALSE
#define DEFAULT_THREADS 0
#define DEFAULT_QUANT GST_OXI_WHISPER_QUANT_NONE
#define DEFAULT_LATENCY_MS 3000
#define MIN_LATENCY_MS 100
#define MAX_LATENCY_MS 600000
#define DEFAULT_MODE GST_OXI_WHISPER_MODE_AUTO
#define DEFAULT_VAD GST_OXI_WHISPER_VAD_AUTO
#define DEFAULT_VAD_THRESHOLD 0.5f
#define DEFAULT_ENCODE_AUDIO_ONLY TRUE
#define DEFAULT_STATS_INTERVAL_MS 5000

/* VAD gating (samples at 16 kHz). Audio before the window where speech is detected goes to
 * the decoder too: Silero's probability crosses the threshold a little into a soft onset.
 * Speech ends after this much audio below the end threshold: short pauses inside a sentence
 * do not cut it (each cut commits the tentative words without a second pass). */
#define VAD_PREROLL_SAMPLES 4800  /* 300 ms */
#define VAD_HANGOVER_SAMPLES 8000 /* 500 ms */

/* A timestamp this far from where the samples so far end is a discontinuity (audiobasesink's
 * default alignment threshold). */
#define DISCONT_TOLERANCE (40 * GST_MSECOND)

#define GST_TYPE_OXI_WHISPER_QUANT (gst_oxi_whisper_quant_get_type())
static GType gst_oxi_whisper_quant_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_OXI_WHISPER_QUANT_NONE, "Weights as stored in the checkpoint", "none"},
      {GST_OXI_WHISPER_QUANT_Q8, "Decoder weights re-quantized to Q8_0 at load", "q8"},
      {GST_OXI_WHISPER_QUANT_Q4, "Decoder weights re-quantized to Q4_0 at load", "q4"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type)) {
    GType t = g_enum_register_static("GstOxiWhisperQuant", values);
    g_once_init_leave(&type, t);
  }
  return type;
}

#define GST_TYPE_OXI_WHISPER_VAD (gst_oxi_whisper_vad_get_type())
static GType gst_oxi_whisper_vad_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_OXI_WHISPER_VAD_AUTO, "In live mode when vad-model is set", "auto"},
      {GST_OXI_WHISPER_VAD_OFF, "Decode all audio", "off"},
      {GST_OXI_WHISPER_VAD_ON, "In live mode (vad-model required)", "on"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type)) {
    GType t = g_enum_register_static("GstOxiWhisperVad", values);
    g_once_init_leave(&type, t);
  }
  return type;
}

#define GST_TYPE_OXI_WHISPER_MODE (gst_oxi_whisper_mode_get_type())
static GType gst_oxi_whisper_mode_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_OXI_WHISPER_MODE_AUTO, "Live when upstream is live, else file", "auto"},
      {GST_OXI_WHISPER_MODE_LIVE, "Commit text as it stabilises, within the latency", "live"},
      {GST_OXI_WHISPER_MODE_FILE, "Transcribe the whole stream at its end (long-form quality)",
       "file"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type)) {
    GType t = g_enum_register_static("GstOxiWhisperMode", values);
    g_once_init_leave(&type, t);
  }
  return type;
}

namespace {

using oxi::whisper::StreamingTranscriber;
using oxi::whisper::Transcriber;
using oxi::whisper::WhisperModel;

struct EventUnref {
  void operator()(GstEvent* e) const { gst_event_unref(e); }
};
using EventPtr = std::unique_ptr<GstEvent, EventUnref>;

// What the chain function and the sink event handler hand to the worker, in stream order.
struct QueueItem {
  enum class Kind { samples, discont, event } kind = Kind::samples;
  std::vector<float> samples;
  GstClockTime pts = GST_CLOCK_TIME_NONE;  // of the first sample
  EventPtr event;
};

// The settings a stream runs with, read from the properties at READY->PAUSED.
struct Settings {
  std::string language = "auto";  // Whisper's code ("en") or "auto"
  bool translate = false;
  bool word_timestamps = false;
  std::string initial_prompt;
  guint latency_ms = DEFAULT_LATENCY_MS;
  GstOxiWhisperMode mode = DEFAULT_MODE;
  bool encode_audio_only = DEFAULT_ENCODE_AUDIO_ONLY;
  guint stats_interval_ms = DEFAULT_STATS_INTERVAL_MS;
  float vad_threshold = DEFAULT_VAD_THRESHOLD;
};

// What the live path measured since READY->PAUSED: written by the worker, read by
// get_property (under LiveStats's mutex in the context).
struct LiveStats {
  uint64_t passes = 0;           // decoder calls
  double decode_seconds = 0.0;   // wall time they took
  uint64_t audio_samples = 0;    // live audio received, speech and silence
  uint64_t skipped_samples = 0;  // silence the VAD kept from the decoder
  uint64_t committed_words = 0;
  uint64_t shortened = 0;  // passes run in catch-up mode (behind the latency budget)
  GstClockTime max_delay = 0;
  std::vector<GstClockTime> delays;  // one per text buffer pushed

  double rtf() const {
    return audio_samples ? decode_seconds / (static_cast<double>(audio_samples) / 16000.0) : 0.0;
  }
  GstClockTime p99_delay() const {
    if (delays.empty()) return 0;
    std::vector<GstClockTime> d = delays;
    const size_t k = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(d.size()))) - 1;
    std::nth_element(d.begin(), d.begin() + static_cast<ptrdiff_t>(k), d.end());
    return d[k];
  }
};

// The live decoder, counted and timed: the `rtf` property, the stats message, and the proof
// that silence gated out by the VAD costs no decoding.
class MeteredDecoder : public oxi::whisper::StreamDecoder {
 public:
  MeteredDecoder(oxi::whisper::StreamDecoder& inner, std::mutex& mutex, LiveStats& stats)
      : inner_(inner), mutex_(mutex), stats_(stats) {}
  size_t max_samples() const override { return inner_.max_samples(); }
  oxi::whisper::StreamHypothesis decode(std::span<const float> samples, const std::string& prompt,
                                        double time_offset) override {
    const auto t0 = std::chrono::steady_clock::now();
    oxi::whisper::StreamHypothesis h = inner_.decode(samples, prompt, time_offset);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
    std::lock_guard lock(mutex_);
    ++stats_.passes;
    stats_.decode_seconds += took.count();
    return h;
  }

 private:
  oxi::whisper::StreamDecoder& inner_;
  std::mutex& mutex_;
  LiveStats& stats_;
};

void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for (const char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (u < 0x20) {
          char buf[8];
          g_snprintf(buf, sizeof buf, "\\u%04x", u);
          out += buf;
        } else {
          out.push_back(ch);  // UTF-8 passes through (Whisper's text is valid UTF-8 or bytes)
        }
    }
  }
  out.push_back('"');
}

// Locale-independent (no decimal comma), as JSON wants.
void append_json_number(std::string& out, double v) {
  char buf[32];
  const auto r =
      std::to_chars(buf, buf + sizeof buf, std::isfinite(v) ? v : 0.0, std::chars_format::fixed, 3);
  out.append(buf, r.ptr);
}

// Whisper's language code for a BCP-47 tag ("en-US" -> "en", "yue-HK" -> "yue"), or "auto";
// empty when Whisper has no such language.
std::string whisper_language(const char* tag) {
  if (!tag || !*tag) return {};
  std::string primary;
  for (const char* p = tag; *p && *p != '-' && *p != '_'; ++p)
    primary.push_back(static_cast<char>(g_ascii_tolower(*p)));
  if (primary == "auto") return primary;
  if (primary == "jv") primary = "jw";  // Whisper's (non-standard) code for Javanese
  for (const oxi::whisper::LanguageInfo& l : oxi::whisper::whisper_languages())
    if (l.code == primary) return primary;
  return {};
}

}  // namespace

struct _GstOxiWhisperContext {
  // The model and its runner: set at READY->PAUSED, the model kept until READY->NULL.
  std::string model_key;
  std::shared_ptr<const WhisperModel> model;
  std::unique_ptr<oxi::backends::Backend> backend;
  int backend_threads = -1;
  std::unique_ptr<Transcriber> transcriber;
  Settings settings;
  std::string vad_key;
  std::shared_ptr<const oxi::vad::SileroVadModel> vad_model;  // set: VAD gating in live mode

  // Between the streaming thread and the worker.
  std::mutex mutex;
  std::condition_variable cond;
  std::deque<QueueItem> queue;
  bool stopping = false;
  bool busy = false;                        // the worker is handling items taken from the queue
  GstFlowReturn flow = GST_FLOW_OK;         // the first failed downstream push, returned by chain
  std::atomic<bool> cancel{false};          // stops the worker's decoding (flush, shutdown)
  std::atomic<bool> live{false};            // the stream's mode, decided at its first buffer
  std::atomic<uint64_t> queued_samples{0};  // audio in `queue`, part of the decoding backlog
  std::thread worker;

  // The live path's measurements (worker writes, get_property reads).
  std::mutex stats_mutex;
  LiveStats stats;

  // Streaming thread only.
  bool is_float = true;  // F32LE, else S16LE
  bool mode_decided = false;
  bool have_samples = false;
  GstClockTime next_pts = GST_CLOCK_TIME_NONE;

  // Worker only. A run is a stretch of contiguous samples; its times count from run_start.
  GstSegment segment;
  bool run_active = false;
  bool run_live = false;
  GstClockTime run_start = 0;
  uint64_t run_samples = 0;
  std::vector<float> file_samples;
  std::unique_ptr<oxi::whisper::TranscriberStreamDecoder> decoder;
  std::unique_ptr<MeteredDecoder> metered;
  std::unique_ptr<StreamingTranscriber> stream;
  GstClockTime pushed_until = GST_CLOCK_TIME_NONE;  // end of the text and gaps pushed so far
  uint64_t next_stats_samples = 0;                  // stats.audio_samples of the next message
  bool qos_warned = false;                          // the falling-behind warning was posted

  // Worker only: VAD gating of a live run. `held` are the run's samples from `held_start` on
  // that the decoder has not been given (the pre-roll, and the last partial VAD window).
  bool run_vad = false;
  std::unique_ptr<oxi::vad::VadStream> vad;
  std::unique_ptr<oxi::vad::SpeechSegmenter> segmenter;
  std::vector<float> held;
  uint64_t held_start = 0;
  uint64_t judged_end = 0;     // run samples the VAD has judged
  bool speaking = false;       // speech goes to the decoder
  uint64_t quiet_samples = 0;  // non-speech since the last speech window, while speaking

  // Worker only: the unsynced_src pad's stream.
  bool unsynced_started = false;
  guint group_id = 0;
  bool have_group_id = false;
};

G_DEFINE_TYPE(GstOxiWhisper, gst_oxi_whisper, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE(oxiwhisper, "oxiwhisper", GST_RANK_NONE, GST_TYPE_OXI_WHISPER);

static void gst_oxi_whisper_finalize(GObject* object);
static void gst_oxi_whisper_set_property(GObject* object, guint prop_id, const GValue* value,
                                         GParamSpec* pspec);
static void gst_oxi_whisper_get_property(GObject* object, guint prop_id, GValue* value,
                                         GParamSpec* pspec);
static GstFlowReturn gst_oxi_whisper_chain(GstPad* pad, GstObject* parent, GstBuffer* buffer);
static gboolean gst_oxi_whisper_sink_event(GstPad* pad, GstObject* parent, GstEvent* event);
static gboolean gst_oxi_whisper_src_query(GstPad* pad, GstObject* parent, GstQuery* query);
static GstStateChangeReturn gst_oxi_whisper_change_state(GstElement* element,
                                                         GstStateChange transition);

static void gst_oxi_whisper_class_init(GstOxiWhisperClass* klass) {
  GObjectClass* gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass* element_class = GST_ELEMENT_CLASS(klass);

  gobject_class->finalize = gst_oxi_whisper_finalize;
  gobject_class->set_property = gst_oxi_whisper_set_property;
  gobject_class->get_property = gst_oxi_whisper_get_property;

  const auto ready_flags = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                                    GST_PARAM_MUTABLE_READY);
  g_object_class_install_property(
      gobject_class, PROP_MODEL,
      g_param_spec_string("model", "Model",
                          "Whisper model: a Hugging Face directory, an OpenAI .pt, a whisper.cpp "
                          "ggml .bin, or a Hub repo id (org/name, fetched into the cache)",
                          nullptr, ready_flags));
  g_object_class_install_property(
      gobject_class, PROP_LANGUAGE_CODE,
      g_param_spec_string("language-code", "Language code",
                          "Spoken language as a BCP-47 tag (en-US, de, yue-HK; only the language "
                          "subtag is used), or auto to detect it",
                          DEFAULT_LANGUAGE_CODE, ready_flags));
  g_object_class_install_property(
      gobject_class, PROP_LANGUAGE,
      g_param_spec_string("language", "Language", "Alias of language-code", DEFAULT_LANGUAGE_CODE,
                          ready_flags));
  g_object_class_install_property(
      gobject_class, PROP_TRANSLATE,
      g_param_spec_boolean("translate", "Translate",
                           "Output English text whatever the spoken language (multilingual models)",
                           DEFAULT_TRANSLATE, ready_flags));
  g_object_class_install_property(
      gobject_class, PROP_WORD_TIMESTAMPS,
      g_param_spec_boolean("word-timestamps", "Word timestamps",
                           "One buffer per word, timed from cross-attention alignment, instead of "
                           "one per segment",
                           DEFAULT_WORD_TIMESTAMPS, ready_flags));
  g_object_class_install_property(
      gobject_class, PROP_THREADS,
      g_param_spec_uint("threads", "Threads", "Inference threads (0 = every core)", 0, 4096,
                        DEFAULT_THREADS, ready_flags));
  g_object_class_install_property(
      gobject_class, PROP_QUANT,
      g_param_spec_enum("quant", "Quantization",
                        "Re-quantize the decoder's weights at load (smaller and faster, slightly "
                        "less accurate)",
                        GST_TYPE_OXI_WHISPER_QUANT, DEFAULT_QUANT, ready_flags));
  g_object_class_install_property(
      gobject_class, PROP_INITIAL_PROMPT,
      g_param_spec_string("initial-prompt", "Initial prompt",
                          "Text said before the stream: names and spellings to prefer", nullptr,
                          ready_flags));
  g_object_class_install_property(
      gobject_class, PROP_LATENCY,
      g_param_spec_uint("latency", "Latency",
                        "Live mode: the budget in milliseconds from audio in to text out; the "
                        "element reports it as its latency and decodes every third of it",
                        MIN_LATENCY_MS, MAX_LATENCY_MS, DEFAULT_LATENCY_MS, ready_flags));
  g_object_class_install_property(
      gobject_class, PROP_MODEL_INSTANCE_ID,
      g_param_spec_string("model-instance-id", "Model instance id",
                          "Elements with the same id share one loaded model (the first one's "
                          "model and quant); unset: elements with the same model, quant and "
                          "options share one",
                          nullptr, ready_flags));
  g_object_class_install_property(
      gobject_class, PROP_MODE,
      g_param_spec_enum("mode", "Mode",
                        "live: commit text as it stabilises; file: transcribe at the end of the "
                        "stream with long-form quality; auto: live when upstream is live",
                        GST_TYPE_OXI_WHISPER_MODE, DEFAULT_MODE, ready_flags));
  g_object_class_install_property(
      gobject_class, PROP_VAD,
      g_param_spec_enum("vad", "Voice activity detection",
                        "Live mode: decode only the speech Silero VAD finds (GAP events cover "
                        "the rest); auto: on when vad-model is set; on: vad-model required",
                        GST_TYPE_OXI_WHISPER_VAD, DEFAULT_VAD, ready_flags));
  g_object_class_install_property(
      gobject_class, PROP_VAD_MODEL,
      g_param_spec_string("vad-model", "VAD model",
                          "Silero VAD v5 model: a silero_vad_16k.safetensors file, a directory "
                          "holding it, or a Hugging Face repo id (as oxivad's model)",
                          nullptr, ready_flags));
  g_object_class_install_property(
      gobject_class, PROP_VAD_THRESHOLD,
      g_param_spec_float("vad-threshold", "VAD threshold",
                         "Speech probability at which speech starts; it ends below "
                         "threshold - 0.15",
                         0.0f, 1.0f, DEFAULT_VAD_THRESHOLD, ready_flags));
  g_object_class_install_property(
      gobject_class, PROP_ENCODE_AUDIO_ONLY,
      g_param_spec_boolean("encode-audio-only", "Encode audio only",
                           "Live mode: run the encoder on the buffered audio only instead of a "
                           "zero-padded full window (compute grows with the audio; models "
                           "trained on full windows only transcribe somewhat worse). File mode "
                           "always encodes full windows",
                           DEFAULT_ENCODE_AUDIO_ONLY, ready_flags));
  g_object_class_install_property(
      gobject_class, PROP_STATS_INTERVAL,
      g_param_spec_uint("stats-interval", "Statistics interval",
                        "Live mode: post an oxiwhisper-stats element message every this many "
                        "milliseconds of audio, and at the end of the stream (0: never)",
                        0, G_MAXUINT, DEFAULT_STATS_INTERVAL_MS, ready_flags));
  const auto read_only = static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_property(
      gobject_class, PROP_MAX_OBSERVED_DELAY,
      g_param_spec_uint64("max-observed-delay", "Maximum observed delay",
                          "Live mode: the largest delay in milliseconds from the end of a "
                          "committed text's audio to its push, both in running time of the "
                          "pipeline clock (0 until text was pushed with a clock)",
                          0, G_MAXUINT64, 0, read_only));
  g_object_class_install_property(
      gobject_class, PROP_RTF,
      g_param_spec_double("rtf", "Real-time factor",
                          "Live mode: time spent decoding / duration of the audio received "
                          "(silence gated out by the VAD counts as audio, not as decoding)",
                          0.0, G_MAXDOUBLE, 0.0, read_only));
  g_object_class_install_property(
      gobject_class, PROP_LOADED_MODELS,
      g_param_spec_uint("loaded-models", "Loaded models",
                        "Number of Whisper models this process holds loaded (one per model, "
                        "quant and options, shared by every oxiwhisper)",
                        0, G_MAXUINT, 0,
                        static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));

  gst_element_class_set_static_metadata(
      element_class, "oxinfer Whisper transcriber", "Filter/Audio/Text",
      "Speech to text with a Whisper model: timed text of live streams within a latency budget, "
      "or long-form transcription of files",
      "oxinfer authors");
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_add_static_pad_template(element_class, &unsynced_template);
  element_class->change_state = GST_DEBUG_FUNCPTR(gst_oxi_whisper_change_state);
  gst_type_mark_as_plugin_api(GST_TYPE_OXI_WHISPER_QUANT, static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(GST_TYPE_OXI_WHISPER_MODE, static_cast<GstPluginAPIFlags>(0));

  GST_DEBUG_CATEGORY_INIT(gst_oxi_whisper_debug, "oxiwhisper", 0, "oxinfer Whisper transcriber");
}

static void gst_oxi_whisper_init(GstOxiWhisper* self) {
  self->sinkpad = gst_pad_new_from_static_template(&sink_template, "sink");
  gst_pad_set_chain_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_oxi_whisper_chain));
  gst_pad_set_event_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_oxi_whisper_sink_event));
  gst_element_add_pad(GST_ELEMENT(self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template(&src_template, "src");
  gst_pad_set_query_function(self->srcpad, GST_DEBUG_FUNCPTR(gst_oxi_whisper_src_query));
  gst_pad_use_fixed_caps(self->srcpad);
  gst_element_add_pad(GST_ELEMENT(self), self->srcpad);

  self->unsynced_srcpad = gst_pad_new_from_static_template(&unsynced_template, "unsynced_src");
  gst_pad_use_fixed_caps(self->unsynced_srcpad);
  gst_element_add_pad(GST_ELEMENT(self), self->unsynced_srcpad);

  self->model = nullptr;
  self->language_code = g_strdup(DEFAULT_LANGUAGE_CODE);
  self->translate = DEFAULT_TRANSLATE;
  self->word_timestamps = DEFAULT_WORD_TIMESTAMPS;
  self->threads = DEFAULT_THREADS;
  self->quant = DEFAULT_QUANT;
  self->initial_prompt = nullptr;
  self->latency_ms = DEFAULT_LATENCY_MS;
  self->model_instance_id = nullptr;
  self->mode = DEFAULT_MODE;
  self->vad = DEFAULT_VAD;
  self->vad_model = nullptr;
  self->vad_threshold = DEFAULT_VAD_THRESHOLD;
  self->encode_audio_only = DEFAULT_ENCODE_AUDIO_ONLY;
  self->stats_interval_ms = DEFAULT_STATS_INTERVAL_MS;
  self->ctx = new GstOxiWhisperContext();
  gst_segment_init(&self->ctx->segment, GST_FORMAT_TIME);
}

static void gst_oxi_whisper_finalize(GObject* object) {
  GstOxiWhisper* self = GST_OXI_WHISPER(object);
  delete self->ctx;  // the worker was joined at PAUSED->READY
  self->ctx = nullptr;
  g_free(self->model);
  g_free(self->language_code);
  g_free(self->initial_prompt);
  g_free(self->model_instance_id);
  g_free(self->vad_model);
  G_OBJECT_CLASS(gst_oxi_whisper_parent_class)->finalize(object);
}

static void gst_oxi_whisper_set_property(GObject* object, guint prop_id, const GValue* value,
                                         GParamSpec* pspec) {
  GstOxiWhisper* self = GST_OXI_WHISPER(object);
  switch (prop_id) {
    case PROP_LANGUAGE_CODE:
    case PROP_LANGUAGE: {
      const char* tag = g_value_get_string(value);
      if (whisper_language(tag).empty()) {
        // As GLib does for out-of-range numbers: warn and keep the old value.
        g_warning(
            "oxiwhisper: '%s' is not a language Whisper knows (use a BCP-47 tag such as "
            "en-US, or auto); keeping '%s'",
            tag ? tag : "(null)", self->language_code);
        return;
      }
      GST_OBJECT_LOCK(self);
      g_free(self->language_code);
      self->language_code = g_strdup(tag);
      GST_OBJECT_UNLOCK(self);
      return;
    }
    default:
      break;
  }
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_MODEL:
      g_free(self->model);
      self->model = g_value_dup_string(value);
      break;
    case PROP_TRANSLATE:
      self->translate = g_value_get_boolean(value);
      break;
    case PROP_WORD_TIMESTAMPS:
      self->word_timestamps = g_value_get_boolean(value);
      break;
    case PROP_THREADS:
      self->threads = g_value_get_uint(value);
      break;
    case PROP_QUANT:
      self->quant = static_cast<GstOxiWhisperQuant>(g_value_get_enum(value));
      break;
    case PROP_INITIAL_PROMPT:
      g_free(self->initial_prompt);
      self->initial_prompt = g_value_dup_string(value);
      break;
    case PROP_LATENCY:
      self->latency_ms = g_value_get_uint(value);
      break;
    case PROP_MODEL_INSTANCE_ID:
      g_free(self->model_instance_id);
      self->model_instance_id = g_value_dup_string(value);
      break;
    case PROP_MODE:
      self->mode = static_cast<GstOxiWhisperMode>(g_value_get_enum(value));
      break;
    case PROP_VAD:
      self->vad = static_cast<GstOxiWhisperVad>(g_value_get_enum(value));
      break;
    case PROP_VAD_MODEL:
      g_free(self->vad_model);
      self->vad_model = g_value_dup_string(value);
      break;
    case PROP_VAD_THRESHOLD:
      self->vad_threshold = g_value_get_float(value);
      break;
    case PROP_ENCODE_AUDIO_ONLY:
      self->encode_audio_only = g_value_get_boolean(value);
      break;
    case PROP_STATS_INTERVAL:
      self->stats_interval_ms = g_value_get_uint(value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void gst_oxi_whisper_get_property(GObject* object, guint prop_id, GValue* value,
                                         GParamSpec* pspec) {
  GstOxiWhisper* self = GST_OXI_WHISPER(object);
  if (prop_id == PROP_LOADED_MODELS) {
    g_value_set_uint(value,
                     static_cast<guint>(oxi::ModelCache<WhisperModel>::instance().live_count()));
    return;
  }
  if (prop_id == PROP_MAX_OBSERVED_DELAY || prop_id == PROP_RTF) {
    GstOxiWhisperContext* c = self->ctx;
    std::lock_guard lock(c->stats_mutex);
    if (prop_id == PROP_RTF)
      g_value_set_double(value, c->stats.rtf());
    else
      g_value_set_uint64(value, c->stats.max_delay / GST_MSECOND);
    return;
  }
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_MODEL:
      g_value_set_string(value, self->model);
      break;
    case PROP_LANGUAGE_CODE:
    case PROP_LANGUAGE:
      g_value_set_string(value, self->language_code);
      break;
    case PROP_TRANSLATE:
      g_value_set_boolean(value, self->translate);
      break;
    case PROP_WORD_TIMESTAMPS:
      g_value_set_boolean(value, self->word_timestamps);
      break;
    case PROP_THREADS:
      g_value_set_uint(value, self->threads);
      break;
    case PROP_QUANT:
      g_value_set_enum(value, self->quant);
      break;
    case PROP_INITIAL_PROMPT:
      g_value_set_string(value, self->initial_prompt);
      break;
    case PROP_LATENCY:
      g_value_set_uint(value, self->latency_ms);
      break;
    case PROP_MODEL_INSTANCE_ID:
      g_value_set_string(value, self->model_instance_id);
      break;
    case PROP_MODE:
      g_value_set_enum(value, self->mode);
      break;
    case PROP_VAD:
      g_value_set_enum(value, self->vad);
      break;
    case PROP_VAD_MODEL:
      g_value_set_string(value, self->vad_model);
      break;
    case PROP_VAD_THRESHOLD:
      g_value_set_float(value, self->vad_threshold);
      break;
    case PROP_ENCODE_AUDIO_ONLY:
      g_value_set_boolean(value, self->encode_audio_only);
      break;
    case PROP_STATS_INTERVAL:
      g_value_set_uint(value, self->stats_interval_ms);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

/* --- output (worker thread) ------------------------------------------------------------------ */

static GstClockTime gst_oxi_whisper_run_time(GstOxiWhisperContext* c, double seconds) {
  const double ns = std::max(0.0, seconds) * static_cast<double>(GST_SECOND);
  return c->run_start + static_cast<GstClockTime>(std::llround(ns));
}

static void gst_oxi_whisper_note_flow(GstOxiWhisper* self, GstFlowReturn ret) {
  if (ret == GST_FLOW_OK) return;
  GstOxiWhisperContext* c = self->ctx;
  std::lock_guard lock(c->mutex);
  if (c->flow == GST_FLOW_OK) c->flow = ret;
}

// A GAP event up to `until`: nothing was said in [pushed_until, until).
static void gst_oxi_whisper_push_gap(GstOxiWhisper* self, GstClockTime until) {
  GstOxiWhisperContext* c = self->ctx;
  if (!GST_CLOCK_TIME_IS_VALID(c->pushed_until) || until <= c->pushed_until) return;
  gst_pad_push_event(self->srcpad, gst_event_new_gap(c->pushed_until, until - c->pushed_until));
  c->pushed_until = until;
}

// Live text: how late it is, measured as the issue of honest latency asks: the running time
// of the push on the pipeline clock minus the running time where the text's audio ends.
// Nothing is measured without a clock (an element outside a pipeline).
static void gst_oxi_whisper_note_delay(GstOxiWhisper* self, GstClockTime end) {
  GstOxiWhisperContext* c = self->ctx;
  GstClock* clock = gst_element_get_clock(GST_ELEMENT(self));
  if (!clock) return;
  const GstClockTime now = gst_clock_get_time(clock);
  gst_object_unref(clock);
  const GstClockTime base = gst_element_get_base_time(GST_ELEMENT(self));
  const guint64 audio_end = gst_segment_to_running_time(&c->segment, GST_FORMAT_TIME, end);
  if (!GST_CLOCK_TIME_IS_VALID(now) || !GST_CLOCK_TIME_IS_VALID(base) || now < base ||
      !GST_CLOCK_TIME_IS_VALID(audio_end))
    return;
  const GstClockTime pushed = now - base;
  // Audio that came faster than real time (a file forced to live) is not late: 0.
  const GstClockTime delay = pushed > audio_end ? pushed - audio_end : 0;
  std::lock_guard lock(c->stats_mutex);
  c->stats.delays.push_back(delay);
  c->stats.max_delay = std::max(c->stats.max_delay, delay);
}

// One text buffer for [t0, t1] seconds of the current run. `live` moves a start before text
// already pushed to its end, so buffers stay in running order, and measures the delay; files
// keep the transcriber's times exactly.
static void gst_oxi_whisper_push_text(GstOxiWhisper* self, const std::string& text, double t0,
                                      double t1, bool live) {
  GstOxiWhisperContext* c = self->ctx;
  GstClockTime pts = gst_oxi_whisper_run_time(c, t0);
  GstClockTime end = gst_oxi_whisper_run_time(c, std::max(t0, t1));
  if (live && GST_CLOCK_TIME_IS_VALID(c->pushed_until)) {
    pts = std::max(pts, c->pushed_until);
    end = std::max(end, pts);
  }
  gst_oxi_whisper_push_gap(self, pts);
  GstBuffer* out = gst_buffer_new_memdup(text.data(), text.size());
  GST_BUFFER_PTS(out) = pts;
  GST_BUFFER_DURATION(out) = end - pts;
  GST_LOG_OBJECT(self, "text %" GST_TIME_FORMAT " + %" GST_TIME_FORMAT ": %s", GST_TIME_ARGS(pts),
                 GST_TIME_ARGS(end - pts), text.c_str());
  c->pushed_until = GST_CLOCK_TIME_IS_VALID(c->pushed_until) ? std::max(c->pushed_until, end) : end;
  gst_oxi_whisper_note_flow(self, gst_pad_push(self->srcpad, out));
  if (live) gst_oxi_whisper_note_delay(self, end);
}

/* --- unsynced_src (worker thread) --- */

// The pad's own stream: stream-start (in the input's group), JSON caps and the input's segment
// before its first buffer or EOS.
static void gst_oxi_whisper_unsynced_start(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  if (c->unsynced_started) return;
  c->unsynced_started = true;
  gchar* id = gst_pad_create_stream_id(self->unsynced_srcpad, GST_ELEMENT(self), "unsynced");
  GstEvent* start = gst_event_new_stream_start(id);
  g_free(id);
  if (c->have_group_id) gst_event_set_group_id(start, c->group_id);
  gst_pad_push_event(self->unsynced_srcpad, start);
  GstCaps* caps = gst_static_pad_template_get_caps(&unsynced_template);
  gst_pad_push_event(self->unsynced_srcpad, gst_event_new_caps(caps));
  gst_caps_unref(caps);
  gst_pad_push_event(self->unsynced_srcpad, gst_event_new_segment(&c->segment));
}

// One JSON object for `words` (times of the current run). An unlinked pad is the normal case:
// NOT_LINKED (and FLUSHING, during a flush) never stop the element; other failures do.
static void gst_oxi_whisper_push_json(GstOxiWhisper* self,
                                      const std::vector<oxi::whisper::Word>& words, bool is_final,
                                      double t0, double t1) {
  GstOxiWhisperContext* c = self->ctx;
  gst_oxi_whisper_unsynced_start(self);
  std::string text;
  for (const oxi::whisper::Word& w : words) text += w.word;
  std::string json = "{\"text\": ";
  append_json_string(json, text);
  json += ", \"words\": [";
  for (size_t i = 0; i < words.size(); ++i) {
    const oxi::whisper::Word& w = words[i];
    if (i) json += ", ";
    json += "{\"word\": ";
    append_json_string(json, w.word);
    json += ", \"start\": ";
    append_json_number(json,
                       static_cast<double>(gst_oxi_whisper_run_time(c, w.start)) / GST_SECOND);
    json += ", \"end\": ";
    append_json_number(json, static_cast<double>(gst_oxi_whisper_run_time(c, w.end)) / GST_SECOND);
    json += ", \"probability\": ";
    append_json_number(json, w.probability);
    json += "}";
  }
  json += "], \"is_final\": ";
  json += is_final ? "true" : "false";
  json += ", \"language\": ";
  const std::string language = c->decoder ? c->decoder->language() : c->settings.language;
  append_json_string(json, language);
  json += "}\n";

  GstBuffer* out = gst_buffer_new_memdup(json.data(), json.size());
  const GstClockTime pts = gst_oxi_whisper_run_time(c, t0);
  GST_BUFFER_PTS(out) = pts;
  GST_BUFFER_DURATION(out) = std::max(gst_oxi_whisper_run_time(c, t1), pts) - pts;
  const GstFlowReturn ret = gst_pad_push(self->unsynced_srcpad, out);
  if (ret != GST_FLOW_NOT_LINKED && ret != GST_FLOW_FLUSHING) gst_oxi_whisper_note_flow(self, ret);
}

// After a live pass: the hypothesis's unstable tail as it stands now.
static void gst_oxi_whisper_push_tentative(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  const std::vector<oxi::whisper::Word>& words = c->stream->tentative();
  const double t0 = words.empty() ? c->stream->final_until() : words.front().start;
  const double t1 = words.empty() ? t0 : words.back().end;
  gst_oxi_whisper_push_json(self, words, false, t0, t1);
}

static void gst_oxi_whisper_push_committed(GstOxiWhisper* self,
                                           const std::vector<oxi::whisper::CommittedText>& items) {
  GstOxiWhisperContext* c = self->ctx;
  for (const oxi::whisper::CommittedText& item : items) {
    if (c->settings.word_timestamps) {
      for (const oxi::whisper::Word& w : item.words)
        gst_oxi_whisper_push_text(self, w.word, w.start, w.end, true);
    } else {
      gst_oxi_whisper_push_text(self, item.text, item.start, item.end, true);
    }
    gst_oxi_whisper_push_json(self, item.words, true, item.start, item.end);
    std::lock_guard lock(c->stats_mutex);
    c->stats.committed_words += item.words.size();
  }
}

/* --- live statistics and QoS (worker thread) --- */

static void gst_oxi_whisper_post_stats(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  GstStructure* st;
  {
    std::lock_guard lock(c->stats_mutex);
    const LiveStats& s = c->stats;
    st = gst_structure_new(
        "oxiwhisper-stats", "rtf", G_TYPE_DOUBLE, s.rtf(), "max-observed-delay", G_TYPE_UINT64,
        static_cast<guint64>(s.max_delay / GST_MSECOND), "p99-delay", G_TYPE_UINT64,
        static_cast<guint64>(s.p99_delay() / GST_MSECOND), "committed-words", G_TYPE_UINT64,
        static_cast<guint64>(s.committed_words), "passes", G_TYPE_UINT64,
        static_cast<guint64>(s.passes), "shortened", G_TYPE_UINT64,
        static_cast<guint64>(s.shortened), "dropped", G_TYPE_UINT64, static_cast<guint64>(0),
        "audio-duration", G_TYPE_UINT64,
        static_cast<guint64>(gst_util_uint64_scale_int(s.audio_samples, GST_SECOND, 16000)),
        "skipped-silence", G_TYPE_UINT64,
        static_cast<guint64>(gst_util_uint64_scale_int(s.skipped_samples, GST_SECOND, 16000)),
        nullptr);
  }
  gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self), st));
}

// Every stats-interval of live audio (for a live source, of wall time too).
static void gst_oxi_whisper_maybe_post_stats(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  const uint64_t interval = static_cast<uint64_t>(c->settings.stats_interval_ms) * 16;
  if (interval == 0) return;
  uint64_t received;
  {
    std::lock_guard lock(c->stats_mutex);
    received = c->stats.audio_samples;
  }
  if (received < c->next_stats_samples) return;
  c->next_stats_samples = (received / interval + 1) * interval;
  gst_oxi_whisper_post_stats(self);
}

// Before a live pass: audio waiting for decoding beyond the latency budget switches the stream
// to catch-up mode (commit each pass, short buffers), with a QoS message, and the first time a
// warning; once the backlog is down to a step, back to LocalAgreement.
static void gst_oxi_whisper_check_backlog(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  StreamingTranscriber& stream = *c->stream;
  const uint64_t backlog = stream.pending_samples() + c->queued_samples.load();
  const uint64_t budget = static_cast<uint64_t>(c->settings.latency_ms) * 16;
  const auto step = static_cast<uint64_t>(stream.step_seconds() * 16000.0);
  if (!stream.catch_up() && backlog > budget) {
    stream.set_catch_up(true);
    const GstClockTime late = gst_util_uint64_scale_int(backlog, GST_SECOND, 16000);
    const GstClockTime at = gst_oxi_whisper_run_time(c, stream.buffer_end());
    double rtf;
    uint64_t received;
    {
      std::lock_guard lock(c->stats_mutex);
      rtf = c->stats.rtf();
      received = c->stats.audio_samples;
    }
    GST_INFO_OBJECT(self, "%" GST_TIME_FORMAT " of audio waits for decoding: catching up",
                    GST_TIME_ARGS(late));
    GstMessage* qos = gst_message_new_qos(
        GST_OBJECT(self), TRUE, gst_segment_to_running_time(&c->segment, GST_FORMAT_TIME, at),
        gst_segment_to_stream_time(&c->segment, GST_FORMAT_TIME, at), at, late);
    // jitter: how far behind; proportion: the real-time factor so far; nothing dropped.
    gst_message_set_qos_values(qos, static_cast<gint64>(late), rtf, 1000000);
    gst_message_set_qos_stats(qos, GST_FORMAT_TIME,
                              gst_util_uint64_scale_int(received, GST_SECOND, 16000), 0);
    gst_element_post_message(GST_ELEMENT(self), qos);
    if (!c->qos_warned) {
      c->qos_warned = true;
      GST_ELEMENT_WARNING(self, STREAM, FAILED, ("Speech recognition cannot keep up"),
                          ("%.1f s of audio wait for decoding, more than the latency of %u ms: "
                           "committing each pass over a short buffer until it catches up "
                           "(no audio is dropped)",
                           static_cast<double>(backlog) / 16000.0, c->settings.latency_ms));
    }
  } else if (stream.catch_up() && backlog <= step) {
    GST_INFO_OBJECT(self, "caught up");
    stream.set_catch_up(false);
  }
}

/* --- runs (worker thread) --- */

static void gst_oxi_whisper_start_run(GstOxiWhisper* self, GstClockTime pts) {
  GstOxiWhisperContext* c = self->ctx;
  c->run_active = true;
  c->run_live = c->live.load();
  c->run_samples = 0;
  if (GST_CLOCK_TIME_IS_VALID(pts))
    c->run_start = pts;
  else if (GST_CLOCK_TIME_IS_VALID(c->pushed_until))
    c->run_start = c->pushed_until;
  else
    c->run_start = c->segment.start;
  if (!GST_CLOCK_TIME_IS_VALID(c->pushed_until)) c->pushed_until = c->run_start;
  c->file_samples.clear();
  c->run_vad = false;
  if (c->run_live) {
    const Settings& s = c->settings;
    oxi::whisper::WindowOptions w;
    w.language = s.language;
    w.translate = s.translate;
    w.word_timestamps = s.word_timestamps;
    w.encode_audio_only = s.encode_audio_only;
    w.cancel = &c->cancel;
    c->decoder = std::make_unique<oxi::whisper::TranscriberStreamDecoder>(*c->transcriber, w);
    c->metered = std::make_unique<MeteredDecoder>(*c->decoder, c->stats_mutex, c->stats);
    oxi::whisper::StreamingOptions o;
    const double window = static_cast<double>(c->decoder->max_samples()) / 16000.0;
    o.min_chunk_seconds = oxi::whisper::StreamingOptions::step_for_latency(
        static_cast<double>(s.latency_ms) / 1000.0, window);
    o.initial_prompt = s.initial_prompt;
    o.keep_words = true;  // the words go to unsynced_src as well
    c->stream = std::make_unique<StreamingTranscriber>(*c->metered, o, 0.0);
    if (c->vad_model) {
      oxi::vad::SegmentParams params;
      params.threshold = s.vad_threshold;
      c->vad = std::make_unique<oxi::vad::VadStream>(c->vad_model);
      c->segmenter = std::make_unique<oxi::vad::SpeechSegmenter>(params);
      c->run_vad = true;
      c->held.clear();
      c->held_start = 0;
      c->judged_end = 0;
      c->speaking = false;
      c->quiet_samples = 0;
    }
    GST_DEBUG_OBJECT(self, "live run from %" GST_TIME_FORMAT ", step %.3f s of a %.1f s window%s",
                     GST_TIME_ARGS(c->run_start), c->stream->step_seconds(), window,
                     c->run_vad ? ", VAD gated" : "");
  } else {
    GST_DEBUG_OBJECT(self, "file run from %" GST_TIME_FORMAT, GST_TIME_ARGS(c->run_start));
  }
}

/* --- VAD gating of a live run (worker thread) --- */

// Gives the decoder the held samples before run sample `until`.
static void gst_oxi_whisper_vad_feed(GstOxiWhisperContext* c, uint64_t until) {
  if (until <= c->held_start) return;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(until - c->held_start, c->held.size()));
  c->stream->insert_audio(std::span<const float>(c->held).first(n));
  c->held.erase(c->held.begin(), c->held.begin() + static_cast<ptrdiff_t>(n));
  c->held_start += n;
}

// Drops the held samples before run sample `until`: silence, never decoded.
static void gst_oxi_whisper_vad_skip(GstOxiWhisperContext* c, uint64_t until) {
  if (until <= c->held_start) return;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(until - c->held_start, c->held.size()));
  c->held.erase(c->held.begin(), c->held.begin() + static_cast<ptrdiff_t>(n));
  c->held_start += n;
  std::lock_guard lock(c->stats_mutex);
  c->stats.skipped_samples += n;
}

// Speech ended (or the run did): everything said is committed now, with no second pass.
static void gst_oxi_whisper_vad_speech_ends(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  c->speaking = false;
  c->quiet_samples = 0;
  gst_oxi_whisper_push_committed(self, c->stream->finish());
  GST_LOG_OBJECT(self, "speech ends at %.3f s", static_cast<double>(c->held_start) / 16000.0);
}

static void gst_oxi_whisper_vad_samples(GstOxiWhisper* self, const std::vector<float>& samples) {
  GstOxiWhisperContext* c = self->ctx;
  c->held.insert(c->held.end(), samples.begin(), samples.end());
  for (const float p : c->vad->push(samples)) {
    c->segmenter->push(p);
    const uint64_t window_start = c->judged_end;
    c->judged_end += oxi::vad::kWindow;
    if (c->segmenter->in_speech()) {
      c->quiet_samples = 0;
      if (!c->speaking) {
        const uint64_t from =
            window_start > VAD_PREROLL_SAMPLES ? window_start - VAD_PREROLL_SAMPLES : 0;
        gst_oxi_whisper_vad_skip(c, from);
        const double t = static_cast<double>(c->held_start) / 16000.0;
        GST_LOG_OBJECT(self, "speech starts at %.3f s", t);
        // Nothing was said before the pre-roll: a gap to it, then decoding resumes there.
        gst_oxi_whisper_push_gap(self, gst_oxi_whisper_run_time(c, t));
        if (c->stream->buffered_samples() == 0)
          c->stream->resume_at(t);
        else
          c->stream->reset(t);  // a cancelled finish() left audio: start afresh
        c->speaking = true;
      }
    } else if (c->speaking) {
      c->quiet_samples += oxi::vad::kWindow;
    }
    if (c->speaking) {
      gst_oxi_whisper_vad_feed(c, c->judged_end);
      if (c->quiet_samples >= VAD_HANGOVER_SAMPLES) gst_oxi_whisper_vad_speech_ends(self);
    }
  }
  if (!c->speaking) {
    // Silence: hold only the pre-roll the next speech may start with; the rest is a gap.
    if (c->judged_end > VAD_PREROLL_SAMPLES)
      gst_oxi_whisper_vad_skip(c, c->judged_end - VAD_PREROLL_SAMPLES);
    gst_oxi_whisper_push_gap(
        self, gst_oxi_whisper_run_time(c, static_cast<double>(c->held_start) / 16000.0));
  }
}

// End of a run (EOS, new segment, discontinuity): everything said in it is pushed, then a gap
// to its end.
static void gst_oxi_whisper_end_run(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  if (!c->run_active) return;
  c->run_active = false;
  if (c->run_live) {
    if (c->run_vad) {
      // The last partial VAD window: speech in progress keeps it, silence drops it.
      if (c->speaking)
        gst_oxi_whisper_vad_feed(c, c->held_start + c->held.size());
      else
        gst_oxi_whisper_vad_skip(c, c->held_start + c->held.size());
      c->speaking = false;
      c->vad.reset();
      c->segmenter.reset();
      c->held.clear();
    }
    gst_oxi_whisper_push_committed(self, c->stream->finish());
    c->stream.reset();
    c->metered.reset();
    c->decoder.reset();
    gst_oxi_whisper_post_stats(self);
  } else if (!c->file_samples.empty()) {
    const Settings& s = c->settings;
    // `oxinfer transcribe --timestamps`'s options: the element's text equals the CLI's.
    oxi::whisper::TranscribeOptions o;
    o.language = s.language;
    o.translate = s.translate;
    o.word_timestamps = s.word_timestamps;
    o.initial_prompt = s.initial_prompt;
    const oxi::whisper::Transcript t =
        c->transcriber->transcribe(c->file_samples, o, {}, &c->cancel);
    c->file_samples.clear();
    c->file_samples.shrink_to_fit();
    if (c->cancel) return;
    for (const oxi::whisper::Segment& seg : t.segments) {
      if (s.word_timestamps) {
        for (const oxi::whisper::Word& w : seg.words)
          gst_oxi_whisper_push_text(self, w.word, w.start, w.end, false);
      } else {
        gst_oxi_whisper_push_text(self, seg.text, seg.t0, seg.t1, false);
      }
    }
  }
  if (!c->cancel)
    gst_oxi_whisper_push_gap(
        self, gst_oxi_whisper_run_time(c, static_cast<double>(c->run_samples) / 16000.0));
}

static void gst_oxi_whisper_handle_item(GstOxiWhisper* self, QueueItem& item) {
  GstOxiWhisperContext* c = self->ctx;
  switch (item.kind) {
    case QueueItem::Kind::samples:
      c->queued_samples -= item.samples.size();
      if (!c->run_active) gst_oxi_whisper_start_run(self, item.pts);
      c->run_samples += item.samples.size();
      if (c->run_live) {
        {
          std::lock_guard lock(c->stats_mutex);
          c->stats.audio_samples += item.samples.size();
        }
        if (c->run_vad)
          gst_oxi_whisper_vad_samples(self, item.samples);
        else
          c->stream->insert_audio(item.samples);
      } else {
        c->file_samples.insert(c->file_samples.end(), item.samples.begin(), item.samples.end());
      }
      return;
    case QueueItem::Kind::discont:
      gst_oxi_whisper_end_run(self);
      return;
    case QueueItem::Kind::event:
      break;
  }
  GstEvent* event = item.event.release();
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_STREAM_START: {
      // unsynced_src starts its own stream (in the same group) before its next output.
      c->have_group_id = gst_event_parse_group_id(event, &c->group_id);
      c->unsynced_started = false;
      gst_pad_push_event(self->srcpad, event);
      return;
    }
    case GST_EVENT_CAPS: {
      gst_event_unref(event);
      GstCaps* caps = gst_static_pad_template_get_caps(&src_template);
      gst_oxi_whisper_note_flow(self, gst_pad_push_event(self->srcpad, gst_event_new_caps(caps))
                                          ? GST_FLOW_OK
                                          : GST_FLOW_NOT_NEGOTIATED);
      gst_caps_unref(caps);
      return;
    }
    case GST_EVENT_SEGMENT: {
      gst_oxi_whisper_end_run(self);
      GstSegment segment;
      gst_event_copy_segment(event, &segment);
      if (segment.format != GST_FORMAT_TIME) {
        // Text is timed: a segment of bytes or samples becomes a time segment from zero.
        const guint32 seqnum = gst_event_get_seqnum(event);
        gst_event_unref(event);
        gst_segment_init(&segment, GST_FORMAT_TIME);
        event = gst_event_new_segment(&segment);
        gst_event_set_seqnum(event, seqnum);
      }
      c->segment = segment;
      c->pushed_until = GST_CLOCK_TIME_NONE;
      if (c->unsynced_started)
        gst_pad_push_event(self->unsynced_srcpad, gst_event_new_segment(&segment));
      gst_pad_push_event(self->srcpad, event);
      return;
    }
    case GST_EVENT_GAP: {
      // No audio for a span: what came before is complete, and nothing is said in the gap.
      gst_oxi_whisper_end_run(self);
      GstClockTime ts, duration;
      gst_event_parse_gap(event, &ts, &duration);
      gst_event_unref(event);
      if (GST_CLOCK_TIME_IS_VALID(ts)) {
        if (!GST_CLOCK_TIME_IS_VALID(c->pushed_until)) c->pushed_until = ts;
        gst_oxi_whisper_push_gap(self, GST_CLOCK_TIME_IS_VALID(duration) ? ts + duration : ts);
      }
      return;
    }
    case GST_EVENT_EOS: {
      gst_oxi_whisper_end_run(self);
      gst_oxi_whisper_unsynced_start(self);
      GstEvent* eos = gst_event_new_eos();
      gst_event_set_seqnum(eos, gst_event_get_seqnum(event));
      gst_pad_push_event(self->unsynced_srcpad, eos);
      gst_pad_push_event(self->srcpad, event);
      return;
    }
    default:
      gst_pad_push_event(self->srcpad, event);
      return;
  }
}

// Live mode: a pass whenever a step of audio waits; its committed text, its tentative tail on
// unsynced_src, then a gap over what is final and silent.
static void gst_oxi_whisper_live_passes(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  while (c->run_active && c->run_live && c->stream->ready() && !c->cancel) {
    gst_oxi_whisper_check_backlog(self);
    if (c->stream->catch_up()) {
      std::lock_guard lock(c->stats_mutex);
      ++c->stats.shortened;
    }
    gst_oxi_whisper_push_committed(self, c->stream->process());
    if (c->cancel) break;
    gst_oxi_whisper_push_tentative(self);
    gst_oxi_whisper_push_gap(self, gst_oxi_whisper_run_time(c, c->stream->final_until()));
  }
  if (c->run_active && c->run_live && !c->cancel) gst_oxi_whisper_maybe_post_stats(self);
}

static void gst_oxi_whisper_worker(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  std::unique_lock lock(c->mutex);
  for (;;) {
    c->cond.wait(lock, [&] { return c->stopping || !c->queue.empty(); });
    if (c->stopping) break;
    std::deque<QueueItem> items;
    items.swap(c->queue);
    c->busy = true;
    lock.unlock();
    try {
      // Live passes after every buffer, not once per batch: audio that piled up while a pass
      // ran is decoded a step (or, behind the budget, a short buffer) at a time, with its
      // tentative text, statistics and QoS, rather than all at once by the end of the run.
      for (QueueItem& item : items) {
        if (c->cancel) break;  // flushing: the items are dropped
        gst_oxi_whisper_handle_item(self, item);
        gst_oxi_whisper_live_passes(self);
      }
    } catch (const std::exception& e) {
      GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Speech recognition failed"), ("%s", e.what()));
      gst_oxi_whisper_note_flow(self, GST_FLOW_ERROR);
      c->run_active = false;
    }
    items.clear();  // drop unhandled events outside the lock
    lock.lock();
    c->busy = false;
    c->cond.notify_all();
  }
}

/* --- streaming thread ------------------------------------------------------------------------ */

// Forgets the stream (after a flush or at start/stop); the worker must be idle or stopped.
static void gst_oxi_whisper_reset_stream(GstOxiWhisperContext* c) {
  c->queue.clear();
  c->queued_samples = 0;
  c->flow = GST_FLOW_OK;
  c->mode_decided = false;
  c->have_samples = false;
  c->next_pts = GST_CLOCK_TIME_NONE;
  c->run_active = false;
  c->file_samples.clear();
  c->stream.reset();
  c->metered.reset();
  c->decoder.reset();
  c->run_vad = false;
  c->vad.reset();
  c->segmenter.reset();
  c->held.clear();
  c->speaking = false;
  c->pushed_until = GST_CLOCK_TIME_NONE;
  gst_segment_init(&c->segment, GST_FORMAT_TIME);
}

static void gst_oxi_whisper_decide_mode(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  c->mode_decided = true;
  bool live = c->settings.mode == GST_OXI_WHISPER_MODE_LIVE;
  if (c->settings.mode == GST_OXI_WHISPER_MODE_AUTO) {
    GstQuery* query = gst_query_new_latency();
    gboolean upstream_live = FALSE;
    if (gst_pad_peer_query(self->sinkpad, query))
      gst_query_parse_latency(query, &upstream_live, nullptr, nullptr);
    gst_query_unref(query);
    live = upstream_live;
  }
  c->live = live;
  GST_INFO_OBJECT(self, "%s mode", live ? "live" : "file");
}

static void gst_oxi_whisper_enqueue(GstOxiWhisperContext* c, QueueItem item) {
  c->queue.push_back(std::move(item));
  c->cond.notify_all();
}

static GstFlowReturn gst_oxi_whisper_chain(GstPad* pad, GstObject* parent, GstBuffer* buffer) {
  GstOxiWhisper* self = GST_OXI_WHISPER(parent);
  GstOxiWhisperContext* c = self->ctx;
  (void)pad;
  if (!c->mode_decided) gst_oxi_whisper_decide_mode(self);

  QueueItem item;
  GstMapInfo map;
  if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) {
    gst_buffer_unref(buffer);
    GST_ELEMENT_ERROR(self, RESOURCE, READ, ("Could not map an audio buffer"), (nullptr));
    return GST_FLOW_ERROR;
  }
  if (c->is_float) {
    const size_t n = map.size / sizeof(float);
    item.samples.resize(n);
    std::memcpy(item.samples.data(), map.data, n * sizeof(float));
  } else {
    const size_t n = map.size / sizeof(int16_t);
    item.samples.resize(n);
    const auto* in = reinterpret_cast<const int16_t*>(map.data);
    for (size_t i = 0; i < n; ++i) item.samples[i] = static_cast<float>(in[i]) / 32768.0f;
  }
  gst_buffer_unmap(buffer, &map);

  const GstClockTime pts = GST_BUFFER_PTS(buffer);
  bool discont = c->have_samples && GST_BUFFER_IS_DISCONT(buffer);
  if (c->have_samples && GST_CLOCK_TIME_IS_VALID(pts) && GST_CLOCK_TIME_IS_VALID(c->next_pts)) {
    const GstClockTimeDiff drift = GST_CLOCK_DIFF(c->next_pts, pts);
    if (drift > static_cast<GstClockTimeDiff>(DISCONT_TOLERANCE) ||
        drift < -static_cast<GstClockTimeDiff>(DISCONT_TOLERANCE)) {
      GST_DEBUG_OBJECT(self, "timestamp jump of %" GST_STIME_FORMAT, GST_STIME_ARGS(drift));
      discont = true;
    }
  }
  const GstClockTime duration = gst_util_uint64_scale_int(item.samples.size(), GST_SECOND, 16000);
  c->next_pts = GST_CLOCK_TIME_IS_VALID(pts)           ? pts + duration
                : GST_CLOCK_TIME_IS_VALID(c->next_pts) ? c->next_pts + duration
                                                       : GST_CLOCK_TIME_NONE;
  c->have_samples = true;
  item.pts = pts;
  gst_buffer_unref(buffer);

  // Only a queue append under the lock: decoding never holds up the streaming thread.
  std::lock_guard lock(c->mutex);
  if (c->flow != GST_FLOW_OK) return c->flow;
  if (discont) {
    QueueItem mark;
    mark.kind = QueueItem::Kind::discont;
    gst_oxi_whisper_enqueue(c, std::move(mark));
  }
  c->queued_samples += item.samples.size();
  gst_oxi_whisper_enqueue(c, std::move(item));
  return GST_FLOW_OK;
}

static gboolean gst_oxi_whisper_sink_event(GstPad* pad, GstObject* parent, GstEvent* event) {
  GstOxiWhisper* self = GST_OXI_WHISPER(parent);
  GstOxiWhisperContext* c = self->ctx;
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_CAPS: {
      GstCaps* caps;
      gst_event_parse_caps(event, &caps);
      GstAudioInfo info;
      if (!gst_audio_info_from_caps(&info, caps) || GST_AUDIO_INFO_RATE(&info) != 16000 ||
          GST_AUDIO_INFO_CHANNELS(&info) != 1) {
        GST_WARNING_OBJECT(self, "refusing caps %" GST_PTR_FORMAT, caps);
        gst_event_unref(event);
        return FALSE;
      }
      c->is_float = GST_AUDIO_INFO_FORMAT(&info) == GST_AUDIO_FORMAT_F32LE;
      break;  // queued: the worker announces text caps in stream order
    }
    case GST_EVENT_FLUSH_START:
      // Stop the current pass; the worker drops what it holds until FLUSH_STOP.
      c->cancel = true;
      gst_pad_push_event(self->unsynced_srcpad, gst_event_ref(event));
      return gst_pad_push_event(self->srcpad, event);
    case GST_EVENT_FLUSH_STOP: {
      {
        std::unique_lock lock(c->mutex);
        c->queue.clear();
        c->cond.wait(lock, [&] { return !c->busy; });
        gst_oxi_whisper_reset_stream(c);
        c->cancel = false;
      }
      gst_pad_push_event(self->unsynced_srcpad, gst_event_ref(event));
      return gst_pad_push_event(self->srcpad, event);
    }
    default:
      break;
  }
  // GST_EVENT_IS_SERIALIZED mixes two enums, which C++20 deprecates.
  const bool serialized = (static_cast<unsigned>(GST_EVENT_TYPE(event)) &
                           static_cast<unsigned>(GST_EVENT_TYPE_SERIALIZED)) != 0;
  if (!serialized) return gst_pad_event_default(pad, parent, event);
  // Serialized events (stream-start, caps, segment, tags, gap, EOS) go out after the text of
  // the audio before them.
  QueueItem item;
  item.kind = QueueItem::Kind::event;
  item.event.reset(event);
  std::lock_guard lock(c->mutex);
  gst_oxi_whisper_enqueue(c, std::move(item));
  return TRUE;
}

static gboolean gst_oxi_whisper_src_query(GstPad* pad, GstObject* parent, GstQuery* query) {
  GstOxiWhisper* self = GST_OXI_WHISPER(parent);
  if (GST_QUERY_TYPE(query) != GST_QUERY_LATENCY) return gst_pad_query_default(pad, parent, query);

  GST_OBJECT_LOCK(self);
  const GstClockTime ours = static_cast<GstClockTime>(self->latency_ms) * GST_MSECOND;
  const GstOxiWhisperMode mode = self->mode;
  GST_OBJECT_UNLOCK(self);
  // Answered in PAUSED already, before any audio: live pipelines configure their latency
  // before data flows. Without an upstream answer the element assumes a live stream (the
  // only case where the answer matters) unless it is set to file mode.
  gboolean live = mode != GST_OXI_WHISPER_MODE_FILE;
  GstClockTime min = 0, max = GST_CLOCK_TIME_NONE;
  GstQuery* peer = gst_query_new_latency();
  if (gst_pad_peer_query(self->sinkpad, peer)) gst_query_parse_latency(peer, &live, &min, &max);
  gst_query_unref(peer);
  // Text of a word is out within `latency` of its start; audio waits in an unbounded queue,
  // so there is no maximum.
  min += ours;
  max = GST_CLOCK_TIME_NONE;
  GST_DEBUG_OBJECT(self, "latency: live %d, min %" GST_TIME_FORMAT, live, GST_TIME_ARGS(min));
  gst_query_set_latency(query, live, min, max);
  return TRUE;
}

/* --- state changes ---------------------------------------------------------------------------- */

// Loads (or shares) the model and prepares a transcriber; posts an error and returns FALSE on
// failure.
static gboolean gst_oxi_whisper_prepare(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  GST_OBJECT_LOCK(self);
  const std::string model = self->model ? self->model : "";
  const std::string instance_id = self->model_instance_id ? self->model_instance_id : "";
  const GstOxiWhisperQuant quant = self->quant;
  const int threads = static_cast<int>(self->threads);
  Settings s;
  s.language = whisper_language(self->language_code);
  s.translate = self->translate;
  s.word_timestamps = self->word_timestamps;
  s.initial_prompt = self->initial_prompt ? self->initial_prompt : "";
  s.latency_ms = self->latency_ms;
  s.mode = self->mode;
  s.encode_audio_only = self->encode_audio_only;
  s.stats_interval_ms = self->stats_interval_ms;
  s.vad_threshold = self->vad_threshold;
  const GstOxiWhisperVad vad = self->vad;
  const std::string vad_spec = self->vad_model ? self->vad_model : "";
  GST_OBJECT_UNLOCK(self);

  if (model.empty()) {
    GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND, ("No Whisper model set"),
                      ("set the 'model' property to a model path or Hub repo id"));
    return FALSE;
  }
  const char* quant_name = quant == GST_OXI_WHISPER_QUANT_Q8   ? "q8"
                           : quant == GST_OXI_WHISPER_QUANT_Q4 ? "q4"
                                                               : "none";
  try {
    oxi::whisper::LoadOptions load;
    if (quant == GST_OXI_WHISPER_QUANT_Q8) load.quant = oxi::kernels::DType::Q8_0;
    if (quant == GST_OXI_WHISPER_QUANT_Q4) load.quant = oxi::kernels::DType::Q4_0;
    std::filesystem::path path;
    std::string key;
    if (!instance_id.empty()) {
      key = "whisper-instance:" + instance_id;
    } else {
      path = oxi::hub::resolve_model(model, oxi::hub::HubOptions::from_environment());
      key = "whisper:" + std::filesystem::weakly_canonical(path).string() + ":" + quant_name;
    }
    if (key != c->model_key || !c->model) {
      c->model = oxi::ModelCache<WhisperModel>::instance().get(key, [&] {
        if (path.empty())
          path = oxi::hub::resolve_model(model, oxi::hub::HubOptions::from_environment());
        GST_INFO_OBJECT(self, "loading %s (%s)", path.string().c_str(), quant_name);
        return WhisperModel::load(path, load);
      });
      c->model_key = key;
    }
  } catch (const std::exception& e) {
    // Not on disk (nor a repo the hub could fetch): NOT_FOUND; there but unreadable: OPEN_READ.
    std::error_code ec;
    const bool missing = !std::filesystem::exists(model, ec);
    if (missing)
      GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND, ("Whisper model '%s' not found", model.c_str()),
                        ("%s", e.what()));
    else
      GST_ELEMENT_ERROR(self, RESOURCE, OPEN_READ,
                        ("Could not load Whisper model '%s'", model.c_str()), ("%s", e.what()));
    c->model.reset();
    c->model_key.clear();
    return FALSE;
  }

  if (s.language != "auto" && oxi::whisper::uses_language_tokens(*c->model) &&
      !c->model->vocab().language_token(s.language)) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("Unsupported language"),
                      ("%s: the model has no language '%s'", model.c_str(), s.language.c_str()));
    return FALSE;
  }
  try {
    if (!c->backend || c->backend_threads != threads) {
      c->backend = oxi::backends::make_cpu_backend(threads);
      c->backend_threads = threads;
    }
    c->transcriber = std::make_unique<Transcriber>(c->model, *c->backend);
  } catch (const std::exception& e) {
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("Could not set up Whisper inference"),
                      ("%s: %s", model.c_str(), e.what()));
    return FALSE;
  }
  // The VAD model, loaded even when the stream may turn out to be a file: the mode is known at
  // the first buffer, and loading must not happen on the streaming thread. `vad=auto` without a
  // model decodes everything, as before VAD gating existed; `vad=on` without one is an error.
  c->vad_model.reset();
  c->vad_key.clear();
  if (vad != GST_OXI_WHISPER_VAD_OFF) {
    if (vad_spec.empty()) {
      if (vad == GST_OXI_WHISPER_VAD_ON) {
        GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND, ("vad=on but no VAD model set"),
                          ("set 'vad-model' to a silero_vad_16k.safetensors file or a Hugging "
                           "Face repo id, or set vad=off"));
        return FALSE;
      }
      GST_INFO_OBJECT(self, "no vad-model: live audio is decoded without VAD gating");
    } else {
      try {
        // The key oxivad uses: both elements share one loaded copy.
        c->vad_key = "silero-vad:" + vad_spec;
        c->vad_model = oxi::ModelCache<oxi::vad::SileroVadModel>::instance().get(c->vad_key, [&] {
          return oxi::vad::SileroVadModel::load_spec(vad_spec,
                                                     oxi::hub::HubOptions::from_environment());
        });
      } catch (const std::exception& e) {
        GST_ELEMENT_ERROR(self, RESOURCE, OPEN_READ,
                          ("Could not load the VAD model '%s'", vad_spec.c_str()),
                          ("%s", e.what()));
        c->vad_key.clear();
        return FALSE;
      }
    }
  }
  c->settings = s;
  return TRUE;
}

static void gst_oxi_whisper_start_worker(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  std::lock_guard lock(c->mutex);
  gst_oxi_whisper_reset_stream(c);
  c->stopping = false;
  c->busy = false;
  c->cancel = false;
  c->unsynced_started = false;
  c->have_group_id = false;
  c->qos_warned = false;
  c->next_stats_samples = static_cast<uint64_t>(c->settings.stats_interval_ms) * 16;
  {
    std::lock_guard stats_lock(c->stats_mutex);
    c->stats = LiveStats();
  }
  c->worker = std::thread(gst_oxi_whisper_worker, self);
}

static void gst_oxi_whisper_stop_worker(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  {
    std::lock_guard lock(c->mutex);
    c->stopping = true;
    c->cancel = true;
    c->cond.notify_all();
  }
  if (c->worker.joinable()) c->worker.join();
  std::lock_guard lock(c->mutex);
  gst_oxi_whisper_reset_stream(c);
}

static GstStateChangeReturn gst_oxi_whisper_change_state(GstElement* element,
                                                         GstStateChange transition) {
  GstOxiWhisper* self = GST_OXI_WHISPER(element);
  GstOxiWhisperContext* c = self->ctx;
  switch (transition) {
    case GST_STATE_CHANGE_READY_TO_PAUSED:
      // Model loading is slow and may download: here, on the application's thread, never on
      // the streaming thread.
      if (!gst_oxi_whisper_prepare(self)) return GST_STATE_CHANGE_FAILURE;
      gst_oxi_whisper_start_worker(self);
      break;
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      gst_oxi_whisper_stop_worker(self);
      break;
    default:
      break;
  }
  const GstStateChangeReturn ret =
      GST_ELEMENT_CLASS(gst_oxi_whisper_parent_class)->change_state(element, transition);
  switch (transition) {
    case GST_STATE_CHANGE_READY_TO_PAUSED:
      if (ret == GST_STATE_CHANGE_FAILURE) gst_oxi_whisper_stop_worker(self);
      break;
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      c->transcriber.reset();
      break;
    case GST_STATE_CHANGE_READY_TO_NULL:
      // Let go of the model: the cache frees it when no other element holds it.
      c->transcriber.reset();
      c->backend.reset();
      c->backend_threads = -1;
      c->model.reset();
      c->model_key.clear();
      c->vad_model.reset();
      c->vad_key.clear();
      break;
    default:
      break;
  }
  return ret;
}
