// The C API (oxinfer_llm.h) over oxi::llm::Engine. Every entry point catches everything: no
// exception crosses the C boundary.
#include "lib/llm/oxinfer_llm.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "lib/core/error.h"
#include "lib/llm/embeddings.h"
#include "lib/llm/engine.h"
#include "lib/llm/gbnf.h"
#include "lib/llm/json_schema_grammar.h"
#include "lib/llm/kv_cache.h"

struct oxi_llm_engine {
  std::unique_ptr<oxi::llm::Engine> engine;
  oxi::llm::GenerateOptions generate;
  std::string last_error;
};

namespace {

void copy_message(const std::string& message, char* err, size_t err_len) {
  if (err == nullptr || err_len == 0) return;
  std::snprintf(err, err_len, "%s", message.c_str());
}

oxi::llm::GenerateOptions generate_options(const oxi_llm_params& p) {
  oxi::llm::GenerateOptions g;
  g.sampling.temperature = p.temperature;
  g.sampling.top_k = p.top_k;
  g.sampling.top_p = p.top_p;
  g.sampling.min_p = p.min_p;
  g.sampling.repeat_penalty = p.repeat_penalty;
  g.sampling.repeat_last_n = p.repeat_last_n;
  g.sampling.frequency_penalty = p.frequency_penalty;
  g.sampling.presence_penalty = p.presence_penalty;
  g.sampling.typical_p = p.typical_p;
  if (p.n_bias > 0 && (p.bias_tokens == nullptr || p.bias_values == nullptr))
    throw oxi::Error("oxi_llm_params", "n_bias > 0 needs bias_tokens and bias_values");
  for (size_t i = 0; i < p.n_bias; ++i)
    g.sampling.logit_bias.push_back({p.bias_tokens[i], p.bias_values[i]});
  g.sampling.top_n_sigma = p.top_n_sigma;
  g.sampling.xtc_probability = p.xtc_probability;
  g.sampling.xtc_threshold = p.xtc_threshold;
  g.sampling.mirostat = p.mirostat;
  g.sampling.mirostat_tau = p.mirostat_tau;
  g.sampling.mirostat_eta = p.mirostat_eta;
  g.sampling.seed = p.seed;
  g.max_tokens = p.max_tokens;
  g.context_shift = p.context_shift != 0;
  g.keep = p.keep;
  g.ignore_eos = p.ignore_eos != 0;
  // Checked here, so that oxi_llm_set_params refuses what does not convert.
  if (p.grammar != nullptr && *p.grammar != '\0') {
    g.grammar = p.grammar;
    (void)oxi::llm::gbnf::Grammar::parse(g.grammar);
  }
  if (p.json_schema != nullptr && *p.json_schema != '\0') {
    if (!g.grammar.empty())
      throw oxi::Error("oxi_llm_params", "grammar and json_schema cannot both be set");
    g.grammar = oxi::llm::json_schema_to_gbnf(p.json_schema);  // parses what it makes
  }
  for (size_t i = 0; i < p.n_stop && p.stop != nullptr; ++i)
    if (p.stop[i] != nullptr) g.stop.emplace_back(p.stop[i]);
  return g;
}

int stop_code(oxi::llm::StopReason r) {
  using oxi::llm::StopReason;
  switch (r) {
    case StopReason::eos:
      return OXI_LLM_STOP_EOS;
    case StopReason::stop_string:
      return OXI_LLM_STOP_STRING;
    case StopReason::max_tokens:
      return OXI_LLM_STOP_MAX_TOKENS;
    case StopReason::context_full:
      return OXI_LLM_STOP_CONTEXT_FULL;
    case StopReason::cancelled:
      return OXI_LLM_STOP_CANCELLED;
    case StopReason::choice:
      return OXI_LLM_STOP_CHOICE;
  }
  return OXI_LLM_STOP_EOS;
}

// Runs fn, turning exceptions into OXI_LLM_ERROR and the engine's last_error.
template <class Fn>
int guarded(oxi_llm_engine* engine, Fn&& fn) {
  if (engine == nullptr) return OXI_LLM_INVALID_ARGUMENT;
  engine->last_error.clear();
  try {
    fn();
    return OXI_LLM_OK;
  } catch (const std::exception& e) {
    engine->last_error = e.what();
  } catch (...) {
    engine->last_error = "unknown error";
  }
  return OXI_LLM_ERROR;
}

}  // namespace

