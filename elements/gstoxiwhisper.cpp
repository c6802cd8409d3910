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
 *  - Elements on one model share its encoder; encoder passes of different elements that fall
 *    together run as one batch (on the threads of the element that runs it; elements with
 *    `threads=1` are not batched but encode in parallel). The stats message counts them
 *    model-wide: `encoder-windows` windows encoded in `encoder-passes` passes.
 *  - `condition-on-previous-text` (default on): live passes are prompted with the committed
 *    text before the buffer, as whisper_streaming does; off for models never trained with
 *    prompts.
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

#include <exception>
#include <filesystem>
#include <mutex>
#include <string>
#include <utility>

#include "backends/cpu/cpu_backend.h"
#include "elements/audio_samples.h"
#include "elements/enum_type.h"
#include "elements/model_loading.h"
#include "elements/property_fields.h"
#include "elements/whisper_context.h"
#include "elements/whisper_worker.h"
#include "lib/core/model_cache.h"
#include "lib/hub/hub.h"
#include "lib/hub/hub_options.h"
#include "lib/whisper/encoder_batcher.h"
#include "lib/whisper/whisper_vocab.h"

GST_DEBUG_CATEGORY(gst_oxi_whisper_debug);
#define GST_CAT_DEFAULT gst_oxi_whisper_debug

using oxi::whisper::WhisperModel;

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
  PROP_KV_CACHE,
  PROP_INITIAL_PROMPT,
  PROP_LATENCY,
  PROP_MODEL_INSTANCE_ID,
  PROP_MODE,
  PROP_LOADED_MODELS,
  PROP_VAD,
  PROP_VAD_MODEL,
  PROP_VAD_THRESHOLD,
  PROP_ENCODE_AUDIO_ONLY,
  PROP_CONDITION_ON_PREVIOUS_TEXT,
  PROP_STATS_INTERVAL,
  PROP_MAX_OBSERVED_DELAY,
  PROP_RTF,
};

#define DEFAULT_LANGUAGE_CODE "auto"
#define DEFAULT_TRANSLATE FALSE
#define DEFAULT_WORD_TIMESTAMPS FALSE
#define DEFAULT_THREADS 0
#define DEFAULT_QUANT GST_OXI_WHISPER_QUANT_NONE
#define DEFAULT_KV_CACHE GST_OXI_WHISPER_KV_CACHE_AUTO
#define DEFAULT_LATENCY_MS 3000
#define MIN_LATENCY_MS 100
#define MAX_LATENCY_MS 600000
#define DEFAULT_MODE GST_OXI_WHISPER_MODE_AUTO
#define DEFAULT_VAD GST_OXI_WHISPER_VAD_AUTO
#define DEFAULT_VAD_THRESHOLD 0.5f
#define DEFAULT_ENCODE_AUDIO_ONLY TRUE
#define DEFAULT_CONDITION_ON_PREVIOUS_TEXT TRUE
#define DEFAULT_STATS_INTERVAL_MS 5000

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
  return oxi_enum_type(&type, "GstOxiWhisperQuant", values);
}

#define GST_TYPE_OXI_WHISPER_KV_CACHE (gst_oxi_whisper_kv_cache_get_type())
static GType gst_oxi_whisper_kv_cache_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_OXI_WHISPER_KV_CACHE_AUTO, "f16 in live mode (many streams), f32 in file mode", "auto"},
      {GST_OXI_WHISPER_KV_CACHE_F32, "32-bit floats: the reference's arithmetic", "f32"},
      {GST_OXI_WHISPER_KV_CACHE_F16, "16-bit floats: half the memory per stream", "f16"},
      {0, nullptr, nullptr}};
  return oxi_enum_type(&type, "GstOxiWhisperKvCache", values);
}

#define GST_TYPE_OXI_WHISPER_VAD (gst_oxi_whisper_vad_get_type())
static GType gst_oxi_whisper_vad_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_OXI_WHISPER_VAD_AUTO, "In live mode when vad-model is set", "auto"},
      {GST_OXI_WHISPER_VAD_OFF, "Decode all audio", "off"},
      {GST_OXI_WHISPER_VAD_ON, "In live mode (vad-model required)", "on"},
      {0, nullptr, nullptr}};
  return oxi_enum_type(&type, "GstOxiWhisperVad", values);
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
  return oxi_enum_type(&type, "GstOxiWhisperMode", values);
}

