/**
 * SECTION:element-oxillm
 * @title: oxillm
 *
 * Answers text with a Llama-family LLM (`oxi::llm::Engine`): each input text becomes the
 * user message `prompt-template` with `{text}` replaced by it, after `system-prompt` if set,
 * rendered with the model's chat template. In `per-buffer` mode every input buffer is answered;
 * in `accumulate` mode the text is collected and answered at EOS, or every `interval` seconds of
 * input media time when `interval` is above 0 (a running summary of a transcript).
 *
 * An answer is one `text/x-raw,format=utf8` buffer whose PTS and duration are the span of the
 * input it answers; an empty answer, or blank input, becomes a GAP event over that span.
 * Answers are generated on the source pad's task, so the streaming thread only queues text
 * (and blocks once a few answers are pending). EOS is forwarded after every pending answer; a
 * flush cancels the answer being generated and drops the queued ones.
 *
 * The weights are loaded once per process (elements naming the same model and `quant` share
 * them, as do elements with the same `model-instance-id`, and elements naming the same
 * `draft-model`; `loaded-models` counts them); each element has its own KV cache,
 * which keeps the last answer's prompt: the next one evaluates only the tokens after those it
 * shares with it (system prompt, template header), with the same result.
 * Loading happens in the READY to PAUSED transition. `context-size` bounds an answer's tokens
 * (system message, prompt and reply), `cache-type` sets the KV cache's precision and
 * `chat-template` replaces the model's own template, as `--ctx`, `--cache-type` and `--template`
 * do for `oxinfer chat`.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 filesrc location=talk.flac ! decodebin ! audioconvert ! audioresample !
 *   audio/x-raw,format=F32LE,rate=16000,channels=1 ! oxiwhisper model=openai/whisper-base !
 *   oxillm model=Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q8_0 mode=accumulate
 *   prompt-template="Summarize this transcript: {text}" ! filesink location=summary.txt
 * ]|
 */
#include "elements/gstoxillm.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "elements/enum_type.h"
#include "elements/property_fields.h"
#include "kernels/formats/dtype.h"
#include "lib/core/error.h"
#include "lib/core/model_cache.h"
#include "lib/hub/hub.h"
#include "lib/llm/engine.h"
#include "lib/llm/gbnf.h"
#include "lib/llm/json_schema_grammar.h"
#include "lib/llm/logit_bias.h"
#include "lib/llm/model.h"

GST_DEBUG_CATEGORY_STATIC(gst_oxi_llm_debug);
#define GST_CAT_DEFAULT gst_oxi_llm_debug

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS("text/x-raw, format=(string)utf8"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS("text/x-raw, format=(string)utf8"));

enum {
  PROP_0,
  PROP_MODEL,
  PROP_PROMPT_TEMPLATE,
  PROP_SYSTEM_PROMPT,
  PROP_TEMPERATURE,
  PROP_TOP_K,
  PROP_TOP_P,
  PROP_MIN_P,
  PROP_REPEAT_PENALTY,
  PROP_REPEAT_LAST_N,
  PROP_FREQUENCY_PENALTY,
  PROP_PRESENCE_PENALTY,
  PROP_TYPICAL_P,
  PROP_TOP_N_SIGMA,
  PROP_XTC_PROBABILITY,
  PROP_XTC_THRESHOLD,
  PROP_MIROSTAT,
  PROP_MIROSTAT_TAU,
  PROP_MIROSTAT_ETA,
  PROP_GRAMMAR,
  PROP_JSON_SCHEMA,
  PROP_LOGIT_BIAS,
  PROP_IGNORE_EOS,
  PROP_SEED,
  PROP_MAX_TOKENS,
  PROP_STOP,
  PROP_THREADS,
  PROP_QUANT,
  PROP_MODE,
  PROP_INTERVAL,
  PROP_MODEL_INSTANCE_ID,
  PROP_CONTEXT_SIZE,
  PROP_CACHE_TYPE,
  PROP_CHAT_TEMPLATE,
  PROP_DRAFT_MODEL,
  PROP_DRAFT_MAX,
  PROP_DRAFT_P_MIN,
  PROP_LOADED_MODELS,
};

/* Sampling defaults are oxinfer generate's, so an element answers like the CLI does. */
#define DEFAULT_MODEL nullptr
#define DEFAULT_PROMPT_TEMPLATE "{text}"
#define DEFAULT_SYSTEM_PROMPT nullptr
#define DEFAULT_TEMPERATURE 0.8f
#define DEFAULT_TOP_K 40
#define DEFAULT_TOP_P 0.95f
#define DEFAULT_MIN_P 0.05f
#define DEFAULT_REPEAT_PENALTY 1.0f
#define DEFAULT_REPEAT_LAST_N 64
#define DEFAULT_FREQUENCY_PENALTY 0.0f
#define DEFAULT_PRESENCE_PENALTY 0.0f
#define DEFAULT_TYPICAL_P 1.0f
#define DEFAULT_TOP_N_SIGMA -1.0f
#define DEFAULT_XTC_PROBABILITY 0.0f
#define DEFAULT_XTC_THRESHOLD 0.1f
#define DEFAULT_MIROSTAT 0
#define DEFAULT_MIROSTAT_TAU 5.0f
#define DEFAULT_MIROSTAT_ETA 0.1f
#define DEFAULT_LOGIT_BIAS nullptr
#define DEFAULT_IGNORE_EOS FALSE
#define DEFAULT_SEED -1
#define DEFAULT_MAX_TOKENS 256
#define DEFAULT_THREADS 0
#define DEFAULT_QUANT nullptr
#define DEFAULT_MODE GST_OXI_LLM_MODE_PER_BUFFER
#define DEFAULT_INTERVAL 0.0
#define DEFAULT_MODEL_INSTANCE_ID nullptr
#define DEFAULT_CONTEXT_SIZE 0
#define DEFAULT_CACHE_TYPE GST_OXI_LLM_CACHE_TYPE_AUTO
#define DEFAULT_CHAT_TEMPLATE nullptr
#define DEFAULT_DRAFT_MODEL nullptr
#define DEFAULT_DRAFT_MAX 16
#define DEFAULT_DRAFT_P_MIN 0.8f

/* Answers queued before the streaming thread waits: enough to keep the task busy while a
 * burst of captions arrives, few enough that a slow model pushes back on its source. */
static constexpr size_t kMaxPendingAnswers = 4;

#define GST_TYPE_OXI_LLM_MODE (gst_oxi_llm_mode_get_type())
static GType gst_oxi_llm_mode_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_OXI_LLM_MODE_PER_BUFFER, "Answer each input buffer", "per-buffer"},
      {GST_OXI_LLM_MODE_ACCUMULATE, "Answer the text collected until EOS (or each interval)",
       "accumulate"},
      {0, nullptr, nullptr}};
  return oxi_enum_type(&type, "GstOxiLlmMode", values);
}

