#include "lib/llm/weights.h"

#include <functional>
#include <string>

#include "kernels/formats/quant.h"
#include "lib/core/error.h"

namespace oxi::llm {
namespace {

// The checkpoint names of one layer's tensors (empty: the format has no such tensor).
struct LayerNames {
  std::string attn_norm, wq, wk, wv, wqkv, bq, bk, bv, q_norm, k_norm, wo, post_attn_norm;
  std::string ffn_norm, w_gate, w_up, w_gate_up, w_down, post_ffn_norm;
};

// llama.cpp's names (llama-arch.cpp): blk.N.attn_q.weight ...
LayerNames gguf_layer_names(int layer) {
  const std::string p = "blk." + std::to_string(layer) + ".";
  return {p + "attn_norm.weight",   p + "attn_q.weight",
          p + "attn_k.weight",      p + "attn_v.weight",
          p + "attn_qkv.weight",    p + "attn_q.bias",
          p + "attn_k.bias",        p + "attn_v.bias",
          p + "attn_q_norm.weight", p + "attn_k_norm.weight",
          p + "attn_output.weight", p + "post_attention_norm.weight",
          p + "ffn_norm.weight",    p + "ffn_gate.weight",
          p + "ffn_up.weight",      "",
          p + "ffn_down.weight",    p + "post_ffw_norm.weight"};
}

// transformers' names: model.layers.N.self_attn.q_proj.weight ... Gemma 3 has four norms per
// layer and calls the pre-MLP one pre_feedforward_layernorm; elsewhere post_attention_layernorm
// is the pre-MLP norm.
LayerNames hf_layer_names(const std::string& prefix, int layer, bool gemma) {
  const std::string p = prefix + "layers." + std::to_string(layer) + ".";
  const std::string a = p + "self_attn.", m = p + "mlp.";
  LayerNames n{p + "input_layernorm.weight",
               a + "q_proj.weight",
               a + "k_proj.weight",
               a + "v_proj.weight",
               a + "qkv_proj.weight",
               a + "q_proj.bias",
               a + "k_proj.bias",
               a + "v_proj.bias",
               a + "q_norm.weight",
               a + "k_norm.weight",
               a + "o_proj.weight",
               "",
               p + "post_attention_layernorm.weight",
               m + "gate_proj.weight",
               m + "up_proj.weight",
               m + "gate_up_proj.weight",
               m + "down_proj.weight",
               ""};
  if (gemma) {
    n.post_attn_norm = p + "post_attention_layernorm.weight";
    n.ffn_norm = p + "pre_feedforward_layernorm.weight";
    n.post_ffn_norm = p + "post_feedforward_layernorm.weight";
  }
  return n;
}

// Turns tensors of one file into the views ModelWeights holds, converting where needed.
class WeightBuilder {
 public:
  using Finder = std::function<std::optional<TensorView>(const std::string&)>;

  WeightBuilder(Finder find, ModelWeights& out, std::string context)
      : find_(std::move(find)), out_(out), context_(std::move(context)) {}

  std::optional<kernels::DType> quantize_to;  // HF --quant: float matrices become this
  float norm_shift = 0.0f;                    // added to every *norm.weight (Gemma HF: 1 + w)

  bool has(const std::string& name) const { return !name.empty() && find_(name).has_value(); }

  backends::WeightMatrix matrix(const std::string& name, size_t rows, size_t cols) {
    const TensorView t = require(name);
    if (t.shape.size() != 2 || static_cast<size_t>(t.shape[0]) != rows ||
        static_cast<size_t>(t.shape[1]) != cols)
      throw Error(context_, "tensor '" + name + "' has shape " + shape_text(t.shape) +
                                ", expected [" + std::to_string(rows) + ", " +
                                std::to_string(cols) + "]");
    backends::WeightMatrix w{t.dtype, t.data.data(), rows, cols, kernels::row_bytes(t.dtype, cols)};
    if (quantize_to && kernels::row_bytes(*quantize_to, cols) != 0 && !is_quantized(t.dtype))
      return convert(w, *quantize_to);
    if (!kernels::weight_supported(t.dtype))
      throw Error(context_, "tensor '" + name + "' has dtype " +
                                std::string(kernels::name(t.dtype)) +
                                ", which no matmul kernel takes");
    return w;
  }

