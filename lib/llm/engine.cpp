#include "lib/llm/engine.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <utility>

#include <spdlog/spdlog.h>

#include "backends/cpu/cpu_backend.h"
#include "lib/core/error.h"
#include "lib/hub/hub.h"
#include "lib/llm/draft_model.h"
#include "lib/llm/eval_batcher.h"
#include "lib/llm/grammar_constraint.h"
#include "lib/llm/stream_decoder.h"

namespace oxi::llm {
namespace {

using Clock = std::chrono::steady_clock;

// Token `id`'s log-probability in `logits` (log-softmax in double precision) and the `top`
// likeliest tokens' (ties by lower id).
TokenLogprob token_logprob(std::span<const float> logits, int32_t id, size_t top) {
  const float best = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - best);
  const double log_z = best + std::log(sum);
  TokenLogprob t;
  t.id = id;
  t.logprob = static_cast<float>(logits[static_cast<size_t>(id)] - log_z);
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  top = std::min(top, ids.size());
  std::partial_sort(
      ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(top), ids.end(),
      [&](int32_t a, int32_t b) {
        return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
               (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
      });
  for (size_t i = 0; i < top; ++i)
    t.top.emplace_back(ids[i], static_cast<float>(logits[static_cast<size_t>(ids[i])] - log_z));
  return t;
}

// A sampled reply under a grammar looks for its top-k allowed tokens among the 8 k likeliest
// tokens (a state not met before); where fewer are allowed there, the vocabulary is walked.
constexpr size_t kGrammarLeadFactor = 8;

// A lazy grammar (GenerateOptions::grammar_triggers): the constraint held back until a trigger
// appears in the reply's bytes, then given the text from the trigger's start on.
class LazyGrammar {
 public:
  LazyGrammar(const std::vector<std::string>& triggers, bool at_start, GrammarConstraint* grammar)
      : triggers_(triggers), at_start_(at_start), grammar_(triggers.empty() ? nullptr : grammar) {
    for (const std::string& t : triggers_) longest_ = std::max(longest_, t.size());
  }
  // The grammar waits for a trigger (the reply is free meanwhile).
  bool waiting() const { return grammar_ != nullptr; }
  // After a token's text joined the reply: the constraint that holds from now on, or nullptr
  // (no trigger yet; or one whose text cannot start the grammar, and the reply stays free).
  GrammarConstraint* after(std::string_view piece) {
    // A trigger that was not there before ends in the new piece.
    const size_t from = text_.size() >= longest_ ? text_.size() - longest_ + 1 : 0;
    text_ += piece;
    size_t start = std::string::npos;
    if (at_start_) {
      // At the reply's first byte, or after its leading whitespace.
      const size_t lead = std::min(text_.find_first_not_of(" \t\r\n"), text_.size());
      bool may_start = false;
      for (const size_t at : {size_t{0}, lead}) {
        const std::string_view rest = std::string_view(text_).substr(at);
        for (const std::string& t : triggers_) {
          if (rest.starts_with(t)) start = std::min(start, at);
          may_start = may_start || std::string_view(t).starts_with(rest);
        }
      }
      if (start == std::string::npos) {
        if (!may_start) grammar_ = nullptr;  // the reply began otherwise: it stays free
        return nullptr;
      }
    } else {
      for (const std::string& t : triggers_) start = std::min(start, text_.find(t, from));
      if (start == std::string::npos) return nullptr;
    }
    GrammarConstraint* grammar = std::exchange(grammar_, nullptr);
    return grammar->accept_text(std::string_view(text_).substr(start)) ? grammar : nullptr;
  }