#define GST_TYPE_OXI_LLM_CACHE_TYPE (gst_oxi_llm_cache_type_get_type())
static GType gst_oxi_llm_cache_type_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_OXI_LLM_CACHE_TYPE_AUTO, "f16 for quantized matrices, f32 for float ones", "auto"},
      {GST_OXI_LLM_CACHE_TYPE_F16, "Half precision (half the memory)", "f16"},
      {GST_OXI_LLM_CACHE_TYPE_F32, "Single precision", "f32"},
      {0, nullptr, nullptr}};
  return oxi_enum_type(&type, "GstOxiLlmCacheType", values);
}

static const OxiPropertyField properties[] = {
    OXI_PROPERTY_FIELD(PROP_MODEL, GstOxiLlm, model),
    OXI_PROPERTY_FIELD(PROP_PROMPT_TEMPLATE, GstOxiLlm, prompt_template),
    OXI_PROPERTY_FIELD(PROP_SYSTEM_PROMPT, GstOxiLlm, system_prompt),
    OXI_PROPERTY_FIELD(PROP_TEMPERATURE, GstOxiLlm, temperature),
    OXI_PROPERTY_FIELD(PROP_TOP_K, GstOxiLlm, top_k),
    OXI_PROPERTY_FIELD(PROP_TOP_P, GstOxiLlm, top_p),
    OXI_PROPERTY_FIELD(PROP_MIN_P, GstOxiLlm, min_p),
    OXI_PROPERTY_FIELD(PROP_REPEAT_PENALTY, GstOxiLlm, repeat_penalty),
    OXI_PROPERTY_FIELD(PROP_REPEAT_LAST_N, GstOxiLlm, repeat_last_n),
    OXI_PROPERTY_FIELD(PROP_FREQUENCY_PENALTY, GstOxiLlm, frequency_penalty),
    OXI_PROPERTY_FIELD(PROP_PRESENCE_PENALTY, GstOxiLlm, presence_penalty),
    OXI_PROPERTY_FIELD(PROP_TYPICAL_P, GstOxiLlm, typical_p),
    OXI_PROPERTY_FIELD(PROP_TOP_N_SIGMA, GstOxiLlm, top_n_sigma),
    OXI_PROPERTY_FIELD(PROP_XTC_PROBABILITY, GstOxiLlm, xtc_probability),
    OXI_PROPERTY_FIELD(PROP_XTC_THRESHOLD, GstOxiLlm, xtc_threshold),
    OXI_PROPERTY_FIELD(PROP_MIROSTAT, GstOxiLlm, mirostat),
    OXI_PROPERTY_FIELD(PROP_MIROSTAT_TAU, GstOxiLlm, mirostat_tau),
    OXI_PROPERTY_FIELD(PROP_MIROSTAT_ETA, GstOxiLlm, mirostat_eta),
    OXI_PROPERTY_FIELD(PROP_GRAMMAR, GstOxiLlm, grammar),
    OXI_PROPERTY_FIELD(PROP_JSON_SCHEMA, GstOxiLlm, json_schema),
    OXI_PROPERTY_FIELD(PROP_LOGIT_BIAS, GstOxiLlm, logit_bias),
    OXI_PROPERTY_FIELD(PROP_IGNORE_EOS, GstOxiLlm, ignore_eos),
    OXI_PROPERTY_FIELD(PROP_SEED, GstOxiLlm, seed),
    OXI_PROPERTY_FIELD(PROP_MAX_TOKENS, GstOxiLlm, max_tokens),
    OXI_PROPERTY_FIELD(PROP_THREADS, GstOxiLlm, threads),
    OXI_PROPERTY_FIELD(PROP_QUANT, GstOxiLlm, quant),
    OXI_PROPERTY_FIELD(PROP_MODE, GstOxiLlm, mode),
    OXI_PROPERTY_FIELD(PROP_INTERVAL, GstOxiLlm, interval),
    OXI_PROPERTY_FIELD(PROP_MODEL_INSTANCE_ID, GstOxiLlm, model_instance_id),
    OXI_PROPERTY_FIELD(PROP_CONTEXT_SIZE, GstOxiLlm, context_size),
    OXI_PROPERTY_FIELD(PROP_CACHE_TYPE, GstOxiLlm, cache_type),
    OXI_PROPERTY_FIELD(PROP_CHAT_TEMPLATE, GstOxiLlm, chat_template),
    OXI_PROPERTY_FIELD(PROP_DRAFT_MODEL, GstOxiLlm, draft_model),
    OXI_PROPERTY_FIELD(PROP_DRAFT_MAX, GstOxiLlm, draft_max),
    OXI_PROPERTY_FIELD(PROP_DRAFT_P_MIN, GstOxiLlm, draft_p_min),
};

/* One unit of work for the source pad task, in stream order: a serialized event to forward, or
 * a text to answer over [pts, pts + duration). */
struct OxiLlmItem {
  GstEvent* event = nullptr; /* owned */
  std::string text;
  GstClockTime pts = GST_CLOCK_TIME_NONE;
  GstClockTime duration = GST_CLOCK_TIME_NONE;

  OxiLlmItem() = default;
  OxiLlmItem(OxiLlmItem&& other) noexcept
      : event(std::exchange(other.event, nullptr)),
        text(std::move(other.text)),
        pts(other.pts),
        duration(other.duration) {}
  OxiLlmItem& operator=(OxiLlmItem&&) = delete;
  ~OxiLlmItem() {
    if (event) gst_event_unref(event);
  }
};

struct _GstOxiLlmState {
  /* Set in READY->PAUSED before the pads activate and dropped in PAUSED->READY after they
   * deactivate, so the task and the streaming thread always see them set. */
  std::shared_ptr<const oxi::llm::Model> model;
  std::unique_ptr<oxi::llm::Engine> engine;

  /* The queue between the streaming thread and the task. */
  std::mutex mutex;
  std::condition_variable cond;
  std::deque<OxiLlmItem> queue;
  size_t pending_answers = 0;            /* answers in the queue (not the one generating) */
  bool flushing = true;                  /* pads inactive or flushing: nothing is queued */
  GstFlowReturn last_flow = GST_FLOW_OK; /* the task's last push result, returned by chain */
  /* Ends the answer being generated at its next token. Engine::cancel() alone can be lost
   * when it lands before send() starts (send clears it), so the piece callback checks this. */
  std::atomic<bool> cancel{false};

