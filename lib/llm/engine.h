// Engine: a chat (or raw-text) conversation with one LLM, for the CLI, the C API and
// embedding programs. It owns a Model, a CPU backend and a Session, keeps the chat history,
// and evaluates only what each turn adds (the KV cache of the previous turns is reused).
//
//   auto engine = oxi::llm::Engine::load("Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q8_0", {.threads = 8});
//   oxi::llm::GenerateOptions gen;
//   gen.sampling.temperature = 0;
//   auto stats = engine->send({{"user", "Hello!"}}, gen, [](std::string_view piece) {
//     std::fwrite(piece.data(), 1, piece.size(), stdout);
//     return true;  // false stops generation
//   });
//
// Not thread-safe, except cancel(), which any thread may call while send() runs.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "kernels/formats/dtype.h"
#include "lib/chat/chat_template.h"
#include "lib/hub/hub_options.h"
#include "lib/llm/model.h"
#include "lib/llm/sampler.h"
#include "lib/llm/session.h"

namespace oxi::llm {

class DraftModel;
class EvalBatcher;
class GrammarConstraint;
class TokenTrie;

struct EngineOptions {
  int threads = 0;                        // CPU backend threads; 0 = every core
  size_t n_ctx = 0;                       // context positions; 0 = Session's default
  std::optional<kernels::DType> kv_type;  // KV cache F16 / F32; default Session::default_kv_type
  std::optional<kernels::DType> quant;    // Q8_0 / Q4_0 for HF checkpoints (--quant)
  // A named fallback template (ChatTemplate::names()) or a Jinja file; empty = the model's own
  // template, else a fallback chosen from the architecture.
  std::string chat_template;
  std::optional<hub::HubOptions> hub;  // default: HubOptions::from_environment()
  // Speculative decoding (llama.cpp's --model-draft): a small model of the same vocabulary
  // proposes up to draft_max tokens (stopping below draft_p_min probability), the model checks
  // them in one batch and keeps those its own sampling picks: the same reply, fewer passes.
  // Drafts shorter than draft_min are not used. Empty: off.
  std::string draft_model;
  // The draft model already loaded (shared between engines, as the element's model cache shares
  // it); used instead of loading draft_model.
  std::shared_ptr<const Model> loaded_draft;
  // Continuous batching (oxinfer serve --parallel): the evaluations of this engine's session run
  // in passes shared with the other engines of the batcher that generate at the same time.
  // The batcher's model must be this engine's. Empty: passes of its own.
  std::shared_ptr<EvalBatcher> batcher;
  int draft_max = 16;
  int draft_min = 0;
  float draft_p_min = 0.8f;
};

struct GenerateOptions {
  SamplerOptions sampling;
  int max_tokens = -1;               // < 0: until an end token, a stop string or a full context
  std::vector<std::string> stop;     // stop strings (not part of the reply)
  std::vector<std::string> choices;  // non-empty: the reply is exactly one of these
  // A reply that fills the context: false stops it there (StopReason::context_full, as
  // llama.cpp does by default); true shifts the context as llama.cpp's --context-shift does and
  // generates on: the first `keep` tokens stay, half of the tokens after them leave. Exact, not
  // a RoPE re-rotation of cached keys: what stays is evaluated again, so the tokens after a
  // shift are those a new session would generate from the shifted context.
  bool context_shift = false;
  // Tokens of the turn's prompt (BOS not counted) a shift keeps; < 0 = the whole prompt.
  int keep = 0;
  // The model's end tokens get a -inf logit bias, so the reply runs until max_tokens, a stop
  // string or a full context (llama.cpp's --ignore-eos). Not with choices (their end token).
  bool ignore_eos = false;
  // A GBNF grammar (gbnf.h) the reply must follow (llama.cpp's --grammar): only tokens that
  // continue it can be picked, an end token only where the reply is complete. Empty: none.
  // Not with choices.
  std::string grammar;
  // Non-empty: the grammar is lazy (llama.cpp's lazy grammars, as its server holds tool calls):
  // the reply is free until one of these texts appears in it, and from that text's start on it
  // follows the grammar (the text and the rest of its token first; when they cannot start a
  // sentence of the grammar, the reply stays free).
  std::vector<std::string> grammar_triggers;
  // The triggers count only at the reply's start (after whitespace), as llama.cpp's at_start
  // triggers (Llama 3.x tool calls); a reply that starts otherwise stays free.
  bool grammar_triggers_at_start = false;
  // >= 0: each generated token's log-probability under the model (its logits' softmax, before
  // bias, penalties and filters) and those of the `logprobs` likeliest tokens there, in
  // TurnStats::logprobs (OpenAI's logprobs / top_logprobs). < 0: not recorded.
  int logprobs = -1;
  // Chat mode (send): more variables for the chat template, an object (ChatTemplate::apply's
  // `extra`: the tools a reply may call, ...). null: none.
  jinja::Json template_variables = nullptr;
};

// A generated token's log-probability and the likeliest alternatives (GenerateOptions::logprobs).
struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;  // (id, log-probability), likeliest first
};

