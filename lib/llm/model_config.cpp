#include "lib/llm/model_config.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>

#include "lib/core/error.h"
#include "lib/formats/hf_dir.h"

namespace oxi::llm {
namespace {

bool is_known_arch(std::string_view arch) {
  return arch == "llama" || arch == "qwen2" || arch == "qwen3" || arch == "gemma3" ||
         arch == "phi3";
}

// Gemma 3's defaults, which llama.cpp also hard-codes: local layers use base 10000 and every
// 6th layer is global.
void apply_gemma3_defaults(ModelConfig& c) {
  if (c.rope_base_local == 0.0f) c.rope_base_local = 10000.0f;
  if (c.sliding_window_pattern == 0) c.sliding_window_pattern = 6;
  c.tied_embeddings = true;
}

[[noreturn]] void refuse_longrope(const std::string& context) {
  throw Error(context, "LongRoPE (phi3 'su'/'longrope' rope scaling) is not supported");
}

}  // namespace

int ModelConfig::window_of_layer(int layer) const {
  if (sliding_window <= 0 || layer < window_from_layer) return 0;
  if (sliding_window_pattern <= 0) return sliding_window;
  const bool global = (layer + 1) % sliding_window_pattern == 0;
  return global ? 0 : sliding_window;
}

float ModelConfig::rope_base_of_layer(int layer) const {
  if (rope_base_local > 0.0f && sliding_window_pattern > 0 && window_of_layer(layer) > 0)
    return rope_base_local;
  return rope_base;
}

bool ModelConfig::rope_scaled_layer(int layer) const {
  // Gemma 3 scales only its global layers (the local ones keep their short-range base).
  return sliding_window_pattern <= 0 || window_of_layer(layer) == 0;
}

void ModelConfig::validate(const std::string& context) const {
  if (n_vocab <= 0 || n_embd <= 0 || n_layer <= 0 || n_head <= 0 || n_head_kv <= 0 ||
      head_dim <= 0 || n_ff <= 0)
    throw Error(context, "model config has a zero size (vocab " + std::to_string(n_vocab) +
                             ", embd " + std::to_string(n_embd) + ", layers " +
                             std::to_string(n_layer) + ", heads " + std::to_string(n_head) + "/" +
                             std::to_string(n_head_kv) + ", head_dim " + std::to_string(head_dim) +
                             ", ff " + std::to_string(n_ff) + ")");
  // Products of sizes are ints (q_dim, a fused qkv's rows, a fused gate_up's rows).
  const int64_t q = int64_t{n_head} * head_dim, kv = int64_t{n_head_kv} * head_dim;
  if (q + 2 * kv > std::numeric_limits<int>::max() ||
      2 * int64_t{n_ff} > std::numeric_limits<int>::max())
    throw Error(context, "model config sizes are too large (heads " + std::to_string(n_head) +
                             " x head_dim " + std::to_string(head_dim) + ", ff " +
                             std::to_string(n_ff) + ")");
  if (n_head % n_head_kv != 0)
    throw Error(context, "n_head " + std::to_string(n_head) + " is not a multiple of n_head_kv " +
                             std::to_string(n_head_kv));
  if (rope_dims <= 0 || rope_dims > head_dim || rope_dims % 2 != 0)
    throw Error(context, "rope dims " + std::to_string(rope_dims) + " do not fit head_dim " +
                             std::to_string(head_dim));
  if (sliding_window < 0 || sliding_window_pattern < 0 || window_from_layer < 0)
    throw Error(context, "negative sliding window settings");
  // NaN, infinite or negative settings would not fail, only make every logit NaN.
  const std::pair<const char*, float> positive[] = {{"rope base", rope_base},
                                                    {"rope scaling factor", rope_scaling.factor}};
  const std::pair<const char*, float> non_negative[] = {
      {"rms epsilon", rms_eps},
      {"local rope base", rope_base_local},
      {"attention scale", attn_scale},
      {"final logit softcap", final_logit_softcap}};
  for (const auto& [what, v] : positive)
    if (!(v > 0.0f) || !std::isfinite(v))
      throw Error(context, std::string(what) + " " + std::to_string(v) + " is not positive");
  for (const auto& [what, v] : non_negative)
    if (!(v >= 0.0f) || !std::isfinite(v))
      throw Error(context,
                  std::string(what) + " " + std::to_string(v) + " is negative or not finite");
}

// ---- GGUF ----

namespace {

// A size or count from the metadata as an int: larger values would wrap in a cast (a u32 of
// 2^32 - 1 read as -1, a u64 of 2^32 + 5 as 5), so they are errors naming the key.
int gguf_int(const gguf::Reader& r, const std::string& key, std::optional<int> fallback = {}) {
  if (fallback && !r.has(key)) return *fallback;
  const uint64_t v = r.get_u64(key);
  if (v > static_cast<uint64_t>(std::numeric_limits<int>::max()))
    throw Error(r.path().string(), "metadata key '" + key + "': " + std::to_string(v) +
                                       " is too large for a model size");
  return static_cast<int>(v);
}

}  // namespace

ModelConfig config_from_gguf(const gguf::Reader& r) {
  const std::string context = r.path().string();
  ModelConfig c;
  c.arch = r.get_string("general.architecture");
  if (c.arch == "mistral") c.arch = "llama";  // same network; some converters say "mistral"
  if (!is_known_arch(c.arch))
    throw Error(context, "architecture '" + c.arch +
                             "' is not supported (llama, qwen2, qwen3, gemma3, phi3)");
  const std::string a = c.arch + ".";
  c.n_embd = gguf_int(r, a + "embedding_length");
  c.n_layer = gguf_int(r, a + "block_count");
  c.n_ff = gguf_int(r, a + "feed_forward_length");
  c.n_head = gguf_int(r, a + "attention.head_count");
  c.n_head_kv = gguf_int(r, a + "attention.head_count_kv", c.n_head);
  c.n_ctx_train = gguf_int(r, a + "context_length", 4096);
  c.rms_eps = r.get_f32_or(a + "attention.layer_norm_rms_epsilon", 1e-5f);
  c.head_dim = gguf_int(r, a + "attention.key_length", c.n_head > 0 ? c.n_embd / c.n_head : 0);
  c.rope_dims = gguf_int(r, a + "rope.dimension_count", c.head_dim);
  c.rope_base = r.get_f32_or(a + "rope.freq_base", 10000.0f);
  // convert_hf_to_gguf permutes llama's q/k rows for adjacent-pair rotation; others keep NeoX.
  c.rope_layout = c.arch == "llama" ? kernels::RopeLayout::adjacent : kernels::RopeLayout::neox;
  c.sliding_window = gguf_int(r, a + "attention.sliding_window", 0);
  c.pooling_type = gguf_int(r, a + "pooling_type", -1);
  c.final_logit_softcap = r.get_f32_or(a + "final_logit_softcapping", 0.0f);
  if (r.get_f32_or(a + "attn_logit_softcapping", 0.0f) != 0.0f)
    throw Error(context, "attention logit softcapping is not supported");

  const std::string scaling = r.get_string_or(a + "rope.scaling.type", "none");
  if (scaling == "linear") {
    c.rope_scaling.kind = kernels::RopeScaling::Kind::linear;
    c.rope_scaling.factor = r.get_f32_or(a + "rope.scaling.factor", 1.0f);
  } else if (scaling == "yarn" || scaling == "longrope") {
    throw Error(context, "rope scaling '" + scaling + "' is not supported");
  }
  if (c.arch == "phi3" && (r.find_tensor("rope_factors_long.weight") != nullptr ||
                           r.has(a + "rope.scaling.original_context_length")))
    refuse_longrope(context);

  if (c.arch == "gemma3") {
    c.sliding_window_pattern = gguf_int(r, a + "attention.sliding_window_pattern", 6);
    apply_gemma3_defaults(c);
    // llama.cpp's rule: query_pre_attn_scalar is head_dim except for the 27B (n_embd / n_head).
    const int default_scalar = c.n_layer == 62 && c.n_head > 0 ? c.n_embd / c.n_head : c.head_dim;
    const float scalar =
        r.get_f32_or(a + "attention.query_pre_attn_scalar", static_cast<float>(default_scalar));
    if (!(scalar > 0.0f) || !std::isfinite(scalar))
      throw Error(context, a + "attention.query_pre_attn_scalar " + std::to_string(scalar) +
                               " is not a positive number");
    c.attn_scale = 1.0f / std::sqrt(scalar);
  }
  const TensorView& embd = r.tensor("token_embd.weight");
  c.n_vocab = static_cast<int>(embd.shape.at(0));
  c.tied_embeddings = r.find_tensor("output.weight") == nullptr;
  c.validate(context);
  return c;
}

// ---- Hugging Face config.json ----

namespace {

// A value of the config, or `fallback` when it is absent or null. A value of another JSON type
// throws nlohmann's type_error, which config_from_hf reports as an oxi::Error.
template <class T>
T json_or(const nlohmann::json& j, const char* key, T fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->get<T>();
}

// A size or count of the config, or `fallback` when it is absent or null.
int json_int(const nlohmann::json& j, const char* key, int fallback, const std::string& context) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return hf::json_size(*it, std::string("config key '") + key + "'", context);
}

std::string hf_arch(const std::string& model_type, const std::string& context) {
  if (model_type == "llama" || model_type == "mistral") return "llama";
  if (model_type == "qwen2" || model_type == "qwen3" || model_type == "phi3") return model_type;
  if (model_type == "gemma3" || model_type == "gemma3_text") return "gemma3";
  throw Error(context, "model_type '" + model_type +
                           "' is not supported (llama, mistral, qwen2, qwen3, gemma3, phi3)");
}

void read_hf_rope_scaling(const nlohmann::json& rs, ModelConfig& c, const std::string& context) {
  if (!rs.is_object()) return;
  const std::string type =
      json_or<std::string>(rs, "rope_type", json_or<std::string>(rs, "type", ""));
  if (type == "su" || type == "longrope") refuse_longrope(context);
  if (type == "linear") {
    c.rope_scaling.kind = kernels::RopeScaling::Kind::linear;
    c.rope_scaling.factor = json_or<float>(rs, "factor", 1.0f);
  } else if (type == "llama3") {
    c.rope_scaling.kind = kernels::RopeScaling::Kind::llama3;
    c.rope_scaling.factor = json_or<float>(rs, "factor", 8.0f);
    c.rope_scaling.low_freq_factor = json_or<float>(rs, "low_freq_factor", 1.0f);
    c.rope_scaling.high_freq_factor = json_or<float>(rs, "high_freq_factor", 4.0f);
    c.rope_scaling.original_max_position =
        json_or<float>(rs, "original_max_position_embeddings", 8192.0f);
  } else if (!type.empty() && type != "default") {
    throw Error(context, "rope scaling '" + type + "' is not supported (linear, llama3)");
  }
}

// transformers 5 moves rope_theta and rope_scaling into one "rope_parameters" object, per layer
// type for models that mix them ({"full_attention": {...}, "sliding_attention": {...}}).
void read_hf_rope_parameters(const nlohmann::json& j, ModelConfig& c, const std::string& context) {
  const auto it = j.find("rope_parameters");
  if (it == j.end() || !it->is_object()) return;
  const nlohmann::json& rp = *it;
  if (rp.contains("full_attention") || rp.contains("sliding_attention")) {
    if (const auto full = rp.find("full_attention"); full != rp.end() && full->is_object()) {
      c.rope_base = json_or<float>(*full, "rope_theta", c.rope_base);
      read_hf_rope_scaling(*full, c, context);
    }
    if (const auto local = rp.find("sliding_attention"); local != rp.end() && local->is_object())
      c.rope_base_local = json_or<float>(*local, "rope_theta", c.rope_base_local);
    return;
  }
  c.rope_base = json_or<float>(rp, "rope_theta", c.rope_base);
  read_hf_rope_scaling(rp, c, context);
}

}  // namespace