  /* json-schema's grammar and logit-bias's biases, made when the properties are set, and the
   * stop strings (under the object lock) */
  std::string json_schema_grammar;
  std::vector<oxi::llm::LogitBias> logit_bias;
  std::vector<std::string> stop;

  /* accumulate mode, streaming thread only */
  std::string collected;
  GstClockTime collected_start = GST_CLOCK_TIME_NONE;
  GstClockTime collected_end = GST_CLOCK_TIME_NONE;

  void clear_queue() {
    queue.clear();
    pending_answers = 0;
  }
  void clear_collected() {
    collected.clear();
    collected_start = collected_end = GST_CLOCK_TIME_NONE;
  }
};

G_DEFINE_TYPE(GstOxiLlm, gst_oxi_llm, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE(oxillm, "oxillm", GST_RANK_NONE, GST_TYPE_OXI_LLM);

static void gst_oxi_llm_finalize(GObject* object);
static void gst_oxi_llm_set_property(GObject* object, guint prop_id, const GValue* value,
                                     GParamSpec* pspec);
static void gst_oxi_llm_get_property(GObject* object, guint prop_id, GValue* value,
                                     GParamSpec* pspec);
static GstFlowReturn gst_oxi_llm_chain(GstPad* pad, GstObject* parent, GstBuffer* buffer);
static gboolean gst_oxi_llm_sink_event(GstPad* pad, GstObject* parent, GstEvent* event);
static gboolean gst_oxi_llm_src_activate_mode(GstPad* pad, GstObject* parent, GstPadMode mode,
                                              gboolean active);
static void gst_oxi_llm_loop(gpointer user_data);
static GstStateChangeReturn gst_oxi_llm_change_state(GstElement* element,
                                                     GstStateChange transition);

static void gst_oxi_llm_class_init(GstOxiLlmClass* klass) {
  GObjectClass* gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass* element_class = GST_ELEMENT_CLASS(klass);

  gobject_class->finalize = gst_oxi_llm_finalize;
  gobject_class->set_property = gst_oxi_llm_set_property;
  gobject_class->get_property = gst_oxi_llm_get_property;

  const auto ready = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                              GST_PARAM_MUTABLE_READY);
  /* Read at each answer, so they may change while playing. */
  const auto playing = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                                GST_PARAM_MUTABLE_PLAYING);

  g_object_class_install_property(
      gobject_class, PROP_MODEL,
      g_param_spec_string("model", "Model",
                          "LLM to load: a GGUF file, a Hugging Face directory, or a Hub repo id "
                          "(org/name[:QUANT]) fetched into the cache",
                          DEFAULT_MODEL, ready));
  g_object_class_install_property(
      gobject_class, PROP_PROMPT_TEMPLATE,
      g_param_spec_string("prompt-template", "Prompt template",
                          "User message sent for each input; every {text} is replaced by the "
                          "input text (a template without {text} is refused)",
                          DEFAULT_PROMPT_TEMPLATE, playing));
  g_object_class_install_property(
      gobject_class, PROP_SYSTEM_PROMPT,
      g_param_spec_string("system-prompt", "System prompt",
                          "System message before each user message (empty = none)",
                          DEFAULT_SYSTEM_PROMPT, playing));
  g_object_class_install_property(
      gobject_class, PROP_TEMPERATURE,
      g_param_spec_float("temperature", "Temperature",
                         "Sampling temperature; 0 = greedy (always the most likely token)", 0.0f,
                         100.0f, DEFAULT_TEMPERATURE, playing));
  g_object_class_install_property(
      gobject_class, PROP_TOP_K,
      g_param_spec_int("top-k", "Top k", "Sample from the k most likely tokens (0 = off)", 0,
                       G_MAXINT, DEFAULT_TOP_K, playing));
  g_object_class_install_property(
      gobject_class, PROP_TOP_P,
      g_param_spec_float("top-p", "Top p",
                         "Sample from the smallest set of tokens with this probability mass "
                         "(1 = off)",
                         0.0f, 1.0f, DEFAULT_TOP_P, playing));
  g_object_class_install_property(
      gobject_class, PROP_MIN_P,
      g_param_spec_float("min-p", "Min p",
                         "Drop tokens less likely than this times the most likely one (0 = off)",
                         0.0f, 1.0f, DEFAULT_MIN_P, playing));
  g_object_class_install_property(
      gobject_class, PROP_REPEAT_PENALTY,
      g_param_spec_float("repeat-penalty", "Repetition penalty",
                         "Penalty for tokens among the last repeat-last-n of prompt and answer "
                         "(1 = off)",
                         0.01f, 100.0f, DEFAULT_REPEAT_PENALTY, playing));
  g_object_class_install_property(
      gobject_class, PROP_REPEAT_LAST_N,
      g_param_spec_int("repeat-last-n", "Repeat last N",
                       "Tokens of prompt and answer the penalties look at (-1 = all, as "
                       "--repeat-last-n)",
                       -1, G_MAXINT, DEFAULT_REPEAT_LAST_N, playing));
  g_object_class_install_property(
      gobject_class, PROP_FREQUENCY_PENALTY,
      g_param_spec_float("frequency-penalty", "Frequency penalty",
                         "Lowers a token's logit by this times its count among the last 64 "
                         "tokens of prompt and answer (0 = off)",
                         -2.0f, 2.0f, DEFAULT_FREQUENCY_PENALTY, playing));
  g_object_class_install_property(
      gobject_class, PROP_PRESENCE_PENALTY,
      g_param_spec_float("presence-penalty", "Presence penalty",
                         "Lowers the logit of each token among the last 64 tokens of prompt "
                         "and answer by this (0 = off)",
                         -2.0f, 2.0f, DEFAULT_PRESENCE_PENALTY, playing));
  g_object_class_install_property(
      gobject_class, PROP_TYPICAL_P,
      g_param_spec_float("typical-p", "Typical p",
                         "Locally typical sampling: keep the tokens nearest the entropy up to "
                         "this probability mass (1 = off)",
                         0.01f, 1.0f, DEFAULT_TYPICAL_P, playing));
  g_object_class_install_property(
      gobject_class, PROP_TOP_N_SIGMA,
      g_param_spec_float("top-n-sigma", "Top n sigma",
                         "Keep the logits within this many standard deviations of the top "
                         "(-1 = off)",
                         -1.0f, 100.0f, DEFAULT_TOP_N_SIGMA, playing));
  g_object_class_install_property(
      gobject_class, PROP_XTC_PROBABILITY,
      g_param_spec_float("xtc-probability", "XTC probability",
                         "How often the likeliest tokens leave, all but the last of those at or "
                         "above xtc-threshold (0 = off)",
                         0.0f, 1.0f, DEFAULT_XTC_PROBABILITY, playing));
  g_object_class_install_property(
      gobject_class, PROP_XTC_THRESHOLD,
      g_param_spec_float("xtc-threshold", "XTC threshold",
                         "The probability from which XTC takes tokens out", 0.0f, 1.0f,
                         DEFAULT_XTC_THRESHOLD, playing));
  g_object_class_install_property(
      gobject_class, PROP_MIROSTAT,
      g_param_spec_int("mirostat", "Mirostat",
                       "Mirostat 1 or 2 in place of top-k/p, min-p and the penalties (0 = off)", 0,
                       2, DEFAULT_MIROSTAT, playing));
  g_object_class_install_property(
      gobject_class, PROP_MIROSTAT_TAU,
      g_param_spec_float("mirostat-tau", "Mirostat tau", "Mirostat's target surprise, in bits",
                         0.0f, 100.0f, DEFAULT_MIROSTAT_TAU, playing));
  g_object_class_install_property(
      gobject_class, PROP_MIROSTAT_ETA,
      g_param_spec_float("mirostat-eta", "Mirostat eta", "Mirostat's learning rate", 0.0f, 1.0f,
                         DEFAULT_MIROSTAT_ETA, playing));
  g_object_class_install_property(
      gobject_class, PROP_GRAMMAR,
      g_param_spec_string("grammar", "Grammar",
                          "A GBNF grammar (llama.cpp's notation) every answer follows, e.g. "
                          "root ::= \"yes\" | \"no\" (empty = none; one that does not parse is "
                          "refused)",
                          nullptr, playing));
  g_object_class_install_property(
      gobject_class, PROP_JSON_SCHEMA,
      g_param_spec_string("json-schema", "JSON Schema",
                          "A JSON Schema every answer is JSON of (as --json-schema; not with "
                          "grammar; one that cannot be converted is refused)",
                          nullptr, playing));
  g_object_class_install_property(
      gobject_class, PROP_LOGIT_BIAS,
      g_param_spec_string("logit-bias", "Logit bias",
                          "Biases added to tokens' logits, as --logit-bias: TOKEN_ID(+|-)BIAS, "
                          "comma separated, e.g. 15043+1,2-inf (-inf: never; a malformed list is "
                          "refused, a token off the vocabulary fails the answer)",
                          DEFAULT_LOGIT_BIAS, playing));
  g_object_class_install_property(
      gobject_class, PROP_IGNORE_EOS,
      g_param_spec_boolean("ignore-eos", "Ignore EOS",
                           "Never end an answer at the model's end tokens: answers run to "
                           "max-tokens or the context's end (as --ignore-eos)",
                           DEFAULT_IGNORE_EOS, playing));
  g_object_class_install_property(
      gobject_class, PROP_STOP,
      gst_param_spec_array("stop", "Stop strings",
                           "Texts that end an answer where they appear, not part of it (as "
                           "--stop), e.g. stop=\"<\\\"###\\\", \\\"User:\\\">\"",
                           g_param_spec_string("stop-string", "Stop string", "A stop string",
                                               nullptr, G_PARAM_READWRITE),
                           playing));
  g_object_class_install_property(
      gobject_class, PROP_SEED,
      g_param_spec_int64("seed", "Seed",
                         "Sampling seed, the same for every answer (-1 = a random seed each "
                         "answer)",
                         -1, G_MAXINT64, DEFAULT_SEED, playing));
  g_object_class_install_property(
      gobject_class, PROP_MAX_TOKENS,
      g_param_spec_int("max-tokens", "Maximum tokens",
                       "Generate at most this many tokens per answer (-1 = until the model ends "
                       "it or the context is full)",
                       -1, G_MAXINT, DEFAULT_MAX_TOKENS, playing));
  g_object_class_install_property(
      gobject_class, PROP_THREADS,
      g_param_spec_uint("threads", "Threads", "CPU threads for this element (0 = every core)", 0,
                        4096, DEFAULT_THREADS, ready));
  g_object_class_install_property(
      gobject_class, PROP_QUANT,
      g_param_spec_string("quant", "Quantization",
                          "Quantize the matrices of a Hugging Face checkpoint at load: q8 or q4 "
                          "(empty = as stored; GGUF files keep their own types)",
                          DEFAULT_QUANT, ready));
  g_object_class_install_property(
      gobject_class, PROP_MODE,
      g_param_spec_enum("mode", "Mode",
                        "per-buffer: answer each input buffer; accumulate: answer the collected "
                        "text at EOS (or every interval)",
                        GST_TYPE_OXI_LLM_MODE, DEFAULT_MODE, ready));
  g_object_class_install_property(
      gobject_class, PROP_INTERVAL,
      g_param_spec_double("interval", "Interval",
                          "accumulate mode: also answer each time the collected text spans this "
                          "many seconds of input media time (0 = only at EOS)",
                          0.0, 1e9, DEFAULT_INTERVAL, ready));
  g_object_class_install_property(
      gobject_class, PROP_MODEL_INSTANCE_ID,
      g_param_spec_string("model-instance-id", "Model instance id",
                          "Elements with the same id share one loaded model; with this set and "
                          "no model, use the model another element loaded under the id",
                          DEFAULT_MODEL_INSTANCE_ID, ready));
  g_object_class_install_property(
      gobject_class, PROP_CONTEXT_SIZE,
      g_param_spec_uint("context-size", "Context size",
                        "Tokens the KV cache holds for an answer: system message, prompt and "
                        "reply (0 = the model's training context, at most 4096); a longer "
                        "prompt is an error, a reply stops when it is full",
                        0, G_MAXINT, DEFAULT_CONTEXT_SIZE, ready));
  g_object_class_install_property(
      gobject_class, PROP_CACHE_TYPE,
      g_param_spec_enum("cache-type", "KV cache type",
                        "Element type of the KV cache (auto: f16 when the model's matrices are "
                        "quantized, f32 when they are float)",
                        GST_TYPE_OXI_LLM_CACHE_TYPE, DEFAULT_CACHE_TYPE, ready));
  g_object_class_install_property(
      gobject_class, PROP_CHAT_TEMPLATE,
      g_param_spec_string("chat-template", "Chat template",
                          "Chat template instead of the model's own: a named one (llama2, llama3, "
                          "chatml, gemma, phi3, zephyr, mistral) or a Jinja file (empty = the "
                          "model's, else a fallback for its architecture)",
                          DEFAULT_CHAT_TEMPLATE, ready));
  g_object_class_install_property(
      gobject_class, PROP_DRAFT_MODEL,
      g_param_spec_string("draft-model", "Draft model",
                          "Speculative decoding (as --model-draft): a small model of the same "
                          "vocabulary (file or repo id) drafts tokens the model checks in one "
                          "batch; the answers are the model's alone (empty = off)",
                          DEFAULT_DRAFT_MODEL, ready));
  g_object_class_install_property(
      gobject_class, PROP_DRAFT_MAX,
      g_param_spec_int("draft-max", "Draft max", "Tokens a draft proposes at most", 1, 256,
                       DEFAULT_DRAFT_MAX, ready));
  g_object_class_install_property(
      gobject_class, PROP_DRAFT_P_MIN,
      g_param_spec_float("draft-p-min", "Draft minimum probability",
                         "A draft stops before a token below this probability", 0.0f, 1.0f,
                         DEFAULT_DRAFT_P_MIN, ready));
  g_object_class_install_property(
      gobject_class, PROP_LOADED_MODELS,
      g_param_spec_uint("loaded-models", "Loaded models",
                        "Number of LLM models (draft models included) this process holds loaded "
                        "(one per file and quant, or per model-instance-id, shared by every "
                        "oxillm)",
                        0, G_MAXUINT, 0,
                        static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));

  gst_element_class_set_static_metadata(
      element_class, "oxinfer LLM", "Filter/Text",
      "Answers text with a local Llama-family LLM: per buffer, or the collected text at EOS",
      "oxinfer authors");
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  element_class->change_state = GST_DEBUG_FUNCPTR(gst_oxi_llm_change_state);
  gst_type_mark_as_plugin_api(GST_TYPE_OXI_LLM_MODE, static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(GST_TYPE_OXI_LLM_CACHE_TYPE, static_cast<GstPluginAPIFlags>(0));

  GST_DEBUG_CATEGORY_INIT(gst_oxi_llm_debug, "oxillm", 0, "oxinfer LLM");
}