enum class StopReason {
  eos,           // the model produced an end token
  stop_string,   // a stop string appeared
  max_tokens,    // GenerateOptions::max_tokens reached
  context_full,  // no position left
  cancelled,     // cancel() or the callback returned false
  choice,        // a --choices reply is complete
};
const char* to_string(StopReason reason);

struct TurnStats {
  size_t prompt_tokens = 0;  // tokens this turn evaluated for its prompt (new ones only)
  size_t cached_tokens = 0;  // prompt tokens reused from the KV cache
  size_t generated_tokens = 0;
  double prompt_ms = 0;
  double generation_ms = 0;
  StopReason stop_reason = StopReason::eos;
  std::string text;                 // the reply as streamed (without a stop string)
  std::string stop_string;          // StopReason::stop_string: the one that appeared
  std::optional<size_t> choice;     // index into GenerateOptions::choices
  std::vector<int32_t> prompt_ids;  // the whole context before generation
  std::vector<int32_t> generated_ids;
  std::vector<TokenLogprob> logprobs;  // per generated id, when GenerateOptions::logprobs >= 0
  size_t dropped_messages = 0;         // send(): the oldest history messages that left the context
  size_t context_shifts = 0;           // GenerateOptions::context_shift: times the context shifted
  size_t shifted_tokens = 0;           // tokens those shifts dropped
  size_t draft_tokens = 0;             // EngineOptions::draft_model: tokens the draft proposed
  size_t draft_accepted = 0;           // ... and the model's sampling then picked

  double prompt_tok_s() const { return prompt_ms > 0 ? 1e3 * prompt_tokens / prompt_ms : 0; }
  double generation_tok_s() const {
    return generation_ms > 0 ? 1e3 * generated_tokens / generation_ms : 0;
  }
};

// Called with each piece of reply text as it becomes final; return false to stop.
using PieceCallback = std::function<bool(std::string_view piece)>;

