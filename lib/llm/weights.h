// The weights of a Llama-family decoder: matrices as backends::WeightMatrix views (into the
// mapped GGUF / safetensors file, or into a converted copy when the file's layout or dtype
// cannot be used in place, or into a repacked copy when the CPU kernels multiply another
// layout faster), and norm / bias vectors as f32 spans.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "kernels/formats/dtype.h"
#include "lib/formats/gguf.h"
#include "lib/formats/hf_dir.h"
#include "lib/formats/weight_builder.h"
#include "lib/formats/weight_repack.h"
#include "lib/llm/model_config.h"

namespace oxi::llm {

struct LayerWeights {
  std::span<const float> attn_norm;       // (n_embd)        attn_norm / input_layernorm
  backends::WeightMatrix wq, wk, wv;      // (q_dim|kv_dim, n_embd)  attn_q / q_proj ...
  std::span<const float> bq, bk, bv;      // (q_dim|kv_dim)  qwen2 biases; empty when absent
  std::span<const float> q_norm, k_norm;  // (head_dim)      qwen3 / gemma3 per-head RMSNorm
  backends::WeightMatrix wo;              // (n_embd, q_dim)         attn_output / o_proj
  std::span<const float> post_attn_norm;  // (n_embd)        gemma3 post_attention_layernorm
  std::span<const float> ffn_norm;        // (n_embd)        ffn_norm / post_attention_layernorm
                                          //                 (gemma3: pre_feedforward_layernorm)
  backends::WeightMatrix w_gate, w_up;    // (n_ff, n_embd)  ffn_gate / gate_proj, ffn_up / up_proj
  backends::WeightMatrix w_down;          // (n_embd, n_ff)  ffn_down / down_proj
  std::span<const float> post_ffn_norm;   // (n_embd)        gemma3 post_feedforward_layernorm
};

struct ModelWeights {
  backends::WeightMatrix token_embd;     // (n_vocab, n_embd)  token_embd / model.embed_tokens
  std::vector<LayerWeights> layers;      // (n_layer)
  std::span<const float> output_norm;    // (n_embd)          output_norm / model.norm
  backends::WeightMatrix output;         // (n_vocab, n_embd) output / lm_head; token_embd if tied
  std::vector<float> rope_freq_factors;  // GGUF rope_freqs (llama3 scaling baked in); or empty

  // What the views point into: the mapped files, converted copies and repacked matrices.
  std::vector<std::shared_ptr<const void>> files;
  formats::WeightCopies copies;
  // Repacked copies of matrices in the file (repack.h).
  formats::RepackedBytes repacked;
};

// Loads from a GGUF file (tensors used in place; q/k of `llama` are already permuted by the
// converter, and config.rope_layout says so).
ModelWeights load_gguf_weights(const gguf::Reader& reader, ModelConfig& config);

// Loads from a Hugging Face directory. f32/f16/bf16 matrices are used in place unless `quant`
// (Q8_0 / Q4_0) asks to quantize them; other dtypes are converted to f32.
ModelWeights load_hf_weights(const hf::Directory& dir, ModelConfig& config,
                             std::optional<kernels::DType> quant);

using formats::dequantize_matrix_row;

}  // namespace oxi::llm