static void gst_oxi_llm_init(GstOxiLlm* self) {
  self->sinkpad = gst_pad_new_from_static_template(&sink_template, "sink");
  gst_pad_set_chain_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_oxi_llm_chain));
  gst_pad_set_event_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_oxi_llm_sink_event));
  gst_element_add_pad(GST_ELEMENT(self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template(&src_template, "src");
  gst_pad_use_fixed_caps(self->srcpad);
  gst_pad_set_activatemode_function(self->srcpad, GST_DEBUG_FUNCPTR(gst_oxi_llm_src_activate_mode));
  gst_element_add_pad(GST_ELEMENT(self), self->srcpad);

  oxi_property_fields_init(G_OBJECT(self), properties);
  self->state = new GstOxiLlmState();
}

static void gst_oxi_llm_finalize(GObject* object) {
  GstOxiLlm* self = GST_OXI_LLM(object);
  delete self->state;
  self->state = nullptr;
  oxi_property_fields_free(object, properties);
  G_OBJECT_CLASS(gst_oxi_llm_parent_class)->finalize(object);
}

static void gst_oxi_llm_set_property(GObject* object, guint prop_id, const GValue* value,
                                     GParamSpec* pspec) {
  GstOxiLlm* self = GST_OXI_LLM(object);
  if (prop_id == PROP_PROMPT_TEMPLATE) {
    // Without {text} every answer would ignore its input: almost certainly a typo.
    const gchar* t = g_value_get_string(value);
    if (t == nullptr || std::strstr(t, "{text}") == nullptr) {
      GST_OBJECT_LOCK(self);
      g_warning("oxillm: prompt-template '%s' has no {text}; keeping '%s'", t ? t : "",
                self->prompt_template);
      GST_OBJECT_UNLOCK(self);
      return;
    }
  }
  if (prop_id == PROP_STOP) {
    std::vector<std::string> stop;
    for (guint i = 0; i < gst_value_array_get_size(value); ++i) {
      const gchar* text = g_value_get_string(gst_value_array_get_value(value, i));
      if (text != nullptr && *text != '\0') stop.emplace_back(text);
    }
    GST_OBJECT_LOCK(self);
    self->state->stop = std::move(stop);
    GST_OBJECT_UNLOCK(self);
    return;
  }
  std::string json_schema_grammar;
  std::vector<oxi::llm::LogitBias> logit_bias;
  if (prop_id == PROP_GRAMMAR || prop_id == PROP_JSON_SCHEMA || prop_id == PROP_LOGIT_BIAS) {
    const gchar* g = g_value_get_string(value);
    if (g != nullptr && *g != '\0') {
      try {
        if (prop_id == PROP_GRAMMAR)
          (void)oxi::llm::gbnf::Grammar::parse(g);
        else if (prop_id == PROP_JSON_SCHEMA)
          json_schema_grammar = oxi::llm::json_schema_to_gbnf(g);
        else
          logit_bias = oxi::llm::parse_logit_bias_list(g, pspec->name);
      } catch (const std::exception& e) {
        g_warning("oxillm: %s refused (%s); keeping the previous one", pspec->name, e.what());
        return;
      }
    }
  }
  if (!oxi_property_fields_set(object, properties, prop_id, value, pspec)) {
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    return;
  }
  if (prop_id == PROP_JSON_SCHEMA || prop_id == PROP_LOGIT_BIAS) {
    GST_OBJECT_LOCK(self);
    if (prop_id == PROP_JSON_SCHEMA)
      self->state->json_schema_grammar = std::move(json_schema_grammar);
    else
      self->state->logit_bias = std::move(logit_bias);
    GST_OBJECT_UNLOCK(self);
  }
}

static void gst_oxi_llm_get_property(GObject* object, guint prop_id, GValue* value,
                                     GParamSpec* pspec) {
  if (prop_id == PROP_STOP) {
    GstOxiLlm* self = GST_OXI_LLM(object);
    GST_OBJECT_LOCK(self);
    for (const std::string& text : self->state->stop) {
      GValue item = G_VALUE_INIT;
      g_value_init(&item, G_TYPE_STRING);
      g_value_set_string(&item, text.c_str());
      gst_value_array_append_and_take_value(value, &item);
    }
    GST_OBJECT_UNLOCK(self);
    return;
  }
  if (prop_id == PROP_LOADED_MODELS) {
    g_value_set_uint(value,
                     static_cast<guint>(oxi::ModelCache<oxi::llm::Model>::instance().live_count()));
    return;
  }
  if (!oxi_property_fields_get(object, properties, prop_id, value, pspec))
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
}

static std::string gst_oxi_llm_string(const gchar* s) {
  return s ? std::string(s) : std::string();
}

/* The model a spec names (a file, an HF directory, a repo id) and its resolved path, loaded once
 * per process under `key`, or by its file and quantization where key is empty: elements naming
 * the same file share it (their models and their draft models alike). */
static std::pair<std::shared_ptr<const oxi::llm::Model>, std::filesystem::path>
gst_oxi_llm_shared_model(const std::string& spec, const std::string& quant,
                         const std::string& key) {
  oxi::llm::LoadOptions options;
  if (!quant.empty()) options.quant = oxi::llm::parse_load_quant(quant);
  const std::filesystem::path path =
      oxi::hub::resolve_model(spec, oxi::hub::HubOptions::from_environment());
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(path, ec);
  const std::string by_file = "llm:" + (ec ? path : canonical).string() + ":" + quant;
  return {oxi::ModelCache<oxi::llm::Model>::instance().get(
              key.empty() ? by_file : key, [&] { return oxi::llm::Model::load(path, options); }),
          path};
}

/* Loads (or finds) the shared model and makes this element's engine. Runs in READY->PAUSED on
 * the thread changing the state. */
static gboolean gst_oxi_llm_load(GstOxiLlm* self) {
  GST_OBJECT_LOCK(self);
  const std::string spec = gst_oxi_llm_string(self->model);
  const std::string quant = gst_oxi_llm_string(self->quant);
  const std::string instance = gst_oxi_llm_string(self->model_instance_id);
  oxi::llm::EngineOptions engine_options;
  engine_options.threads = static_cast<int>(self->threads);
  engine_options.n_ctx = self->context_size;
  if (self->cache_type == GST_OXI_LLM_CACHE_TYPE_F16)
    engine_options.kv_type = oxi::kernels::DType::F16;
  else if (self->cache_type == GST_OXI_LLM_CACHE_TYPE_F32)
    engine_options.kv_type = oxi::kernels::DType::F32;
  engine_options.chat_template = gst_oxi_llm_string(self->chat_template);
  engine_options.draft_model = gst_oxi_llm_string(self->draft_model);
  engine_options.draft_max = self->draft_max;
  engine_options.draft_p_min = self->draft_p_min;
  GST_OBJECT_UNLOCK(self);

  auto& cache = oxi::ModelCache<oxi::llm::Model>::instance();
  const std::string instance_key = "llm-instance:" + instance;
  if (spec.empty()) {
    if (instance.empty()) {
      GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND, ("No LLM model set"),
                        ("set model to a GGUF file, a Hugging Face directory or a repo id"));
      return FALSE;
    }
    self->state->model = cache.find(instance_key);
    if (!self->state->model) {
      GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND,
                        ("No LLM model is loaded under model-instance-id '%s'", instance.c_str()),
                        ("set model, or start the element that loads it first"));
      return FALSE;
    }
  } else {
    try {
      std::filesystem::path path;
      std::tie(self->state->model, path) =
          gst_oxi_llm_shared_model(spec, quant, instance.empty() ? std::string() : instance_key);
      // One id, one model: a second element naming another model under it is a mistake.
      std::error_code ec;
      const bool same = std::filesystem::equivalent(self->state->model->path(), path, ec);
      if (!instance.empty() && !ec && !same) {
        throw oxi::Error(spec, "model-instance-id '" + instance + "' already holds " +
                                   self->state->model->path().string());
      }
    } catch (const std::exception& e) {
      self->state->model.reset();
      GST_ELEMENT_ERROR(self, RESOURCE, OPEN_READ,
                        ("Could not load LLM model '%s': %s", spec.c_str(), e.what()),
                        ("model=%s quant=%s", spec.c_str(), quant.c_str()));
      return FALSE;
    }
  }

  try {
    if (!engine_options.draft_model.empty())
      engine_options.loaded_draft =
          gst_oxi_llm_shared_model(engine_options.draft_model, quant, std::string()).first;
    self->state->engine = std::make_unique<oxi::llm::Engine>(self->state->model, engine_options);
  } catch (const std::exception& e) {
    self->state->model.reset();
    GST_ELEMENT_ERROR(self, LIBRARY, INIT,
                      ("Could not start the LLM for '%s': %s", spec.c_str(), e.what()), (nullptr));
    return FALSE;
  }
  GST_INFO_OBJECT(self, "model %s, chat template %s", self->state->model->path().string().c_str(),
                  self->state->engine->template_name().c_str());
  return TRUE;
}