  std::span<const float> vector(const std::string& name, size_t n) {
    const TensorView t = require(name);
    if (static_cast<size_t>(t.numel()) != n)
      throw Error(context_, "tensor '" + name + "' has " + std::to_string(t.numel()) +
                                " elements, expected " + std::to_string(n));
    std::vector<float> v(n);
    kernels::dequantize_row(t.dtype, t.data.data(), v.data(), n);
    if (name.ends_with("norm.weight"))
      for (float& x : v) x += norm_shift;
    return out_.float_copies.emplace_back(std::move(v));
  }

  std::span<const float> optional_vector(const std::string& name, size_t n) {
    return has(name) ? vector(name, n) : std::span<const float>{};
  }

 private:
  static bool is_quantized(kernels::DType t) { return kernels::info(t).quantized; }

  static std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
  }

  TensorView require(const std::string& name) const {
    std::optional<TensorView> t = find_(name);
    if (!t) throw Error(context_, "missing tensor '" + name + "'");
    if (!kernels::row_decoder(t->dtype))
      throw Error(context_, "tensor '" + name + "' has unsupported dtype " +
                                std::string(kernels::name(t->dtype)));
    return *t;
  }

  // A copy of `w` in `dtype`, row by row through f32.
  backends::WeightMatrix convert(const backends::WeightMatrix& w, kernels::DType dtype) {
    const size_t row_bytes = kernels::row_bytes(dtype, w.cols);
    std::vector<std::byte>& bytes = out_.byte_copies.emplace_back(w.rows * row_bytes);
    std::vector<float> row(w.cols);
    for (size_t r = 0; r < w.rows; ++r) {
      dequantize_matrix_row(w, r, row);
      kernels::quantize_row(dtype, row.data(), bytes.data() + r * row_bytes, w.cols);
    }
    return {dtype, bytes.data(), w.rows, w.cols, row_bytes};
  }

  Finder find_;
  ModelWeights& out_;
  std::string context_;
};

// Rows [first, first + count) of w, as a view of the same bytes (fused qkv / gate_up).
backends::WeightMatrix row_slice(const backends::WeightMatrix& w, size_t first, size_t count) {
  backends::WeightMatrix s = w;
  s.data = static_cast<const std::byte*>(w.data) + first * w.row_bytes;
  s.rows = count;
  return s;
}

LayerWeights load_layer(WeightBuilder& b, const LayerNames& n, const ModelConfig& c) {
  const size_t embd = c.n_embd, q_dim = c.q_dim(), kv_dim = c.kv_dim(), ff = c.n_ff;
  LayerWeights l;
  l.attn_norm = b.vector(n.attn_norm, embd);
  if (!n.wq.empty() && b.has(n.wq)) {
    l.wq = b.matrix(n.wq, q_dim, embd);
    l.wk = b.matrix(n.wk, kv_dim, embd);
    l.wv = b.matrix(n.wv, kv_dim, embd);
  } else {  // phi3: one fused [q; k; v] projection
    const backends::WeightMatrix qkv = b.matrix(n.wqkv, q_dim + 2 * kv_dim, embd);
    l.wq = row_slice(qkv, 0, q_dim);
    l.wk = row_slice(qkv, q_dim, kv_dim);
    l.wv = row_slice(qkv, q_dim + kv_dim, kv_dim);
  }
  l.bq = b.optional_vector(n.bq, q_dim);
  l.bk = b.optional_vector(n.bk, kv_dim);
  l.bv = b.optional_vector(n.bv, kv_dim);
  const bool qk_norm = c.arch == "qwen3" || c.arch == "gemma3";
  if (qk_norm) {
    l.q_norm = b.vector(n.q_norm, c.head_dim);
    l.k_norm = b.vector(n.k_norm, c.head_dim);
  }
  l.wo = b.matrix(n.wo, embd, q_dim);
  if (c.arch == "gemma3") l.post_attn_norm = b.vector(n.post_attn_norm, embd);
  l.ffn_norm = b.vector(n.ffn_norm, embd);
  // phi3 fuses [gate; up] (HF gate_up_proj, GGUF ffn_up with 2 * n_ff rows and no ffn_gate).
  if (b.has(n.w_gate)) {
    l.w_gate = b.matrix(n.w_gate, ff, embd);
    l.w_up = b.matrix(n.w_up, ff, embd);
  } else {
    const std::string& fused = b.has(n.w_gate_up) ? n.w_gate_up : n.w_up;
    const backends::WeightMatrix gate_up = b.matrix(fused, 2 * ff, embd);
    l.w_gate = row_slice(gate_up, 0, ff);
    l.w_up = row_slice(gate_up, ff, ff);
  }
  l.w_down = b.matrix(n.w_down, embd, ff);
  if (c.arch == "gemma3") l.post_ffn_norm = b.vector(n.post_ffn_norm, embd);
  return l;
}

void load_top(WeightBuilder& b, ModelConfig& c, ModelWeights& w, const std::string& embd_name,
              const std::string& norm_name, const std::string& output_name) {
  w.token_embd = b.matrix(embd_name, c.n_vocab, c.n_embd);
  w.output_norm = b.vector(norm_name, c.n_embd);
  c.tied_embeddings = !b.has(output_name);
  w.output = c.tied_embeddings ? w.token_embd : b.matrix(output_name, c.n_vocab, c.n_embd);
}

}  // namespace