extern "C" {

oxi_llm_params oxi_llm_default_params(void) {
  const oxi::llm::GenerateOptions g;
  oxi_llm_params p{};
  p.threads = 0;
  p.n_ctx = 0;
  p.quant = nullptr;
  p.chat_template = nullptr;
  p.cache_type = nullptr;
  const oxi::llm::EngineOptions e;
  p.draft_model = nullptr;
  p.draft_max = e.draft_max;
  p.draft_min = e.draft_min;
  p.draft_p_min = e.draft_p_min;
  p.temperature = g.sampling.temperature;
  p.top_k = g.sampling.top_k;
  p.top_p = g.sampling.top_p;
  p.min_p = g.sampling.min_p;
  p.repeat_penalty = g.sampling.repeat_penalty;
  p.repeat_last_n = g.sampling.repeat_last_n;
  p.frequency_penalty = g.sampling.frequency_penalty;
  p.presence_penalty = g.sampling.presence_penalty;
  p.typical_p = g.sampling.typical_p;
  p.bias_tokens = nullptr;
  p.bias_values = nullptr;
  p.n_bias = 0;
  p.top_n_sigma = g.sampling.top_n_sigma;
  p.xtc_probability = g.sampling.xtc_probability;
  p.xtc_threshold = g.sampling.xtc_threshold;
  p.mirostat = g.sampling.mirostat;
  p.mirostat_tau = g.sampling.mirostat_tau;
  p.mirostat_eta = g.sampling.mirostat_eta;
  p.seed = g.sampling.seed;
  p.max_tokens = g.max_tokens;
  p.stop = nullptr;
  p.n_stop = 0;
  p.context_shift = g.context_shift ? 1 : 0;
  p.keep = g.keep;
  p.ignore_eos = g.ignore_eos ? 1 : 0;
  p.grammar = nullptr;
  p.json_schema = nullptr;
  return p;
}

oxi_llm_engine* oxi_llm_load(const char* spec, const oxi_llm_params* params, char* err,
                             size_t err_len) {
  copy_message("", err, err_len);
  if (spec == nullptr) {
    copy_message("oxi_llm_load: spec is NULL", err, err_len);
    return nullptr;
  }
  const oxi_llm_params p = params != nullptr ? *params : oxi_llm_default_params();
  try {
    oxi::llm::EngineOptions options;
    options.threads = p.threads;
    options.n_ctx = p.n_ctx;
    if (p.quant != nullptr && *p.quant != '\0') options.quant = oxi::llm::parse_load_quant(p.quant);
    if (p.chat_template != nullptr) options.chat_template = p.chat_template;
    if (p.cache_type != nullptr) options.kv_type = oxi::llm::kv_cache_type(p.cache_type);
    if (p.draft_model != nullptr) options.draft_model = p.draft_model;
    options.draft_max = p.draft_max;
    options.draft_min = p.draft_min;
    options.draft_p_min = p.draft_p_min;
    auto handle = std::make_unique<oxi_llm_engine>();
    handle->engine = oxi::llm::Engine::load(spec, options);
    handle->generate = generate_options(p);
    return handle.release();
  } catch (const std::exception& e) {
    copy_message(e.what(), err, err_len);
  } catch (...) {
    copy_message("oxi_llm_load: unknown error", err, err_len);
  }
  return nullptr;
}

int oxi_llm_send(oxi_llm_engine* engine, const char* role, const char* text,
                 oxi_llm_piece_fn on_piece, void* user_data, oxi_llm_stats* stats) {
  if (engine == nullptr || text == nullptr) return OXI_LLM_INVALID_ARGUMENT;
  return guarded(engine, [&] {
    oxi::llm::PieceCallback callback;
    if (on_piece != nullptr) {
      callback = [on_piece, user_data](std::string_view piece) {
        return on_piece(piece.data(), piece.size(), user_data) != 0;
      };
    }
    const oxi::llm::TurnStats s =
        role == nullptr ? engine->engine->send_raw(text, engine->generate, callback)
                        : engine->engine->send({{role, text}}, engine->generate, callback);
    if (stats != nullptr) {
      stats->prompt_tokens = s.prompt_tokens;
      stats->cached_tokens = s.cached_tokens;
      stats->generated_tokens = s.generated_tokens;
      stats->prompt_ms = s.prompt_ms;
      stats->prompt_tok_s = s.prompt_tok_s();
      stats->generation_ms = s.generation_ms;
      stats->generation_tok_s = s.generation_tok_s();
      stats->stop_reason = stop_code(s.stop_reason);
      stats->dropped_messages = s.dropped_messages;
      stats->context_shifts = s.context_shifts;
      stats->draft_tokens = s.draft_tokens;
      stats->draft_accepted = s.draft_accepted;
    }
  });
}

int oxi_llm_embed(oxi_llm_engine* engine, const char* text, const char* pooling, int norm,
                  float* out, size_t capacity, size_t* dim) {
  if (engine == nullptr || text == nullptr || dim == nullptr || norm < -1) {
    return OXI_LLM_INVALID_ARGUMENT;
  }
  std::vector<float> embedding;
  const int code = guarded(engine, [&] {
    oxi::llm::Engine& e = *engine->engine;
    oxi::llm::Pooling how = oxi::llm::default_pooling(e.model());
    if (pooling != nullptr) {
      const auto parsed = oxi::llm::parse_pooling(pooling);
      if (!parsed)
        throw oxi::Error("embeddings",
                         std::string("unknown pooling '") + pooling + "' (mean, cls or last)");
      how = *parsed;
    }
    embedding = oxi::llm::embed_all(e.model_ptr(), e.backend(),
                                    {oxi::llm::embedding_tokens(e.model(), text)}, how, norm)
                    .front();
  });
  if (code != OXI_LLM_OK) return code;
  *dim = embedding.size();
  if (out == nullptr || capacity < embedding.size()) return OXI_LLM_INVALID_ARGUMENT;
  std::copy(embedding.begin(), embedding.end(), out);
  return OXI_LLM_OK;
}

int oxi_llm_set_params(oxi_llm_engine* engine, const oxi_llm_params* params) {
  if (params == nullptr) return OXI_LLM_INVALID_ARGUMENT;
  return guarded(engine, [&] { engine->generate = generate_options(*params); });
}

void oxi_llm_cancel(oxi_llm_engine* engine) {
  if (engine != nullptr) engine->engine->cancel();
}

void oxi_llm_reset(oxi_llm_engine* engine) {
  guarded(engine, [&] { engine->engine->reset(); });
}

void oxi_llm_new_conversation(oxi_llm_engine* engine) {
  guarded(engine, [&] { engine->engine->new_conversation(); });
}

int oxi_llm_save_state(oxi_llm_engine* engine, const char* path) {
  if (path == nullptr) return OXI_LLM_INVALID_ARGUMENT;
  return guarded(engine, [&] { engine->engine->save_state(path); });
}

int oxi_llm_load_state(oxi_llm_engine* engine, const char* path) {
  if (path == nullptr) return OXI_LLM_INVALID_ARGUMENT;
  return guarded(engine, [&] { engine->engine->load_state(path); });
}

const char* oxi_llm_last_error(const oxi_llm_engine* engine) {
  return engine != nullptr ? engine->last_error.c_str() : "engine is NULL";
}

void oxi_llm_free(oxi_llm_engine* engine) {
  delete engine;
}

}  // extern "C"