/* Queues an item for the task. Answers wait for room (back-pressure on a slow model); events
 * never wait, so EOS and segments cannot be held up behind a full queue forever. */
static GstFlowReturn gst_oxi_llm_enqueue(GstOxiLlm* self, OxiLlmItem item) {
  GstOxiLlmState* s = self->state;
  const bool answer = item.event == nullptr;
  std::unique_lock lock(s->mutex);
  if (answer) {
    s->cond.wait(lock, [&] {
      return s->flushing || s->last_flow != GST_FLOW_OK || s->pending_answers < kMaxPendingAnswers;
    });
  }
  if (s->flushing) return GST_FLOW_FLUSHING;
  if (answer && s->last_flow != GST_FLOW_OK) return s->last_flow;
  if (answer) ++s->pending_answers;
  s->queue.push_back(std::move(item));
  s->cond.notify_all();
  return GST_FLOW_OK;
}

static GstFlowReturn gst_oxi_llm_enqueue_answer(GstOxiLlm* self, std::string text, GstClockTime pts,
                                                GstClockTime duration) {
  OxiLlmItem item;
  item.text = std::move(text);
  item.pts = pts;
  item.duration = duration;
  return gst_oxi_llm_enqueue(self, std::move(item));
}

static gboolean gst_oxi_llm_enqueue_event(GstOxiLlm* self, GstEvent* event) {
  OxiLlmItem item;
  item.event = event;
  return gst_oxi_llm_enqueue(self, std::move(item)) == GST_FLOW_OK;
}

