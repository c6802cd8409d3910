#include "tests/llm/tiny_model.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "kernels/formats/quant.h"
#include "lib/formats/gguf.h"
#include "lib/formats/safetensors.h"
#include "lib/formats/torch_zip.h"
#include "tests/common/test_data.h"

namespace oxi::llm::test {
namespace {

using kernels::DType;

TinyTensor encode(std::vector<int64_t> shape, const std::vector<float>& values, DType dtype) {
  const size_t cols = static_cast<size_t>(shape.back());
  const size_t rows = values.size() / cols;
  const size_t row_bytes = kernels::row_bytes(dtype, cols);
  if (row_bytes == 0) throw std::runtime_error("tiny model: width not a multiple of the block");
  TinyTensor t{std::move(shape), dtype, std::vector<std::byte>(rows * row_bytes),
               std::vector<float>(values.size())};
  for (size_t r = 0; r < rows; ++r) {
    kernels::quantize_row(dtype, values.data() + r * cols, t.bytes.data() + r * row_bytes, cols);
    kernels::dequantize_row(dtype, t.bytes.data() + r * row_bytes, t.values.data() + r * cols,
                            cols);
  }
  return t;
}

std::vector<std::byte> f32_bytes(const std::vector<float>& v) {
  std::vector<std::byte> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// convert_hf_to_gguf's LlamaModel.permute: within each head, HF's half-split row order
// (i, i + d/2) becomes adjacent pairs (2i, 2i + 1).
std::vector<std::byte> permute_rows(const TinyTensor& t, int n_heads) {
  const size_t rows = static_cast<size_t>(t.shape[0]);
  const size_t row_bytes = t.bytes.size() / rows, head_dim = rows / n_heads, half = head_dim / 2;
  std::vector<std::byte> out(t.bytes.size());
  for (size_t h = 0; h < static_cast<size_t>(n_heads); ++h)
    for (size_t j = 0; j < 2; ++j)
      for (size_t i = 0; i < half; ++i) {
        const size_t src = h * head_dim + j * half + i, dst = h * head_dim + 2 * i + j;
        std::memcpy(out.data() + dst * row_bytes, t.bytes.data() + src * row_bytes, row_bytes);
      }
  return out;
}

std::string gguf_name(const std::string& hf, bool gemma) {
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  const std::string prefix = "model.layers.";
  const size_t dot = hf.find('.', prefix.size());
  const std::string layer = hf.substr(prefix.size(), dot - prefix.size());
  const std::string rest = hf.substr(dot + 1);
  static const std::map<std::string, std::string> names = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.qkv_proj.weight", "attn_qkv.weight"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
      {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.gate_up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"}};
  std::string g;
  if (rest == "post_attention_layernorm.weight")
    g = gemma ? "post_attention_norm.weight" : "ffn_norm.weight";
  else
    g = names.at(rest);
  return "blk." + layer + "." + g;
}

std::vector<std::string> vocab_pieces(int n_vocab) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  for (int b = 0; b < 256; ++b) {
    char text[8];
    std::snprintf(text, sizeof text, "<0x%02X>", b);
    tokens.emplace_back(text);
  }
  while (static_cast<int>(tokens.size()) < n_vocab)
    tokens.push_back("\xE2\x96\x81w" + std::to_string(tokens.size()));
  return tokens;
}

void write_tokenizer_gguf(gguf::Writer& w, int n_vocab) {
  const std::vector<std::string> tokens = vocab_pieces(n_vocab);
  std::vector<float> scores(tokens.size());
  std::vector<int32_t> types(tokens.size(), 1);
  types[0] = 2;
  types[1] = types[2] = 3;
  for (size_t i = 3; i < 259; ++i) types[i] = 6;
  for (size_t i = 259; i < tokens.size(); ++i) scores[i] = -static_cast<float>(i);
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_f32_array("tokenizer.ggml.scores", scores);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  w.set_string("tokenizer.chat_template", kChatTemplate);
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

void write_tokenizer_hf(const std::filesystem::path& dir, int n_vocab) {
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  vocab["<unk>"] = 0;
  vocab["<s>"] = 1;
  vocab["</s>"] = 2;
  for (int i = 3; i < n_vocab; ++i) vocab["t" + std::to_string(i)] = i;
  nlohmann::ordered_json tok = {
      {"added_tokens",
       {{{"id", 0}, {"content", "<unk>"}, {"special", true}},
        {{"id", 1}, {"content", "<s>"}, {"special", true}},
        {{"id", 2}, {"content", "</s>"}, {"special", true}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"post_processor", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
  write_text(dir / "tokenizer.json", tok.dump());
  const nlohmann::json config = {{"chat_template", kChatTemplate},
                                 {"bos_token", "<s>"},
                                 {"eos_token", "</s>"},
                                 {"add_bos_token", true}};
  write_text(dir / "tokenizer_config.json", config.dump());
  write_text(dir / "generation_config.json", R"({"eos_token_id": [2, 5]})");
}

nlohmann::json hf_config(const TinySpec& s) {
  static const std::map<std::string, std::string> model_type = {{"llama", "llama"},
                                                                {"qwen2", "qwen2"},
                                                                {"qwen3", "qwen3"},
                                                                {"gemma3", "gemma3_text"},
                                                                {"phi3", "phi3"}};
  nlohmann::json c = {{"model_type", model_type.at(s.arch)},
                      {"vocab_size", s.n_vocab},
                      {"hidden_size", s.n_embd},
                      {"num_hidden_layers", s.n_layer},
                      {"num_attention_heads", s.n_head},
                      {"num_key_value_heads", s.n_head_kv},
                      {"head_dim", s.head_dim},
                      {"intermediate_size", s.n_ff},
                      {"max_position_embeddings", s.n_ctx_train},
                      {"rms_norm_eps", s.rms_eps},
                      {"rope_theta", s.rope_base},
                      {"tie_word_embeddings", s.tied}};
  if (s.sliding_window > 0) c["sliding_window"] = s.sliding_window;
  if (s.rope_linear_factor > 0)
    c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", s.rope_linear_factor}};
  if (s.llama3_factor > 0)
    c["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", s.llama3_factor},
                         {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", s.llama3_original_context}};
  if (s.gemma) {
    c["sliding_window_pattern"] = s.sliding_window_pattern;
    c["rope_local_base_freq"] = s.rope_base_local;
    c["query_pre_attn_scalar"] = s.query_pre_attn_scalar;
  }
  return c;
}

// convert_hf_to_gguf's LlamaModel.generate_extra_tensors: one divisor per frequency; the
// engine divides base^(-2i/d) by it.
std::vector<float> llama3_rope_factors(const TinySpec& s) {
  const double low_wavelen = s.llama3_original_context / 1.0;
  const double high_wavelen = s.llama3_original_context / 4.0;
  std::vector<float> factors;
  for (int i = 0; i < s.head_dim / 2; ++i) {
    const double freq = std::pow(s.rope_base, -2.0 * i / s.head_dim);
    const double wavelen = 2 * M_PI / freq;
    double f = 1.0;
    if (wavelen > low_wavelen) {
      f = s.llama3_factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth = (s.llama3_original_context / wavelen - 1.0) / (4.0 - 1.0);
      f = 1.0 / ((1 - smooth) / s.llama3_factor + smooth);
    }
    factors.push_back(static_cast<float>(f));
  }
  return factors;
}

}  // namespace

TinySpec tiny_spec(const std::string& arch, bool k_quants) {
  TinySpec s;
  s.arch = arch;
  if (k_quants) {
    s.n_embd = 256;
    s.head_dim = 64;
    s.n_ff = 512;
  }
  if (arch == "qwen2") {
    s.qkv_bias = true;
    s.tied = true;
    s.rope_base = 1e6f;
    s.rms_eps = 1e-6f;
  } else if (arch == "qwen3") {
    s.qk_norm = true;
    s.rms_eps = 1e-6f;
  } else if (arch == "gemma3") {
    s.gemma = s.qk_norm = s.tied = true;
    s.rope_base = 1e6f;
    s.rope_base_local = 10000.0f;
    s.rope_linear_factor = 2.0f;
    s.sliding_window = 5;
    s.sliding_window_pattern = 2;  // layer 0 local, layer 1 global
    s.query_pre_attn_scalar = 24.0f;
    s.rms_eps = 1e-6f;
  } else if (arch == "phi3") {
    s.fused = true;
    s.sliding_window = 7;
  }
  return s;
}

const std::vector<float>& TinyModel::values(const std::string& name) const {
  const auto it = tensors.find(name);
  if (it == tensors.end()) throw std::runtime_error("tiny model has no tensor " + name);
  return it->second.values;
}

TinyModel make_tiny_model(const TinySpec& s, DType matrix_dtype, DType vector_dtype,
                          uint32_t seed) {
  TinyModel m{s, {}};
  auto matrix = [&](const std::string& name, int rows, int cols, float stddev) {
    const auto v = oxi::test::random_normal(static_cast<size_t>(rows) * cols, seed++, stddev);
    m.tensors[name] = encode({rows, cols}, v, matrix_dtype);
  };
  auto vector = [&](const std::string& name, int n, float center, float stddev) {
    auto v = oxi::test::random_normal(n, seed++, stddev);
    for (float& x : v) x += center;
    m.tensors[name] = encode({n}, v, vector_dtype);
  };
  const float norm_center = s.gemma ? 0.0f : 1.0f;  // Gemma stores w of (1 + w)
  const int q_dim = s.n_head * s.head_dim, kv_dim = s.n_head_kv * s.head_dim;
  matrix("model.embed_tokens.weight", s.n_vocab, s.n_embd, 1.0f);
  vector("model.norm.weight", s.n_embd, norm_center, 0.2f);
  if (!s.tied) matrix("lm_head.weight", s.n_vocab, s.n_embd, 1.0f / std::sqrt(s.n_embd));
  for (int il = 0; il < s.n_layer; ++il) {
    const std::string p = "model.layers." + std::to_string(il) + ".";
    const float in_std = 1.0f / std::sqrt(static_cast<float>(s.n_embd));
    vector(p + "input_layernorm.weight", s.n_embd, norm_center, 0.2f);
    if (s.fused) {
      matrix(p + "self_attn.qkv_proj.weight", q_dim + 2 * kv_dim, s.n_embd, in_std);
    } else {
      matrix(p + "self_attn.q_proj.weight", q_dim, s.n_embd, in_std);
      matrix(p + "self_attn.k_proj.weight", kv_dim, s.n_embd, in_std);
      matrix(p + "self_attn.v_proj.weight", kv_dim, s.n_embd, in_std);
    }
    if (s.qkv_bias) {
      vector(p + "self_attn.q_proj.bias", q_dim, 0.0f, 0.3f);
      vector(p + "self_attn.k_proj.bias", kv_dim, 0.0f, 0.3f);
      vector(p + "self_attn.v_proj.bias", kv_dim, 0.0f, 0.3f);
    }
    if (s.qk_norm) {
      vector(p + "self_attn.q_norm.weight", s.head_dim, norm_center, 0.2f);
      vector(p + "self_attn.k_norm.weight", s.head_dim, norm_center, 0.2f);
    }
    matrix(p + "self_attn.o_proj.weight", s.n_embd, q_dim, 1.0f / std::sqrt(q_dim));
    vector(p + "post_attention_layernorm.weight", s.n_embd, norm_center, 0.2f);
    if (s.gemma) {
      vector(p + "pre_feedforward_layernorm.weight", s.n_embd, norm_center, 0.2f);
      vector(p + "post_feedforward_layernorm.weight", s.n_embd, norm_center, 0.2f);
    }
    if (s.fused) {
      matrix(p + "mlp.gate_up_proj.weight", 2 * s.n_ff, s.n_embd, in_std);
    } else {
      matrix(p + "mlp.gate_proj.weight", s.n_ff, s.n_embd, in_std);
      matrix(p + "mlp.up_proj.weight", s.n_ff, s.n_embd, in_std);
    }
    matrix(p + "mlp.down_proj.weight", s.n_embd, s.n_ff, 1.0f / std::sqrt(s.n_ff));
  }
  return m;
}

TinyModel quantized_copy(const TinyModel& model, DType dtype) {
  TinyModel q = model;
  for (auto& [name, t] : q.tensors)
    if (t.shape.size() == 2) t = encode(t.shape, model.values(name), dtype);
  return q;
}

void write_gguf(const TinyModel& m, const std::filesystem::path& file) {
  const TinySpec& s = m.spec;
  gguf::Writer w;
  const std::string a = s.arch + ".";
  w.set_string("general.architecture", s.arch);
  w.set_u32(a + "context_length", s.n_ctx_train);
  w.set_u32(a + "embedding_length", s.n_embd);
  w.set_u32(a + "block_count", s.n_layer);
  w.set_u32(a + "feed_forward_length", s.n_ff);
  w.set_u32(a + "attention.head_count", s.n_head);
  w.set_u32(a + "attention.head_count_kv", s.n_head_kv);
  w.set_u32(a + "attention.key_length", s.head_dim);
  w.set_u32(a + "attention.value_length", s.head_dim);
  w.set_u32(a + "rope.dimension_count", s.head_dim);
  w.set_f32(a + "attention.layer_norm_rms_epsilon", s.rms_eps);
  w.set_f32(a + "rope.freq_base", s.rope_base);
  if (s.sliding_window > 0) w.set_u32(a + "attention.sliding_window", s.sliding_window);
  if (s.sliding_window_pattern > 0)
    w.set_u32(a + "attention.sliding_window_pattern", s.sliding_window_pattern);
  if (s.query_pre_attn_scalar > 0)
    w.set_f32(a + "attention.query_pre_attn_scalar", s.query_pre_attn_scalar);
  if (s.rope_linear_factor > 0) {
    w.set_string(a + "rope.scaling.type", "linear");
    w.set_f32(a + "rope.scaling.factor", s.rope_linear_factor);
  }
  write_tokenizer_gguf(w, s.n_vocab);
  if (s.llama3_factor > 0)
    w.add_tensor("rope_freqs.weight", DType::F32, {s.head_dim / 2},
                 f32_bytes(llama3_rope_factors(s)));
  for (const auto& [name, t] : m.tensors) {
    const std::string g = gguf_name(name, s.gemma);
    if (t.shape.size() == 1) {  // norms and biases: f32, Gemma's norms as (1 + w)
      std::vector<float> v = t.values;
      if (s.gemma && name.ends_with("norm.weight"))
        for (float& x : v) x += 1.0f;
      w.add_tensor(g, DType::F32, t.shape, f32_bytes(v));
    } else if (s.arch == "llama" && name.ends_with("q_proj.weight")) {
      w.add_tensor(g, t.dtype, t.shape, permute_rows(t, s.n_head));
    } else if (s.arch == "llama" && name.ends_with("k_proj.weight")) {
      w.add_tensor(g, t.dtype, t.shape, permute_rows(t, s.n_head_kv));
    } else {
      w.add_tensor(g, t.dtype, t.shape, t.bytes);
    }
  }
  w.write(file);
}

void write_hf_dir(const TinyModel& m, const std::filesystem::path& dir, const std::string& format) {
  std::filesystem::create_directories(dir);
  write_text(dir / "config.json", hf_config(m.spec).dump(2));
  write_tokenizer_hf(dir, m.spec.n_vocab);
  if (format == "torch") {
    torch::Writer w;
    for (const auto& [name, t] : m.tensors) w.add_tensor(name, t.dtype, t.shape, t.bytes);
    w.write(dir / "pytorch_model.bin");
  } else {
    safetensors::Writer w;
    for (const auto& [name, t] : m.tensors) w.add_tensor(name, t.dtype, t.shape, t.bytes);
    w.write(dir / "model.safetensors");
  }
}

std::vector<int32_t> test_prompt(size_t n, int n_vocab, uint32_t seed) {
  std::vector<int32_t> ids;
  uint32_t state = seed;
  for (size_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    ids.push_back(3 + static_cast<int32_t>((state >> 8) % (n_vocab - 3)));
  }
  return ids;
}

}  // namespace oxi::llm::test