static const OxiPropertyField properties[] = {
    OXI_PROPERTY_FIELD(PROP_MODEL, GstOxiWhisper, model),
    OXI_PROPERTY_FIELD(PROP_LANGUAGE_CODE, GstOxiWhisper, language_code),
    OXI_PROPERTY_FIELD(PROP_LANGUAGE, GstOxiWhisper, language_code),
    OXI_PROPERTY_FIELD(PROP_TRANSLATE, GstOxiWhisper, translate),
    OXI_PROPERTY_FIELD(PROP_WORD_TIMESTAMPS, GstOxiWhisper, word_timestamps),
    OXI_PROPERTY_FIELD(PROP_THREADS, GstOxiWhisper, threads),
    OXI_PROPERTY_FIELD(PROP_QUANT, GstOxiWhisper, quant),
    OXI_PROPERTY_FIELD(PROP_KV_CACHE, GstOxiWhisper, kv_cache),
    OXI_PROPERTY_FIELD(PROP_INITIAL_PROMPT, GstOxiWhisper, initial_prompt),
    OXI_PROPERTY_FIELD(PROP_LATENCY, GstOxiWhisper, latency_ms),
    OXI_PROPERTY_FIELD(PROP_MODEL_INSTANCE_ID, GstOxiWhisper, model_instance_id),
    OXI_PROPERTY_FIELD(PROP_MODE, GstOxiWhisper, mode),
    OXI_PROPERTY_FIELD(PROP_VAD, GstOxiWhisper, vad),
    OXI_PROPERTY_FIELD(PROP_VAD_MODEL, GstOxiWhisper, vad_model),
    OXI_PROPERTY_FIELD(PROP_VAD_THRESHOLD, GstOxiWhisper, vad_threshold),
    OXI_PROPERTY_FIELD(PROP_ENCODE_AUDIO_ONLY, GstOxiWhisper, encode_audio_only),
    OXI_PROPERTY_FIELD(PROP_CONDITION_ON_PREVIOUS_TEXT, GstOxiWhisper, condition_on_previous_text),
    OXI_PROPERTY_FIELD(PROP_STATS_INTERVAL, GstOxiWhisper, stats_interval_ms),
};

// Whisper's language code for a BCP-47 tag ("en-US" -> "en", "yue-HK" -> "yue"), or "auto";
// empty when Whisper has no such language.
static std::string whisper_language(const char* tag) {
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
      gobject_class, PROP_KV_CACHE,
      g_param_spec_enum("kv-cache", "KV cache type",
                        "Element type of the decoder's per-stream caches (cross-attention keys "
                        "and values of the audio, self-attention cache): f16 halves what each "
                        "stream holds, as whisper.cpp keeps them; f32 computes as the reference "
                        "does (and as oxinfer transcribe does by default)",
                        GST_TYPE_OXI_WHISPER_KV_CACHE, DEFAULT_KV_CACHE, ready_flags));
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
      gobject_class, PROP_CONDITION_ON_PREVIOUS_TEXT,
      g_param_spec_boolean("condition-on-previous-text", "Condition on previous text",
                           "Live mode: decode each pass with the last 200 characters of "
                           "committed text as the prompt (<|startofprev|>), as "
                           "whisper_streaming does; turn off for models not trained with "
                           "prompts (the project's demo model: 97 % -> 45 % WER live at 3 s). Off, "
                           "initial-prompt is not used in live mode either",
                           DEFAULT_CONDITION_ON_PREVIOUS_TEXT, ready_flags));
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
  gst_type_mark_as_plugin_api(GST_TYPE_OXI_WHISPER_KV_CACHE, static_cast<GstPluginAPIFlags>(0));
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

  oxi_property_fields_init(G_OBJECT(self), properties);
  self->ctx = new GstOxiWhisperContext();
  gst_segment_init(&self->ctx->segment, GST_FORMAT_TIME);
}

static void gst_oxi_whisper_finalize(GObject* object) {
  GstOxiWhisper* self = GST_OXI_WHISPER(object);
  delete self->ctx;  // the worker was joined at PAUSED->READY
  self->ctx = nullptr;
  oxi_property_fields_free(object, properties);
  G_OBJECT_CLASS(gst_oxi_whisper_parent_class)->finalize(object);
}