/* The collected text of accumulate mode, queued as one answer over its whole span. */
static GstFlowReturn gst_oxi_llm_answer_collected(GstOxiLlm* self) {
  GstOxiLlmState* s = self->state;
  if (s->collected.empty()) {
    s->clear_collected();
    return GST_FLOW_OK;
  }
  const GstClockTime start = s->collected_start;
  const GstClockTime duration =
      GST_CLOCK_TIME_IS_VALID(start) && GST_CLOCK_TIME_IS_VALID(s->collected_end)
          ? s->collected_end - start
          : GST_CLOCK_TIME_NONE;
  std::string text = std::move(s->collected);
  s->clear_collected();
  return gst_oxi_llm_enqueue_answer(self, std::move(text), start, duration);
}

static GstFlowReturn gst_oxi_llm_chain(GstPad* pad, GstObject* parent, GstBuffer* buffer) {
  GstOxiLlm* self = GST_OXI_LLM(parent);
  GstOxiLlmState* s = self->state;
  (void)pad;
  GstMapInfo map;
  if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) {
    gst_buffer_unref(buffer);
    GST_ELEMENT_ERROR(self, RESOURCE, READ, ("Could not map a text buffer"), (nullptr));
    return GST_FLOW_ERROR;
  }
  std::string text(reinterpret_cast<const char*>(map.data), map.size);
  gst_buffer_unmap(buffer, &map);
  const GstClockTime pts = GST_BUFFER_PTS(buffer);
  const GstClockTime duration = GST_BUFFER_DURATION(buffer);
  gst_buffer_unref(buffer);

  GST_OBJECT_LOCK(self);
  const GstOxiLlmMode mode = self->mode;
  const double interval = self->interval;
  GST_OBJECT_UNLOCK(self);

  if (mode == GST_OXI_LLM_MODE_PER_BUFFER)
    return gst_oxi_llm_enqueue_answer(self, std::move(text), pts, duration);

  // Transcribers emit pieces like " Hello" and "world."; join them as one text.
  if (!s->collected.empty() && !text.empty() &&
      !std::isspace(static_cast<unsigned char>(s->collected.back())) &&
      !std::isspace(static_cast<unsigned char>(text.front())))
    s->collected += ' ';
  s->collected += text;
  if (GST_CLOCK_TIME_IS_VALID(pts)) {
    if (!GST_CLOCK_TIME_IS_VALID(s->collected_start)) s->collected_start = pts;
    const GstClockTime end = GST_CLOCK_TIME_IS_VALID(duration) ? pts + duration : pts;
    if (!GST_CLOCK_TIME_IS_VALID(s->collected_end) || end > s->collected_end)
      s->collected_end = end;
  }
  if (interval > 0 && GST_CLOCK_TIME_IS_VALID(s->collected_start) &&
      GST_CLOCK_TIME_IS_VALID(s->collected_end) &&
      s->collected_end - s->collected_start >=
          static_cast<GstClockTime>(interval * static_cast<double>(GST_SECOND)))
    return gst_oxi_llm_answer_collected(self);
  {
    // Report a failed push of the task (not-linked, error) to upstream promptly.
    std::lock_guard lock(s->mutex);
    if (s->flushing) return GST_FLOW_FLUSHING;
    return s->last_flow;
  }
}

