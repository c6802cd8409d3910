#include "lib/llm/weights.h"

#include <functional>
#include <string>

#include "kernels/formats/quant.h"
#include "lib/core/error.h"
#include "lib/formats/weight_builder.h"
#include "lib/llm/repack.h"

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

// The LLM's view of formats::WeightBuilder: float matrices re-encoded as `quantize_to` (HF
// --quant), norm weights shifted (Gemma's HF RMSNorm multiplies by 1 + w), optional tensors.
class WeightBuilder {
 public:
  WeightBuilder(formats::TensorFinder find, ModelWeights& out, std::string context)
      : b_(std::move(find), out.copies, std::move(context)) {}

  std::optional<kernels::DType> quantize_to;  // HF --quant: float matrices become this
  float norm_shift = 0.0f;                    // added to every *norm.weight (Gemma HF: 1 + w)

  bool has(const std::string& name) const { return b_.has(name); }

  backends::WeightMatrix matrix(const std::string& name, size_t rows, size_t cols) {
    return b_.matrix(name, rows, cols, quantize_to);
  }

  std::span<const float> vector(const std::string& name, size_t n) {
    return b_.floats(name, n, name.ends_with("norm.weight") ? norm_shift : 0.0f);
  }

  std::span<const float> optional_vector(const std::string& name, size_t n) {
    return has(name) ? vector(name, n) : std::span<const float>{};
  }

 private:
  formats::WeightBuilder b_;
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
  // Qwen2 always has q/k/v biases (llama.cpp requires them); the others may.
  const bool biases = c.arch == "qwen2";
  l.bq = biases ? b.vector(n.bq, q_dim) : b.optional_vector(n.bq, q_dim);
  l.bk = biases ? b.vector(n.bk, kv_dim) : b.optional_vector(n.bk, kv_dim);
  l.bv = biases ? b.vector(n.bv, kv_dim) : b.optional_vector(n.bv, kv_dim);
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
  repack_for_cpu(w, reader.file().get());
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
  repack_for_cpu(w, nullptr);
  return w;
}

}  // namespace oxi::llm