static void gst_oxi_whisper_set_property(GObject* object, guint prop_id, const GValue* value,
                                         GParamSpec* pspec) {
  GstOxiWhisper* self = GST_OXI_WHISPER(object);
  if (prop_id == PROP_LANGUAGE_CODE || prop_id == PROP_LANGUAGE) {
    const char* tag = g_value_get_string(value);
    if (whisper_language(tag).empty()) {
      // As GLib does for out-of-range numbers: warn and keep the old value.
      g_warning(
          "oxiwhisper: '%s' is not a language Whisper knows (use a BCP-47 tag such as "
          "en-US, or auto); keeping '%s'",
          tag ? tag : "(null)", self->language_code);
      return;
    }
  }
  if (!oxi_property_fields_set(object, properties, prop_id, value, pspec))
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
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
  if (!oxi_property_fields_get(object, properties, prop_id, value, pspec))
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
}

/* --- streaming thread ------------------------------------------------------------------------ */

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

static GstFlowReturn gst_oxi_whisper_chain(GstPad* pad, GstObject* parent, GstBuffer* buffer) {
  GstOxiWhisper* self = GST_OXI_WHISPER(parent);
  GstOxiWhisperContext* c = self->ctx;
  (void)pad;
  if (!c->mode_decided) gst_oxi_whisper_decide_mode(self);

  OxiWhisperQueueItem item;
  GstMapInfo map;
  if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) {
    gst_buffer_unref(buffer);
    GST_ELEMENT_ERROR(self, RESOURCE, READ, ("Could not map an audio buffer"), (nullptr));
    return GST_FLOW_ERROR;
  }
  oxi_audio_samples_to_float(map, !c->is_float, item.samples);
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
    OxiWhisperQueueItem mark;
    mark.kind = OxiWhisperQueueItem::Kind::discont;
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
  OxiWhisperQueueItem item;
  item.kind = OxiWhisperQueueItem::Kind::event;
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
  OxiWhisperSettings s;
  s.language = whisper_language(self->language_code);
  s.translate = self->translate;
  s.word_timestamps = self->word_timestamps;
  s.initial_prompt = self->initial_prompt ? self->initial_prompt : "";
  s.latency_ms = self->latency_ms;
  s.mode = self->mode;
  s.kv_cache = self->kv_cache;
  s.encode_audio_only = self->encode_audio_only;
  s.condition_on_previous_text = self->condition_on_previous_text;
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
    c->transcriber.reset();  // let go of an earlier stream's model too
    c->encoder.reset();
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
      c->transcriber.reset();  // it runs on the backend being replaced
      c->backend = oxi::backends::make_cpu_backend(threads);
      c->backend_threads = threads;
    }
    // READY keeps the transcriber of the last stream (elements keep their resources there): it
    // serves the next one if the model is the same, its working memory already paged in.
    if (c->transcriber && &c->transcriber->model() == c->model.get())
      c->transcriber->reset_stream();
    else
      c->transcriber = std::make_unique<oxi::whisper::Transcriber>(c->model, *c->backend);
    // Elements on one model share its encoder (one working memory) and batch the passes that
    // fall together. Keyed like the model; a cached encoder of an earlier copy is not used.
    auto encoder = oxi::ModelCache<oxi::whisper::EncoderBatcher>::instance().get(
        "encoder:" + c->model_key,
        [&] { return std::make_shared<const oxi::whisper::EncoderBatcher>(c->model); });
    c->encoder.reset();
    if (&encoder->model() == c->model.get()) {
      c->transcriber->share_encoder(encoder);
      c->encoder = std::move(encoder);
    }
  } catch (const std::exception& e) {
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("Could not set up Whisper inference"),
                      ("%s: %s", model.c_str(), e.what()));
    return FALSE;
  }
  // The VAD model, loaded even when the stream may turn out to be a file: the mode is known at
  // the first buffer, and loading must not happen on the streaming thread. `vad=auto` without a
  // model decodes everything, as before VAD gating existed; `vad=on` without one is an error.
  c->vad_model.reset();
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
        // Shared with oxivad elements loading the same model.
        c->vad_model = oxi_shared_vad_model(vad_spec);
      } catch (const std::exception& e) {
        GST_ELEMENT_ERROR(self, RESOURCE, OPEN_READ,
                          ("Could not load the VAD model '%s'", vad_spec.c_str()),
                          ("%s", e.what()));
        return FALSE;
      }
    }
  }
  c->settings = s;
  return TRUE;
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
    case GST_STATE_CHANGE_READY_TO_NULL:
      // Let go of the model: the cache frees it when no other element holds it.
      c->transcriber.reset();
      c->encoder.reset();
      c->backend.reset();
      c->backend_threads = -1;
      c->model.reset();
      c->model_key.clear();
      c->vad_model.reset();
      break;
    default:
      break;
  }
  return ret;
}