static gboolean gst_oxi_llm_copy_sticky(GstPad* pad, GstEvent** event, gpointer user_data) {
  GstOxiLlm* self = GST_OXI_LLM(user_data);
  (void)pad;
  const GstEventType type = GST_EVENT_TYPE(*event);
  if (type != GST_EVENT_SEGMENT && type != GST_EVENT_EOS)
    gst_pad_store_sticky_event(self->srcpad, *event);
  return TRUE;
}

static gboolean gst_oxi_llm_sink_event(GstPad* pad, GstObject* parent, GstEvent* event) {
  GstOxiLlm* self = GST_OXI_LLM(parent);
  GstOxiLlmState* s = self->state;
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_FLUSH_START: {
      {
        std::lock_guard lock(s->mutex);
        s->flushing = true;
        s->cancel = true;
        s->clear_queue();
        s->cond.notify_all();
      }
      if (s->engine) s->engine->cancel();
      const gboolean ok = gst_pad_push_event(self->srcpad, event);
      // Waits for the task's current iteration: the answer being generated stops at its next
      // token (or prompt batch).
      gst_pad_pause_task(self->srcpad);
      return ok;
    }
    case GST_EVENT_FLUSH_STOP: {
      {
        std::lock_guard lock(s->mutex);
        s->clear_queue();
        s->flushing = false;
        s->cancel = false;
        s->last_flow = GST_FLOW_OK;
      }
      s->clear_collected();
      const gboolean ok = gst_pad_push_event(self->srcpad, event);
      // The flush may have dropped stream-start or caps from the queue before the task sent
      // them; the sink pad still holds them, so the source pad sends them before new data.
      gst_pad_sticky_events_foreach(self->sinkpad, gst_oxi_llm_copy_sticky, self);
      gst_pad_start_task(self->srcpad, gst_oxi_llm_loop, self, nullptr);
      return ok;
    }
    case GST_EVENT_EOS: {
      GST_OBJECT_LOCK(self);
      const bool accumulate = self->mode == GST_OXI_LLM_MODE_ACCUMULATE;
      GST_OBJECT_UNLOCK(self);
      // The collected text is answered before EOS goes downstream.
      if (accumulate) gst_oxi_llm_answer_collected(self);
      return gst_oxi_llm_enqueue_event(self, event);
    }
    case GST_EVENT_GAP: {
      GST_OBJECT_LOCK(self);
      const bool accumulate = self->mode == GST_OXI_LLM_MODE_ACCUMULATE;
      GST_OBJECT_UNLOCK(self);
      // An accumulated answer is pushed later with an earlier PTS; gaps forwarded meanwhile
      // would tell downstream that its span holds nothing.
      if (accumulate) {
        gst_event_unref(event);
        return TRUE;
      }
      return gst_oxi_llm_enqueue_event(self, event);
    }
    default:
      // Serialized events keep their place among the answers; the rest go on at once.
      if ((static_cast<guint>(GST_EVENT_TYPE(event)) & GST_EVENT_TYPE_SERIALIZED) != 0)
        return gst_oxi_llm_enqueue_event(self, event);
      return gst_pad_event_default(pad, parent, event);
  }
}