class Engine {
 public:
  // spec: a local path or an org/name[:QUANT] repo id (hub::resolve_model). Throws oxi::Error.
  static std::unique_ptr<Engine> load(std::string_view spec, const EngineOptions& options = {});
  Engine(std::shared_ptr<const Model> model, const EngineOptions& options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Chat mode: appends `messages` (usually one user message, perhaps a system one first) to the
  // history, renders it with the chat template, evaluates what the cache lacks and generates
  // the assistant's reply, which joins the history. When the conversation leaves less than a
  // quarter of the context (or max_tokens) for the reply, its oldest exchanges leave the
  // history (system messages stay) until the prompt takes at most half of the context
  // (TurnStats::dropped_messages says how many). Throws oxi::Error (template errors, these
  // messages alone longer than the context); the history is unchanged then.
  TurnStats send(const std::vector<ChatMessage>& messages, const GenerateOptions& options,
                 const PieceCallback& on_piece = {});
  // Raw mode: `text` continues the context as is (no template; BOS first as the model says).
  TurnStats send_raw(std::string_view text, const GenerateOptions& options,
                     const PieceCallback& on_piece = {});

  // Raw mode over token ids built elsewhere (a fill-in-the-middle prompt, infill.h): the context
  // is exactly `prompt`, then the reply (a new conversation: the history and the raw text are
  // forgotten; the cache keeps the start it shares with `prompt`).
  TurnStats send_tokens(std::vector<int32_t> prompt, const GenerateOptions& options,
                        const PieceCallback& on_piece = {});

  // The prompt text send(messages) would render (the history plus these, generation prompt;
  // `template_variables` as GenerateOptions').
  std::string render(const std::vector<ChatMessage>& messages,
                     const jinja::Json& template_variables = nullptr) const;
  // The token ids of a prompt render() gave, as send() evaluates them (BOS as the model says,
  // unless the template wrote it).
  std::vector<int32_t> tokenize_prompt(const std::string& text) const;
  // The template that renders chat prompts.
  const ChatTemplate& chat_template() const { return *template_; }
  // Which template renders chat prompts ("model" or a fallback's name / a file).
  const std::string& template_name() const { return template_name_; }

  // Stops a running send() before its next token (or prompt batch). Any thread.
  void cancel() { cancel_requested_.store(true, std::memory_order_relaxed); }
  // Forgets the history and the cache.
  void reset();
  // Starts a new conversation: forgets the history (and the raw text) but keeps the KV cache,
  // so that one beginning with the same tokens as the last (a system prompt, the template's
  // header) evaluates only what differs, as llama.cpp's server reuses a cached prompt. The
  // logits are those of a fresh start, bit for bit (see evaluate_prompt).
  void new_conversation();

  // The KV state (Session::save_state) plus the history / raw text, in one file: a later
  // process load_state()s it and continues where this one stopped. Throws oxi::Error.
  void save_state(const std::filesystem::path& file) const;
  void load_state(const std::filesystem::path& file);

  // The logits after the last prompt token of the latest send (n_vocab floats).
  std::span<const float> prompt_logits() const { return prompt_logits_; }
  const std::vector<ChatMessage>& history() const { return history_; }
  const Model& model() const { return *model_; }
  std::shared_ptr<const Model> model_ptr() const { return model_; }
  Session& session() { return *session_; }
  const Session& session() const { return *session_; }
  backends::Backend& backend() { return *backend_; }

 private:
  TurnStats run_turn(std::vector<int32_t> prompt, const GenerateOptions& options,
                     bool strip_leading_space, const PieceCallback& on_piece);
  void evaluate_prompt(const std::vector<int32_t>& prompt, TurnStats& stats);
  bool shift_context(int32_t pending, size_t keep, TurnStats& stats);
  // Evaluates `last` and returns its logits; with a draft model, also the draft's proposal
  // after it in the same batch (into drafted / drafted_logits: the logits after each).
  std::span<const float> evaluate_with_draft(int32_t last, TurnStats& stats, size_t max_tokens,
                                             std::vector<int32_t>& drafted,
                                             std::vector<float>& drafted_logits);
  std::string render_after(const std::vector<ChatMessage>& history,
                           const std::vector<ChatMessage>& messages,
                           const jinja::Json& template_variables) const;
  bool is_end_token(int32_t id) const;
  // options.sampling plus ignore_eos' biases; throws oxi::Error for ignore_eos with choices.
  SamplerOptions sampling_options(const GenerateOptions& options) const;
  // The constraint for `grammar` at the empty reply: the last turn's when it had the same
  // grammar (its remembered sets kept), else a new one on the vocabulary's trie (built once).
  GrammarConstraint& grammar_constraint(const std::string& grammar);

  std::shared_ptr<const Model> model_;
  std::unique_ptr<backends::Backend> backend_;
  std::unique_ptr<Session> session_;
  std::shared_ptr<EvalBatcher> batcher_;
  std::optional<ChatTemplate> template_;
  std::string template_name_;
  std::vector<ChatMessage> history_;
  std::string raw_text_;  // raw mode: the text the context holds (prompts and replies)
  std::vector<float> prompt_logits_;
  std::vector<float> next_logits_;  // logits of the cache's last token, when known
  std::unique_ptr<DraftModel> draft_;
  int draft_max_ = 0, draft_min_ = 0;
  float draft_p_min_ = 0;
  std::shared_ptr<const TokenTrie> token_trie_;
  std::unique_ptr<GrammarConstraint> grammar_;
  std::atomic<bool> cancel_requested_{false};
};

// --quant: "q8" / "q8_0" → Q8_0, "q4" / "q4_0" → Q4_0; throws oxi::Error for anything else.
kernels::DType parse_load_quant(std::string_view name);

// The fallback chat template for a model without one: llama (llama3 when the vocabulary has
// <|start_header_id|>, else llama2), qwen2/qwen3: chatml, gemma3: gemma, phi3: phi3.
std::string fallback_template_name(const Model& model);

}  // namespace oxi::llm