void dequantize_matrix_row(const backends::WeightMatrix& w, size_t row, std::span<float> out) {
  kernels::dequantize_row(w.dtype, static_cast<const std::byte*>(w.data) + row * w.row_bytes,
                          out.data(), w.cols);
}

ModelWeights load_gguf_weights(const gguf::Reader& reader, ModelConfig& config) {
  ModelWeights w;
  w.files.push_back(reader.file());
  WeightBuilder b(
      [&](const std::string& name) -> std::optional<TensorView> {
        const TensorView* t = reader.find_tensor(name);
        return t ? std::optional<TensorView>(*t) : std::nullopt;
      },
      w, reader.path().string());
  load_top(b, config, w, "token_embd.weight", "output_norm.weight", "output.weight");
  for (int il = 0; il < config.n_layer; ++il)
    w.layers.push_back(load_layer(b, gguf_layer_names(il), config));
  // Llama 3.1+ GGUFs carry the llama3 frequency scaling as per-dimension divisors.
  if (b.has("rope_freqs.weight")) {
    const auto f = b.vector("rope_freqs.weight", config.rope_dims / 2);
    w.rope_freq_factors.assign(f.begin(), f.end());
  }
  return w;
}

ModelWeights load_hf_weights(const hf::Directory& dir, ModelConfig& config,
                             std::optional<kernels::DType> quant) {
  ModelWeights w;
  w.files = dir.owners;
  WeightBuilder b(
      [&](const std::string& name) -> std::optional<TensorView> {
        const formats::TensorEntry* e = dir.find_tensor(name);
        return e ? std::optional<TensorView>(e->view(dir.dir.string())) : std::nullopt;
      },
      w, dir.dir.string());
  b.quantize_to = quant;
  if (config.arch == "gemma3") b.norm_shift = 1.0f;  // Gemma3RMSNorm: x * (1 + weight)
  // Multimodal Gemma 3 checkpoints nest the text model.
  std::string prefix = "model.";
  for (const char* p : {"model.", "language_model.model.", "model.language_model."})
    if (b.has(std::string(p) + "embed_tokens.weight")) {
      prefix = p;
      break;
    }
  const std::string lm_head =
      prefix == "language_model.model." ? "language_model.lm_head.weight" : "lm_head.weight";
  load_top(b, config, w, prefix + "embed_tokens.weight", prefix + "norm.weight", lm_head);
  for (int il = 0; il < config.n_layer; ++il)
    w.layers.push_back(load_layer(b, hf_layer_names(prefix, il, config.arch == "gemma3"), config));
  return w;
}

}  // namespace oxi::llm