/* Generates the answer to one item and pushes it (or a GAP over its span). */
static GstFlowReturn gst_oxi_llm_answer(GstOxiLlm* self, const OxiLlmItem& item,
                                        bool* error_posted) {
  GstOxiLlmState* s = self->state;
  const bool blank = std::all_of(item.text.begin(), item.text.end(), [](char c) {
    return std::isspace(static_cast<unsigned char>(c));
  });
  std::string reply;
  if (!blank) {
    GST_OBJECT_LOCK(self);
    std::string prompt = gst_oxi_llm_string(self->prompt_template);
    const std::string system = gst_oxi_llm_string(self->system_prompt);
    oxi::llm::GenerateOptions options;
    options.sampling.temperature = self->temperature;
    options.sampling.top_k = self->top_k;
    options.sampling.top_p = self->top_p;
    options.sampling.min_p = self->min_p;
    options.sampling.repeat_penalty = self->repeat_penalty;
    options.sampling.repeat_last_n = self->repeat_last_n;
    options.sampling.frequency_penalty = self->frequency_penalty;
    options.sampling.presence_penalty = self->presence_penalty;
    options.sampling.typical_p = self->typical_p;
    options.sampling.top_n_sigma = self->top_n_sigma;
    options.sampling.xtc_probability = self->xtc_probability;
    options.sampling.xtc_threshold = self->xtc_threshold;
    options.sampling.mirostat = self->mirostat;
    options.sampling.mirostat_tau = self->mirostat_tau;
    options.sampling.mirostat_eta = self->mirostat_eta;
    options.sampling.seed =
        self->seed >= 0 ? static_cast<uint64_t>(self->seed) : std::random_device()();
    options.sampling.logit_bias = s->logit_bias;
    options.ignore_eos = self->ignore_eos;
    options.max_tokens = self->max_tokens;
    options.stop = s->stop;
    options.grammar = gst_oxi_llm_string(self->grammar);
    const std::string json_schema_grammar = s->json_schema_grammar;
    GST_OBJECT_UNLOCK(self);
    if (!json_schema_grammar.empty()) {
      if (!options.grammar.empty()) {
        GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS, ("grammar and json-schema cannot both be set"),
                          (nullptr));
        *error_posted = true;
        return GST_FLOW_ERROR;
      }
      options.grammar = json_schema_grammar;
    }

    static constexpr std::string_view kSlot = "{text}";
    for (size_t at = prompt.find(kSlot); at != std::string::npos;
         at = prompt.find(kSlot, at + item.text.size()))
      prompt.replace(at, kSlot.size(), item.text);
    std::vector<oxi::ChatMessage> messages;
    if (!system.empty()) messages.push_back({"system", system});
    messages.push_back({"user", std::move(prompt)});

    if (s->cancel) return GST_FLOW_FLUSHING;
    oxi::llm::TurnStats stats;
    try {
      // Each answer stands alone: no earlier question or answer in its context. The cache
      // keeps the last prompt, so the tokens this one shares with it (system prompt, template
      // header, a prompt-template's fixed start) are not evaluated again.
      s->engine->new_conversation();
      stats = s->engine->send(messages, options, [s](std::string_view) { return !s->cancel; });
    } catch (const std::exception& e) {
      GST_ELEMENT_ERROR(self, STREAM, FAILED, ("LLM generation failed: %s", e.what()), (nullptr));
      *error_posted = true;
      return GST_FLOW_ERROR;
    }
    if (s->cancel || stats.stop_reason == oxi::llm::StopReason::cancelled) return GST_FLOW_FLUSHING;
    GST_DEBUG_OBJECT(self, "answer: %zu prompt tokens (%zu cached), %zu generated (%s)",
                     stats.prompt_tokens, stats.cached_tokens, stats.generated_tokens,
                     oxi::llm::to_string(stats.stop_reason));
    reply = std::move(stats.text);
  }

  if (reply.empty()) {
    if (GST_CLOCK_TIME_IS_VALID(item.pts))
      gst_pad_push_event(self->srcpad, gst_event_new_gap(item.pts, item.duration));
    return GST_FLOW_OK;
  }
  GstBuffer* out = gst_buffer_new_memdup(reply.data(), reply.size());
  GST_BUFFER_PTS(out) = item.pts;
  GST_BUFFER_DURATION(out) = item.duration;
  return gst_pad_push(self->srcpad, out);
}

/* The source pad task: one queued item per iteration. */
static void gst_oxi_llm_loop(gpointer user_data) {
  GstOxiLlm* self = GST_OXI_LLM(user_data);
  GstOxiLlmState* s = self->state;
  std::optional<OxiLlmItem> item;
  {
    std::unique_lock lock(s->mutex);
    s->cond.wait(lock, [&] { return s->flushing || !s->queue.empty(); });
    if (s->flushing) {
      lock.unlock();
      gst_pad_pause_task(self->srcpad);
      return;
    }
    item.emplace(std::move(s->queue.front()));
    s->queue.pop_front();
    if (!item->event) --s->pending_answers;
    s->cond.notify_all();  // room for the streaming thread
  }

  if (item->event) {
    gst_pad_push_event(self->srcpad, std::exchange(item->event, nullptr));
    return;
  }

  bool error_posted = false;
  const GstFlowReturn ret = gst_oxi_llm_answer(self, *item, &error_posted);
  {
    std::lock_guard lock(s->mutex);
    if (ret != GST_FLOW_OK && !s->flushing) s->last_flow = ret;
    s->cond.notify_all();
  }
  if (ret == GST_FLOW_OK) return;
  GST_DEBUG_OBJECT(self, "pausing: %s", gst_flow_get_name(ret));
  if (ret == GST_FLOW_NOT_LINKED || ret < GST_FLOW_EOS) {
    // Fatal: say so (unless the error is already on the bus) and end the stream downstream.
    if (!error_posted) GST_ELEMENT_FLOW_ERROR(self, ret);
    gst_pad_push_event(self->srcpad, gst_event_new_eos());
  }
  gst_pad_pause_task(self->srcpad);
}

static gboolean gst_oxi_llm_src_activate_mode(GstPad* pad, GstObject* parent, GstPadMode mode,
                                              gboolean active) {
  GstOxiLlm* self = GST_OXI_LLM(parent);
  GstOxiLlmState* s = self->state;
  if (mode != GST_PAD_MODE_PUSH) return FALSE;
  if (active) {
    {
      std::lock_guard lock(s->mutex);
      s->flushing = false;
      s->cancel = false;
      s->last_flow = GST_FLOW_OK;
    }
    return gst_pad_start_task(pad, gst_oxi_llm_loop, self, nullptr);
  }
  {
    std::lock_guard lock(s->mutex);
    s->flushing = true;
    s->cancel = true;
    s->clear_queue();
    s->cond.notify_all();
  }
  if (s->engine) s->engine->cancel();
  return gst_pad_stop_task(pad);
}

static GstStateChangeReturn gst_oxi_llm_change_state(GstElement* element,
                                                     GstStateChange transition) {
  GstOxiLlm* self = GST_OXI_LLM(element);
  // Before the parent activates the pads: the task must find the engine there.
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED && !gst_oxi_llm_load(self))
    return GST_STATE_CHANGE_FAILURE;

  const GstStateChangeReturn ret =
      GST_ELEMENT_CLASS(gst_oxi_llm_parent_class)->change_state(element, transition);

  const bool unload =
      transition == GST_STATE_CHANGE_PAUSED_TO_READY ||
      (transition == GST_STATE_CHANGE_READY_TO_PAUSED && ret == GST_STATE_CHANGE_FAILURE);
  if (unload) {
    // The pads are inactive now (their task stopped), so nothing uses the engine.
    self->state->engine.reset();
    self->state->model.reset();
    self->state->clear_collected();
  }
  return ret;
}