// Gemma3TextConfig's defaults. transformers writes a composite config's text_config as its
// difference from them, so Gemma 3 4B / 12B / 27B (Gemma3ForConditionalGeneration) name only
// the sizes that differ (hidden_size, intermediate_size, num_hidden_layers, sliding_window,
// rope_scaling) and leave out the heads, head_dim, vocabulary, rope_theta, ...
// (sliding_window_pattern is left to apply_gemma3_defaults, after layer_types.)
nlohmann::json with_gemma3_text_defaults(const nlohmann::json& j) {
  nlohmann::json d = {{"vocab_size", 262208},      {"hidden_size", 2304},
                      {"intermediate_size", 9216}, {"num_hidden_layers", 26},
                      {"num_attention_heads", 8},  {"num_key_value_heads", 4},
                      {"head_dim", 256},           {"max_position_embeddings", 131072},
                      {"rms_norm_eps", 1e-6},      {"tie_word_embeddings", true},
                      {"rope_theta", 1000000.0},   {"query_pre_attn_scalar", 256},
                      {"sliding_window", 4096},    {"rope_local_base_freq", 10000.0}};
  d.update(j);
  return d;
}

namespace {

ModelConfig read_hf_config(const nlohmann::json& root, const std::string& context) {
  const nlohmann::json& text = root.contains("text_config") ? root["text_config"] : root;
  const std::string model_type =
      json_or<std::string>(text, "model_type", json_or<std::string>(root, "model_type", ""));
  ModelConfig c;
  c.arch = hf_arch(model_type, context);
  const nlohmann::json j = c.arch == "gemma3" ? with_gemma3_text_defaults(text) : text;
  c.n_vocab = json_int(j, "vocab_size", 0, context);
  c.n_embd = json_int(j, "hidden_size", 0, context);
  c.n_layer = json_int(j, "num_hidden_layers", 0, context);
  c.n_head = json_int(j, "num_attention_heads", 0, context);
  c.n_head_kv = json_int(j, "num_key_value_heads", c.n_head, context);
  c.head_dim = json_int(j, "head_dim", c.n_head > 0 ? c.n_embd / c.n_head : 0, context);
  c.n_ff = json_int(j, "intermediate_size", 0, context);
  c.n_ctx_train = json_int(j, "max_position_embeddings", 4096, context);
  c.rms_eps = json_or<float>(j, "rms_norm_eps", 1e-6f);
  c.rope_base = json_or<float>(j, "rope_theta", 10000.0f);
  const double rotary = json_or<double>(j, "partial_rotary_factor", 1.0);
  if (!(rotary > 0.0 && rotary <= 1.0))
    throw Error(context, "partial_rotary_factor " + std::to_string(rotary) + " is not in (0, 1]");
  c.rope_dims = static_cast<int>(std::lround(c.head_dim * rotary));
  c.rope_layout = kernels::RopeLayout::neox;  // rotate_half, on the unpermuted checkpoint
  c.tied_embeddings =
      json_or<bool>(j, "tie_word_embeddings", json_or<bool>(root, "tie_word_embeddings", false));
  read_hf_rope_scaling(j.value("rope_scaling", nlohmann::json()), c, context);
  read_hf_rope_parameters(j, c, context);
  // Who applies a config's sliding_window: Mistral and Phi-3 on every layer; Qwen2/3 only with
  // use_sliding_window, and then from layer max_window_layers on; Gemma 3 on its local layers
  // (below); Llama never (the key may be left over from a conversion).
  if (model_type == "mistral" || c.arch == "phi3" || c.arch == "gemma3")
    c.sliding_window = json_int(j, "sliding_window", 0, context);
  if ((c.arch == "qwen2" || c.arch == "qwen3") && json_or<bool>(j, "use_sliding_window", false)) {
    c.sliding_window = json_int(j, "sliding_window", 0, context);
    c.window_from_layer = json_int(j, "max_window_layers", 28, context);
  }
  if (json_or<double>(j, "attn_logit_softcapping", 0.0) != 0.0)
    throw Error(context, "attention logit softcapping is not supported");
  c.final_logit_softcap = json_or<float>(j, "final_logit_softcapping", 0.0f);

  if (c.arch == "gemma3") {
    c.rope_base_local = json_or<float>(j, "rope_local_base_freq",
                                       c.rope_base_local > 0 ? c.rope_base_local : 10000.0f);
    c.sliding_window_pattern = json_int(j, "sliding_window_pattern", 0, context);
    if (c.sliding_window_pattern == 0 && j.contains("layer_types")) {
      // layer_types: "sliding_attention" / "full_attention" per layer; the first full one
      // gives the period.
      const auto& types = j["layer_types"];
      for (size_t i = 0; i < types.size(); ++i)
        if (types[i] == "full_attention") {
          c.sliding_window_pattern = static_cast<int>(i) + 1;
          break;
        }
    }
    apply_gemma3_defaults(c);
    c.tied_embeddings = json_or<bool>(j, "tie_word_embeddings", true);
    c.attn_scale = 1.0f / std::sqrt(json_or<float>(j, "query_pre_attn_scalar",
                                                   static_cast<float>(c.head_dim)));
  }
  c.validate(context);
  return c;
}

}  // namespace

ModelConfig config_from_hf(const nlohmann::json& root, const std::string& context) {
  try {
    return read_hf_config(root, context);
  } catch (const nlohmann::json::exception& e) {
    throw Error(context, std::string("config.json: a value of an unexpected type: ") + e.what());
  }
}

}  // namespace oxi::llm
