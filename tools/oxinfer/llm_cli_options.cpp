#include "tools/oxinfer/llm_cli_options.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <limits>
#include <random>
#include <sstream>

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "lib/llm/gbnf.h"
#include "lib/llm/json_schema_grammar.h"
#include "lib/llm/kv_cache.h"
#include "lib/llm/logit_bias.h"
#include "tools/oxinfer/text_input.h"

namespace oxi::cli {

void add_llm_options(ArgParser& p) {
  p.option("model", "MODEL", "a .gguf file, an HF directory, or org/name[:QUANT]", "m");
  p.option("system", "TEXT", "system message (chat mode)");
  p.option("template", "NAME",
           "chat template: llama2, llama3, chatml, gemma, phi3, zephyr, "
           "mistral or a Jinja file (default: the model's own)");
  p.option("temp", "T", "temperature; 0 = greedy (default 0.8)");
  p.option("top-k", "K", "keep the K most likely tokens; 0 = off (default 40)");
  p.option("top-p", "P", "keep the smallest set with probability mass P; 1 = off (default 0.95)");
  p.option("min-p", "P", "drop tokens below P x the top probability; 0 = off (default 0.05)");
  p.option("typical", "P",
           "locally typical sampling: keep the tokens nearest the entropy up to mass P; 1 = off");
  p.option("repeat-penalty", "R", "penalize tokens of the last --repeat-last-n; 1 = off");
  p.option("frequency-penalty", "F",
           "lower a token's logit by F x its count in the last --repeat-last-n; 0 = off");
  p.option("presence-penalty", "P",
           "lower the logit of each token in the last --repeat-last-n by P; 0 = off");
  p.option("repeat-last-n", "N", "tokens the penalties look at (default 64, -1 = all)");
  p.option("top-nsigma", "N", "keep logits within N standard deviations of the top; -1 = off");
  p.option("xtc-probability", "P", "XTC: how often the likeliest tokens leave; 0 = off");
  p.option("xtc-threshold", "T", "XTC: tokens at or above probability T leave, but the last (0.1)");
  p.option("mirostat", "N", "Mirostat 1 or 2 in place of top-k/p, min-p and penalties; 0 = off");
  p.option("mirostat-lr", "ETA", "Mirostat learning rate (0.1)");
  p.option("mirostat-ent", "TAU", "Mirostat target entropy, bits (5.0)");
  p.option("logit-bias", "ID(+|-)B",
           "add B to token ID's logit, e.g. 15043+1 or 2-inf (repeatable)");
  p.flag("ignore-eos", "never pick the end tokens: generate until --max-tokens or --stop");
  p.option("seed", "S", "random seed (default -1: random)", "s");
  p.option("max-tokens", "N", "generate at most N tokens; -1 = until the end (default 256)", "n");
  p.option("stop", "S", "stop before this text (repeatable)");
  p.option("choices", "A,B,C", "answer with exactly one of these (comma separated)");
  p.option("grammar", "GBNF", "hold the reply to this GBNF grammar (llama.cpp's notation)");
  p.option("grammar-file", "FILE", "hold the reply to the GBNF grammar in FILE");
  p.option("json-schema", "SCHEMA", "hold the reply to JSON of this JSON Schema", "j");
  p.option("json-schema-file", "FILE", "hold the reply to JSON of the JSON Schema in FILE");
  p.option("ctx", "N", "context size in tokens (default: the model's, at most 4096)", "c");
  p.flag("context-shift",
         "a reply that fills the context goes on: half of the tokens after --keep leave it");
  p.option("keep", "N", "tokens of the prompt (after BOS) a context shift keeps; -1 = all (0)");
  add_cache_type_option(p);
  p.threads_option();
  p.option("quant", "q8|q4", "quantize an HF checkpoint's matrices at load");
  p.option("model-draft", "MODEL",
           "speculative decoding: a small model of the same vocabulary drafts tokens the model "
           "checks in one batch (the same reply, faster when the draft is often right)",
           "md");
  p.option("draft-max", "N", "tokens a draft proposes at most (16)");
  p.option("draft-min", "N", "drafts shorter than N are not used (0)");
  p.option("draft-p-min", "P", "the draft stops before a token below probability P (0.8)");
}

void add_cache_type_option(ArgParser& p) {
  p.option("cache-type", "f16|f32",
           "KV cache elements (default f16 for quantized weights, f32 for float ones)");
}

std::optional<kernels::DType> cache_type_option(const ParsedArgs& args) {
  const auto type = args.get("cache-type");
  if (!type) return std::nullopt;
  if (*type != "f16" && *type != "f32") throw UsageError("--cache-type must be f16 or f32");
  return llm::kv_cache_type(*type);
}

llm::EngineOptions engine_options(const ParsedArgs& args) {
  llm::EngineOptions o;
  const long long threads = args.get_int("threads", 0);
  if (threads < 0 || threads > 4096) throw UsageError("--threads must be 0..4096");
  o.threads = static_cast<int>(threads);
  const long long ctx = args.get_int("ctx", 0);
  if (ctx < 0) throw UsageError("--ctx must not be negative");
  o.n_ctx = static_cast<size_t>(ctx);
  o.kv_type = cache_type_option(args);
  if (const auto quant = args.get("quant")) {
    if (*quant != "q8" && *quant != "q4" && *quant != "q8_0" && *quant != "q4_0")
      throw UsageError("--quant must be q8 or q4");
    o.quant = llm::parse_load_quant(*quant);
  }
  o.chat_template = args.get_or("template", "");
  o.draft_model = args.get_or("model-draft", "");
  if (o.draft_model.empty() &&
      (args.has("draft-max") || args.has("draft-min") || args.has("draft-p-min")))
    throw UsageError("--draft-max / --draft-min / --draft-p-min need --model-draft");
  const long long draft_max = args.get_int("draft-max", o.draft_max);
  const long long draft_min = args.get_int("draft-min", o.draft_min);
  if (draft_max < 1 || draft_max > 256) throw UsageError("--draft-max must be 1..256");
  if (draft_min < 0 || draft_min > draft_max)
    throw UsageError("--draft-min must be 0..--draft-max");
  o.draft_max = static_cast<int>(draft_max);
  o.draft_min = static_cast<int>(draft_min);
  o.draft_p_min = static_cast<float>(args.get_double("draft-p-min", o.draft_p_min));
  if (!(o.draft_p_min >= 0 && o.draft_p_min <= 1))
    throw UsageError("--draft-p-min must be in 0..1");
  return o;
}

namespace {

// An int option where any value is meaningful (top-k beyond the vocabulary is all of it,
// negative is off or unlimited): clamped to int rather than wrapped by a cast.
int int_option(const ParsedArgs& args, const std::string& name, int fallback) {
  return static_cast<int>(std::clamp<long long>(args.get_int(name, fallback),
                                                std::numeric_limits<int>::min(),
                                                std::numeric_limits<int>::max()));
}

// The GBNF grammar of --grammar, --grammar-file, --json-schema or --json-schema-file (at most
// one); "" for none. Its errors come before the model loads, naming where it came from.
std::string grammar_option(const ParsedArgs& args) {
  const char* const kSources[] = {"grammar", "grammar-file", "json-schema", "json-schema-file"};
  std::string source;
  for (const char* name : kSources) {
    if (!args.has(name)) continue;
    if (!source.empty()) throw UsageError("--" + source + " and --" + name + " cannot go together");
    source = name;
  }
  if (source.empty()) return "";
  const std::string value = *args.get(source);
  const bool file = source.ends_with("-file");
  const std::string text = file ? read_text_file(value) : value;
  const std::string where = file ? value : "--" + source;
  if (text.empty()) throw Error(where, "empty");
  try {
    if (source.starts_with("json-schema")) return llm::json_schema_to_gbnf(text);
    (void)llm::gbnf::Grammar::parse(text);
    return text;
  } catch (const Error& e) {
    throw Error(where, e.what());
  }
}

}  // namespace

llm::GenerateOptions generate_options(const ParsedArgs& args) {
  llm::GenerateOptions g;
  llm::SamplerOptions& s = g.sampling;
  s.temperature = static_cast<float>(args.get_double("temp", s.temperature));
  s.top_k = int_option(args, "top-k", s.top_k);
  s.top_p = static_cast<float>(args.get_double("top-p", s.top_p));
  s.min_p = static_cast<float>(args.get_double("min-p", s.min_p));
  s.repeat_penalty = static_cast<float>(args.get_double("repeat-penalty", s.repeat_penalty));
  s.repeat_last_n = int_option(args, "repeat-last-n", s.repeat_last_n);
  s.frequency_penalty =
      static_cast<float>(args.get_double("frequency-penalty", s.frequency_penalty));
  s.presence_penalty = static_cast<float>(args.get_double("presence-penalty", s.presence_penalty));
  s.typical_p = static_cast<float>(args.get_double("typical", s.typical_p));
  for (const std::string& bias : args.get_all("logit-bias")) {
    try {
      s.logit_bias.push_back(llm::parse_logit_bias(bias, "--logit-bias"));
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
  }
  if (!(s.typical_p > 0)) throw UsageError("--typical must be above 0");
  s.top_n_sigma = static_cast<float>(args.get_double("top-nsigma", s.top_n_sigma));
  s.xtc_probability = static_cast<float>(args.get_double("xtc-probability", s.xtc_probability));
  s.xtc_threshold = static_cast<float>(args.get_double("xtc-threshold", s.xtc_threshold));
  s.mirostat = int_option(args, "mirostat", s.mirostat);
  s.mirostat_eta = static_cast<float>(args.get_double("mirostat-lr", s.mirostat_eta));
  s.mirostat_tau = static_cast<float>(args.get_double("mirostat-ent", s.mirostat_tau));
  if (s.mirostat < 0 || s.mirostat > 2) throw UsageError("--mirostat must be 0, 1 or 2");
  if (s.xtc_probability < 0 || s.xtc_probability > 1)
    throw UsageError("--xtc-probability must be in 0..1");
  if (s.top_p <= 0) throw UsageError("--top-p must be above 0");
  if (s.min_p < 0 || s.min_p > 1) throw UsageError("--min-p must be in 0..1");
  if (s.repeat_penalty <= 0) throw UsageError("--repeat-penalty must be above 0");
  const long long seed = args.get_int("seed", -1);
  if (seed >= 0) {
    s.seed = static_cast<uint64_t>(seed);
  } else {  // llama.cpp's convention: -1 = random
    std::random_device device;
    s.seed = (static_cast<uint64_t>(device()) << 32) | device();
    spdlog::debug("seed {}", s.seed);
  }
  g.max_tokens = int_option(args, "max-tokens", 256);
  g.stop = args.get_all("stop");
  g.context_shift = args.flag("context-shift");
  g.ignore_eos = args.flag("ignore-eos");
  g.keep = int_option(args, "keep", 0);
  if (args.has("keep") && !g.context_shift) throw UsageError("--keep needs --context-shift");
  if (const auto choices = args.get("choices")) {
    std::stringstream list(*choices);
    for (std::string choice; std::getline(list, choice, ',');)
      if (!choice.empty()) g.choices.push_back(choice);
    if (g.choices.empty()) throw UsageError("--choices needs at least one non-empty choice");
    if (g.ignore_eos) throw UsageError("--ignore-eos cannot go with --choices");
  }
  g.grammar = grammar_option(args);
  if (!g.grammar.empty() && !g.choices.empty())
    throw UsageError("--grammar and --json-schema cannot go with --choices");
  return g;
}

std::unique_ptr<llm::Engine> load_engine(const ParsedArgs& args) {
  const auto model = args.get("model");
  if (!model) throw UsageError("-m MODEL is required");
  return llm::Engine::load(*model, engine_options(args));
}

namespace {

std::atomic<llm::Engine*> interrupt_target{nullptr};
std::atomic<int> interrupts{0};  // lock-free: safe in a signal handler
struct sigaction previous_action {};

void on_interrupt(int) {
  if (interrupts.fetch_add(1) > 0) _exit(130);
  if (llm::Engine* engine = interrupt_target.load()) engine->cancel();
}

}  // namespace

CancelOnInterrupt::CancelOnInterrupt(llm::Engine& engine) {
  interrupts = 0;
  interrupt_target.store(&engine);
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous_action);
}

CancelOnInterrupt::~CancelOnInterrupt() {
  sigaction(SIGINT, &previous_action, nullptr);
  interrupt_target.store(nullptr);
}

bool print_piece(std::string_view piece) {
  std::fwrite(piece.data(), 1, piece.size(), stdout);
  std::fflush(stdout);
  return true;
}

void print_prompt(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputs("\n", stdout);
  std::fflush(stdout);
}

void print_turn_ids(const llm::TurnStats& stats) {
  const auto print_ids = [](const char* label, const std::vector<int32_t>& ids) {
    std::string line = label;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i > 0) line += ' ';
      line += std::to_string(ids[i]);
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  };
  print_ids("prompt tokens: ", stats.prompt_ids);
  print_ids("generated tokens: ", stats.generated_ids);
}

void print_turn_stats(const llm::TurnStats& s) {
  if (!spdlog::default_logger()->should_log(spdlog::level::info)) return;
  std::string shifts;
  if (s.context_shifts > 0)
    shifts = " | context shifts: " + std::to_string(s.context_shifts) + " (" +
             std::to_string(s.shifted_tokens) + " tokens dropped)";
  std::fprintf(stderr,
               "prompt: %zu tokens (%zu cached) in %.1f ms, %.1f tok/s | generation: %zu tokens "
               "in %.1f ms, %.1f tok/s | stop: %s%s\n",
               s.prompt_tokens, s.cached_tokens, s.prompt_ms, s.prompt_tok_s(), s.generated_tokens,
               s.generation_ms, s.generation_tok_s(), llm::to_string(s.stop_reason),
               shifts.c_str());
  if (s.draft_tokens > 0)
    std::fprintf(stderr, "draft: %zu tokens proposed, %zu accepted (%.1f %%)\n", s.draft_tokens,
                 s.draft_accepted, 100.0 * static_cast<double>(s.draft_accepted) / s.draft_tokens);
}

}  // namespace oxi::cli