 private:
  const std::vector<std::string>& triggers_;
  bool at_start_;
  GrammarConstraint* grammar_;
  size_t longest_ = 0;
  std::string text_;  // the reply's bytes so far
};

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The engine's part of a state file, after Session's bytes: the history and raw text, their
// length as u64 and this magic, so that the end of the file says whether it is there.
// See evaluate_prompt.
constexpr size_t kMinPromptBatch = 5;

constexpr char kTrailerMagic[8] = {'O', 'X', 'I', 'E', 'N', 'G', 'N', '1'};

std::string token_text_or_empty(const tokenizer::Tokenizer& tok, std::optional<int32_t> id) {
  return id ? tok.token_text(*id) : std::string();
}

// Drops the oldest exchange of `history` (after its leading system messages): the first user
// message and what follows it up to the next user message, so the rest still starts with a user
// turn (templates such as Gemma's and Mistral's refuse roles out of turn). False when there is
// none.
bool drop_oldest_exchange(std::vector<ChatMessage>& history) {
  const auto first = std::find_if(history.begin(), history.end(),
                                  [](const ChatMessage& m) { return m.role != "system"; });
  if (first == history.end()) return false;
  const auto next_user = std::find_if(std::next(first), history.end(),
                                      [](const ChatMessage& m) { return m.role == "user"; });
  history.erase(first, next_user);
  return true;
}

}  // namespace

const char* to_string(StopReason reason) {
  switch (reason) {
    case StopReason::eos:
      return "eos";
    case StopReason::stop_string:
      return "stop string";
    case StopReason::max_tokens:
      return "max tokens";
    case StopReason::context_full:
      return "context full";
    case StopReason::cancelled:
      return "cancelled";
    case StopReason::choice:
      return "choice";
  }
  return "?";
}

kernels::DType parse_load_quant(std::string_view name) {
  if (name == "q8" || name == "q8_0" || name == "Q8_0") return kernels::DType::Q8_0;
  if (name == "q4" || name == "q4_0" || name == "Q4_0") return kernels::DType::Q4_0;
  throw Error("--quant", "unknown quantization '" + std::string(name) + "' (q8 or q4)");
}

std::string fallback_template_name(const Model& model) {
  const std::string& arch = model.config().arch;
  if (arch == "llama")
    return model.tokenizer().token_id("<|start_header_id|>") ? "llama3" : "llama2";
  if (arch == "gemma3") return "gemma";
  if (arch == "phi3") return "phi3";
  return "chatml";  // qwen2, qwen3 and anything else
}

std::unique_ptr<Engine> Engine::load(std::string_view spec, const EngineOptions& options) {
  const hub::HubOptions hub_options = options.hub.value_or(hub::HubOptions::from_environment());
  const std::filesystem::path path = hub::resolve_model(spec, hub_options);
  LoadOptions load_options;
  load_options.quant = options.quant;
  return std::make_unique<Engine>(Model::load(path, load_options), options);
}

Engine::Engine(std::shared_ptr<const Model> model, const EngineOptions& options)
    : model_(std::move(model)), backend_(backends::make_cpu_backend(options.threads)) {
  session_ = std::make_unique<Session>(model_, *backend_, options.n_ctx, options.kv_type);
  if (options.batcher) {
    session_->use_batcher(options.batcher);
    batcher_ = options.batcher;
  }
  const tokenizer::Tokenizer& tok = model_->tokenizer();
  if (!options.draft_model.empty() || options.loaded_draft) {
    if (options.draft_max < 1 || options.draft_min < 0 || options.draft_min > options.draft_max ||
        !(options.draft_p_min >= 0 && options.draft_p_min <= 1))
      throw Error("draft model",
                  "draft_max must be 1 or more, draft_min 0..draft_max, "
                  "draft_p_min 0..1");
    std::shared_ptr<const Model> draft = options.loaded_draft;
    if (!draft) {
      const hub::HubOptions hub_options = options.hub.value_or(hub::HubOptions::from_environment());
      LoadOptions load_options;
      load_options.quant = options.quant;
      draft = Model::load(hub::resolve_model(options.draft_model, hub_options), load_options);
    }
    draft_ = std::make_unique<DraftModel>(std::move(draft), *backend_, session_->n_ctx(), tok);
    draft_max_ = options.draft_max;
    draft_min_ = options.draft_min;
    draft_p_min_ = options.draft_p_min;
  }
  const std::string bos = token_text_or_empty(tok, tok.bos());
  const std::string eos = token_text_or_empty(tok, tok.eos());

  const std::string& wanted = options.chat_template;
  if (!wanted.empty()) {
    const auto names = ChatTemplate::names();
    if (std::find(names.begin(), names.end(), wanted) == names.end() &&
        std::filesystem::is_regular_file(wanted)) {
      std::ifstream in(wanted, std::ios::binary);
      const std::string source((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
      template_.emplace(source, bos, eos);
    } else {
      template_.emplace(ChatTemplate::named(wanted, bos, eos));  // throws listing the names
    }
    template_name_ = wanted;
    return;
  }
  if (const auto source = model_->chat_template()) {
    try {
      template_.emplace(*source, bos, eos);
      template_name_ = "model";
      return;
    } catch (const Error& e) {
      spdlog::warn("{}: the model's chat template is not usable ({}); using a fallback",
                   model_->path().string(), e.what());
    }
  }
  template_name_ = fallback_template_name(*model_);
  template_.emplace(ChatTemplate::named(template_name_, bos, eos));
}

Engine::~Engine() = default;

bool Engine::is_end_token(int32_t id) const {
  const std::vector<int32_t> ends = model_->eos_ids();
  return std::find(ends.begin(), ends.end(), id) != ends.end();
}

std::vector<int32_t> Engine::tokenize_prompt(const std::string& text) const {
  const tokenizer::Tokenizer& tok = model_->tokenizer();
  // Templates that write bos_token themselves must not get a second one.
  const std::string bos = token_text_or_empty(tok, tok.bos());
  const bool add_bos = model_->add_bos() && !(!bos.empty() && text.starts_with(bos));
  return tok.encode(text, add_bos, /*parse_special=*/true);
}

std::string Engine::render(const std::vector<ChatMessage>& messages,
                           const jinja::Json& template_variables) const {
  return render_after(history_, messages, template_variables);
}

std::string Engine::render_after(const std::vector<ChatMessage>& history,
                                 const std::vector<ChatMessage>& messages,
                                 const jinja::Json& template_variables) const {
  std::vector<ChatMessage> all = history;
  all.insert(all.end(), messages.begin(), messages.end());
  return template_->apply(all, /*add_generation_prompt=*/true, template_variables);
}

TurnStats Engine::send(const std::vector<ChatMessage>& messages, const GenerateOptions& options,
                       const PieceCallback& on_piece) {
  // A conversation that no longer fits, with room for a reply (a quarter of the context, or
  // max_tokens when fewer), loses its oldest exchanges, system messages kept, until the prompt
  // takes at most half of the context: the remaining turns are evaluated again once (the cache
  // keeps only the common prefix), and the next turns have room again (as llama.cpp's context
  // shift discards half of what follows the kept tokens, but exact: no RoPE re-rotation of
  // cached keys).
  std::vector<ChatMessage> history = history_;
  std::vector<int32_t> prompt =
      tokenize_prompt(render_after(history, messages, options.template_variables));
  const size_t n_ctx = session_->n_ctx();
  const size_t reply_room = options.max_tokens >= 0
                                ? std::min(static_cast<size_t>(options.max_tokens), n_ctx / 4)
                                : n_ctx / 4;
  size_t dropped = 0;
  if (prompt.size() + reply_room > n_ctx) {
    while (prompt.size() > n_ctx / 2) {
      const size_t before = history.size();
      if (!drop_oldest_exchange(history)) break;
      dropped += before - history.size();
      prompt = tokenize_prompt(render_after(history, messages, options.template_variables));
    }
  }
  TurnStats stats = run_turn(std::move(prompt), options, /*strip_leading_space=*/true, on_piece);
  stats.dropped_messages = dropped;
  history_ = std::move(history);
  history_.insert(history_.end(), messages.begin(), messages.end());
  history_.push_back({"assistant", stats.text});
  raw_text_.clear();
  return stats;
}

TurnStats Engine::send_raw(std::string_view text, const GenerateOptions& options,
                           const PieceCallback& on_piece) {
  // The whole text is tokenized again (not just the new part) so the tokens are those of
  // evaluating it all at once; the cache keeps the common prefix.
  const std::string full = raw_text_ + std::string(text);
  TurnStats stats = run_turn(tokenize_prompt(full), options,
                             /*strip_leading_space=*/!options.choices.empty(), on_piece);
  const tokenizer::Tokenizer& tok = model_->tokenizer();
  if (stats.context_shifts == 0) {
    raw_text_ = full;
    for (int32_t id : stats.generated_ids)
      if (!tok.is_control(id)) raw_text_ += tok.token_piece(id);
  } else {
    // The context no longer holds the start of the text: the next turn continues what it holds,
    // the cache and the last sampled token (a turn never evaluates its last token).
    std::vector<int32_t> held = session_->tokens();
    held.push_back(stats.generated_ids.back());
    raw_text_ = tok.decode(held);
  }
  history_.clear();
  return stats;
}

TurnStats Engine::send_tokens(std::vector<int32_t> prompt, const GenerateOptions& options,
                              const PieceCallback& on_piece) {
  const size_t n_vocab = model_->tokenizer().vocab_size();
  for (int32_t id : prompt)
    if (id < 0 || static_cast<size_t>(id) >= n_vocab)
      throw Error("llm engine", "token id " + std::to_string(id) + " is not in the vocabulary");
  history_.clear();
  raw_text_.clear();
  return run_turn(std::move(prompt), options, /*strip_leading_space=*/false, on_piece);
}

void Engine::evaluate_prompt(const std::vector<int32_t>& prompt, TurnStats& stats) {
  if (prompt.empty()) throw Error("llm engine", "the prompt is empty (no text and no BOS token)");
  if (prompt.size() > session_->n_ctx())
    throw Error("llm engine", "the prompt has " + std::to_string(prompt.size()) +
                                  " tokens, the context only " + std::to_string(session_->n_ctx()) +
                                  " positions (a larger context size would hold it)");
  const std::vector<int32_t>& cached = session_->tokens();
  size_t common = 0;
  while (common < cached.size() && common < prompt.size() && cached[common] == prompt[common])
    ++common;
  const bool logits_known =
      common == prompt.size() && common == cached.size() && !next_logits_.empty();
  size_t start = common;
  if (!logits_known) {
    // Tiny batches may be computed by other kernels than larger ones (the CPU backend: matvec
    // for up to 4 tokens of float weights), with other rounding. Every prompt batch gets at
    // least kMinPromptBatch tokens, re-evaluating a few cached ones if need be, so that a
    // prompt continued from a saved state is bit-identical to the whole prompt at once.
    if (start == prompt.size()) --start;  // the last token again, for its logits
    if (start < kMinPromptBatch) start = 0;
    if (prompt.size() - start < kMinPromptBatch)
      start = prompt.size() > kMinPromptBatch ? prompt.size() - kMinPromptBatch : 0;
  } else {
    start = prompt.size();
  }
  if (start < cached.size()) {
    session_->truncate(start);
    next_logits_.clear();
  }
  stats.cached_tokens = start;
  stats.prompt_tokens = prompt.size() - start;

  const Clock::time_point start_time = Clock::now();
  for (size_t at = start; at < prompt.size();) {
    if (cancel_requested_.load(std::memory_order_relaxed)) {
      stats.stop_reason = StopReason::cancelled;
      next_logits_.clear();
      break;
    }
    // Batches of Session::kMaxBatch, the last one never shorter than kMinPromptBatch.
    size_t n = std::min(Session::kMaxBatch, prompt.size() - at);
    const size_t after = prompt.size() - at - n;
    if (after > 0 && after < kMinPromptBatch) n -= kMinPromptBatch - after;
    const std::span<const float> logits =
        session_->eval(std::span<const int32_t>(prompt).subspan(at, n));
    next_logits_.assign(logits.begin(), logits.end());
    at += n;
  }
  stats.prompt_ms = ms_since(start_time);
}

GrammarConstraint& Engine::grammar_constraint(const std::string& grammar) {
  if (grammar_ && grammar_->grammar() == grammar) {
    grammar_->restart();
    return *grammar_;
  }
  grammar_.reset();
  if (!token_trie_)
    token_trie_ = std::make_shared<const TokenTrie>(model_->tokenizer(), model_->eos_ids());
  grammar_ = std::make_unique<GrammarConstraint>(token_trie_, grammar);
  return *grammar_;
}

SamplerOptions Engine::sampling_options(const GenerateOptions& options) const {
  SamplerOptions s = options.sampling;
  if (options.ignore_eos) {
    if (!options.choices.empty())
      throw Error("generate",
                  "ignore_eos cannot go with choices (a choice may end on the end token)");
    for (int32_t id : model_->eos_ids())
      s.logit_bias.push_back({id, -std::numeric_limits<float>::infinity()});
  }
  return s;
}

TurnStats Engine::run_turn(std::vector<int32_t> prompt, const GenerateOptions& options,
                           bool strip_leading_space, const PieceCallback& on_piece) {
  cancel_requested_.store(false, std::memory_order_relaxed);
  // Passes shared with other engines wait for this one while its turn runs.
  std::optional<EvalBatcher::Activity> active;
  if (batcher_) active.emplace(*batcher_);
  // Before the prompt, so that bad options change nothing.
  Sampler sampler(sampling_options(options));
  sampler.check_logit_bias(static_cast<size_t>(model_->config().n_vocab));
  GrammarConstraint* grammar = nullptr;
  if (!options.grammar.empty()) {
    if (!options.choices.empty()) throw Error("generate", "a grammar cannot go with choices");
    grammar = &grammar_constraint(options.grammar);
  }
  // A lazy grammar waits for a trigger in the reply's bytes.
  LazyGrammar lazy(options.grammar_triggers, options.grammar_triggers_at_start, grammar);
  if (lazy.waiting()) grammar = nullptr;
  TurnStats stats;
  prompt_logits_.clear();
  evaluate_prompt(prompt, stats);
  stats.prompt_ids = std::move(prompt);
  if (stats.stop_reason == StopReason::cancelled) return stats;
  prompt_logits_ = next_logits_;

  const tokenizer::Tokenizer& tok = model_->tokenizer();
  StreamDecoder decoder(tok, options.stop, strip_leading_space);
  std::optional<ChoiceConstraint> choices;
  if (!options.choices.empty()) {
    const std::vector<int32_t> ends = model_->eos_ids();
    choices.emplace(tok, options.choices, ends.empty() ? tok.eos().value_or(-1) : ends.front());
  }
  // A --choices reply is emitted whole at the end: exactly the choice's text.
  const bool stream = on_piece && !choices;

  // A context shift keeps BOS and options.keep tokens of the prompt after it (llama.cpp's
  // n_keep, to which it adds BOS).
  const std::optional<int32_t> bos = tok.bos();
  const size_t bos_kept = !stats.prompt_ids.empty() && bos && stats.prompt_ids[0] == *bos ? 1 : 0;
  const size_t keep = options.keep < 0 ? stats.prompt_ids.size()
                                       : std::min(stats.prompt_ids.size(),
                                                  bos_kept + static_cast<size_t>(options.keep));

  const Clock::time_point start = Clock::now();
  std::span<const float> logits = prompt_logits_;
  const size_t max_tokens =
      options.max_tokens < 0 ? SIZE_MAX : static_cast<size_t>(options.max_tokens);
  stats.stop_reason = StopReason::max_tokens;
  bool evaluate_last = false;  // the previous token still has to enter the cache
  // Speculative decoding: draft tokens the model evaluated after the accepted ones (in its
  // cache), with the logits after each; drafted[next_draft] is the one the next sampled token
  // must equal for its logits to be known already.
  std::vector<int32_t> drafted;
  std::vector<float> drafted_logits;
  size_t next_draft = 0;
  const auto drop_drafts = [&] {  // those not taken leave the cache
    session_->truncate(session_->n_past() - (drafted.size() - next_draft));
    drafted.clear();
    next_draft = 0;
  };
  const size_t n_vocab = static_cast<size_t>(model_->config().n_vocab);
  while (true) {
    if (!choices && stats.generated_ids.size() >= max_tokens) {
      stats.stop_reason = StopReason::max_tokens;
      break;
    }
    if (cancel_requested_.load(std::memory_order_relaxed)) {
      stats.stop_reason = StopReason::cancelled;
      break;
    }
    // A complete grammar admits only the end tokens, which ignore_eos rules out: the reply
    // ends there (before its last token is evaluated, as at an end token).
    if (grammar && options.ignore_eos && grammar->must_end()) {
      stats.stop_reason = StopReason::eos;
      break;
    }
    if (evaluate_last && next_draft < drafted.size() &&
        drafted[next_draft] == stats.generated_ids.back()) {
      // The model picked the draft's token: its logits came with the draft's batch.
      logits = std::span<const float>(drafted_logits).subspan(next_draft * n_vocab, n_vocab);
      next_logits_.assign(logits.begin(), logits.end());
      ++next_draft;
      ++stats.draft_accepted;
    } else if (evaluate_last) {
      if (!drafted.empty()) drop_drafts();
      const int32_t last = stats.generated_ids.back();
      // llama.cpp shifts once the token would take the context's last position.
      if (options.context_shift && session_->n_past() + 1 >= session_->n_ctx() &&
          shift_context(last, keep, stats)) {
        if (next_logits_.empty()) {  // cancelled while the kept tokens were evaluated
          stats.stop_reason = StopReason::cancelled;
          evaluate_last = false;
          break;
        }
        logits = next_logits_;
      } else if (session_->n_past() + 1 > session_->n_ctx()) {
        stats.stop_reason = StopReason::context_full;
        break;
      } else {
        logits = evaluate_with_draft(last, stats, max_tokens, drafted, drafted_logits);
        next_logits_.assign(logits.begin(), logits.end());
      }
    }
    // The repetition penalty looks at the context: prompt and reply so far (not the drafts).
    const std::span<const int32_t> history =
        std::span<const int32_t>(session_->tokens())
            .first(session_->n_past() - (drafted.size() - next_draft));
    int32_t id = -1;
    if (grammar && sampler.greedy()) {
      // The best token is the answer when the grammar allows it: one token checked instead
      // of the vocabulary walked (a state the constraint has not met costs a walk).
      id = sampler.sample(logits, history, nullptr);
      if (!grammar->allows(id)) id = sampler.sample(logits, history, &grammar->allowed());
    } else if (grammar && sampler.deciding_count() > 0 && !grammar->knows_allowed()) {
      // A state not met before, under a top-k draw: only the k likeliest allowed tokens can be
      // drawn, and they are found among the likeliest tokens, checked one by one, instead of
      // the vocabulary walked (the same draw: Sampler::deciding_count).
      const size_t k = sampler.deciding_count();
      std::vector<int32_t> leading;
      for (int32_t t : sampler.leading_tokens(logits, history, kGrammarLeadFactor * k))
        if (leading.size() < k && grammar->allows(t)) leading.push_back(t);
      std::sort(leading.begin(), leading.end());
      id = sampler.sample(logits, history, leading.size() == k ? &leading : &grammar->allowed());
    } else {
      const std::vector<int32_t>* allowed =
          choices ? &choices->allowed() : (grammar ? &grammar->allowed() : nullptr);
      id = sampler.sample(logits, history, allowed);
    }
    evaluate_last = true;
    if (grammar) grammar->accept(id);  // (a lazy grammar: only once it holds)
    // The token joins the reply (a choice's token may not: its text may be complete already).
    const auto generated = [&] {
      stats.generated_ids.push_back(id);
      if (options.logprobs >= 0)
        stats.logprobs.push_back(token_logprob(logits, id, static_cast<size_t>(options.logprobs)));
    };

    if (choices) {
      const size_t before = choices->position();
      choices->accept(id);
      if (choices->position() > before) {
        generated();
        decoder.push(id);
      }
      if (choices->done()) {
        stats.stop_reason = StopReason::choice;
        stats.choice = choices->choice();
        break;
      }
      continue;
    }
    generated();
    if (is_end_token(id)) {
      stats.stop_reason = StopReason::eos;
      break;
    }
    if (lazy.waiting()) grammar = lazy.after(tok.is_control(id) ? "" : tok.token_piece(id));
    const std::string piece = decoder.push(id);
    if (stream && !piece.empty() && !on_piece(piece)) {
      stats.stop_reason = StopReason::cancelled;
      break;
    }
    if (decoder.stopped()) {
      stats.stop_reason = StopReason::stop_string;
      stats.stop_string = decoder.stop_string();
      break;
    }
  }
  // Drafts not taken leave the cache (with the last sampled token if it was one: a turn does
  // not evaluate its last token).
  if (!drafted.empty()) drop_drafts();
  const std::string rest = decoder.finish();
  if (stream && !rest.empty()) on_piece(rest);
  stats.text = decoder.text();
  if (stats.choice) {
    stats.text = options.choices[*stats.choice];
    if (on_piece) on_piece(stats.text);
  }
  // Tokens sampled but not evaluated leave the cache's last logits unknown to the next turn.
  if (evaluate_last) next_logits_.clear();
  stats.generated_tokens = stats.generated_ids.size();
  stats.generation_ms = ms_since(start);
  return stats;
}

std::span<const float> Engine::evaluate_with_draft(int32_t last, TurnStats& stats,
                                                   size_t max_tokens, std::vector<int32_t>& drafted,
                                                   std::vector<float>& drafted_logits) {
  // Room for the drafts: in the context after `last`, and in the reply (the model samples one
  // token from last's logits, then one after each draft token it takes).
  size_t room = draft_ ? session_->n_ctx() - session_->n_past() - 1 : 0;
  room = std::min(room, static_cast<size_t>(draft_max_));
  if (max_tokens != SIZE_MAX) room = std::min(room, max_tokens - stats.generated_ids.size() - 1);
  std::vector<int32_t> proposal;
  if (room > 0) proposal = draft_->propose(session_->tokens(), last, room, draft_p_min_);
  if (proposal.empty() || proposal.size() < static_cast<size_t>(draft_min_))
    return session_->eval(std::span<const int32_t>(&last, 1));
  // One batch: last and the drafts, the logits after each.
  std::vector<int32_t> batch = {last};
  batch.insert(batch.end(), proposal.begin(), proposal.end());
  const std::span<const float> all = session_->eval(batch, /*all_logits=*/true);
  const size_t n_vocab = all.size() / batch.size();
  drafted = std::move(proposal);
  drafted_logits.assign(all.begin() + static_cast<std::ptrdiff_t>(n_vocab), all.end());
  stats.draft_tokens += drafted.size();
  return all.first(n_vocab);
}

bool Engine::shift_context(int32_t pending, size_t keep, TurnStats& stats) {
  // Half of the cached tokens after the kept ones leave (llama.cpp: n_discard = (n_past -
  // n_keep) / 2); the rest and then the sampled token are evaluated again after the kept
  // tokens (the cache keeps that common prefix). False when nothing can leave.
  std::vector<int32_t> context = session_->tokens();
  if (keep >= context.size()) return false;
  const size_t discard = (context.size() - keep) / 2;
  if (discard == 0) return false;
  context.erase(context.begin() + static_cast<std::ptrdiff_t>(keep),
                context.begin() + static_cast<std::ptrdiff_t>(keep + discard));
  context.push_back(pending);
  spdlog::debug("context shift: {} tokens kept, {} dropped, {} evaluated again", keep, discard,
                context.size() - keep);
  TurnStats evaluation;
  evaluate_prompt(context, evaluation);
  ++stats.context_shifts;
  stats.shifted_tokens += discard;
  return true;
}

void Engine::reset() {
  session_->truncate(0);
  new_conversation();
}

void Engine::new_conversation() {
  history_.clear();
  raw_text_.clear();
  prompt_logits_.clear();
  next_logits_.clear();
}

namespace {

// The engine's trailer payload: u32 message count, each message as two strings (role,
// content), then the raw text; a string is u64 length + bytes (any bytes: a raw transcript may
// end inside a UTF-8 character).
void put_string(std::string& out, std::string_view s) {
  const uint64_t n = s.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out.append(s);
}

std::string take_string(std::string_view& in, const std::string& context) {
  uint64_t n = 0;
  if (in.size() < sizeof n) throw Error(context, "engine state is truncated");
  std::memcpy(&n, in.data(), sizeof n);
  in.remove_prefix(sizeof n);
  if (in.size() < n) throw Error(context, "engine state is truncated");
  std::string s(in.substr(0, n));
  in.remove_prefix(n);
  return s;
}

}  // namespace

void Engine::save_state(const std::filesystem::path& file) const {
  session_->save_state(file);
  std::string payload;
  const auto count = static_cast<uint32_t>(history_.size());
  payload.append(reinterpret_cast<const char*>(&count), sizeof count);
  for (const ChatMessage& m : history_) {
    put_string(payload, m.role);
    put_string(payload, m.content);
  }
  put_string(payload, raw_text_);
  std::ofstream out(file, std::ios::binary | std::ios::app);
  const uint64_t length = payload.size();
  out.write(payload.data(), static_cast<std::streamsize>(payload.size()));
  out.write(reinterpret_cast<const char*>(&length), sizeof length);
  out.write(kTrailerMagic, sizeof kTrailerMagic);
  out.flush();
  if (!out) throw Error(file.string(), "write failed");
}

void Engine::load_state(const std::filesystem::path& file) {
  // The engine's trailer is read first and the session's state next, so that a refused file
  // leaves the conversation as it was.
  const std::string context = file.string();
  std::ifstream in(file, std::ios::binary | std::ios::ate);
  if (!in) throw Error(context, "cannot open");
  const auto size = static_cast<uint64_t>(in.tellg());
  char magic[sizeof kTrailerMagic] = {};
  uint64_t length = 0;
  bool has_trailer = false;
  if (size >= 16) {
    in.seekg(static_cast<std::streamoff>(size - 16));
    in.read(reinterpret_cast<char*>(&length), sizeof length);
    in.read(magic, sizeof magic);
    has_trailer = in && std::memcmp(magic, kTrailerMagic, sizeof magic) == 0 && length <= size - 16;
  }
  std::vector<ChatMessage> history;
  std::string raw_text;
  if (has_trailer) {
    std::string payload(length, '\0');
    in.seekg(static_cast<std::streamoff>(size - 16 - length));
    in.read(payload.data(), static_cast<std::streamsize>(length));
    if (!in) throw Error(context, "state file is truncated");
    std::string_view rest = payload;
    uint32_t count = 0;
    if (rest.size() < sizeof count) throw Error(context, "engine state is truncated");
    std::memcpy(&count, rest.data(), sizeof count);
    rest.remove_prefix(sizeof count);
    for (uint32_t i = 0; i < count; ++i) {
      std::string role = take_string(rest, context);
      history.push_back({std::move(role), take_string(rest, context)});
    }
    raw_text = take_string(rest, context);
  }
  session_->load_state(file);  // throws naming the file
  next_logits_.clear();
  prompt_logits_.clear();
  history_ = std::move(history);
  // A bare Session state: the text is what the tokens decode to.
  raw_text_ = has_trailer ? std::move(raw_text) : model_->tokenizer().decode(session_->tokens());
}

}  // namespace oxi::llm
