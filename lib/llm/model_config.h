// ModelConfig: the hyperparameters of a Llama-family decoder, read from GGUF metadata
// ({arch}.embedding_length ...) or a Hugging Face config.json (hidden_size ...), in one shape.
//
// Architectures: llama (Llama 2/3, TinyLlama, Mistral), qwen2, qwen3, gemma3 (text), phi3.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "kernels/math/rope.h"
#include "lib/formats/gguf.h"

namespace oxi::llm {

struct ModelConfig {
  std::string arch;     // "llama", "qwen2", "qwen3", "gemma3", "phi3"
  int n_vocab = 0;      // rows of the token embedding         (vocab_size)
  int n_embd = 0;       // residual stream width               (hidden_size)
  int n_layer = 0;      //                                     (num_hidden_layers)
  int n_head = 0;       // query heads                         (num_attention_heads)
  int n_head_kv = 0;    // key/value heads (GQA)               (num_key_value_heads)
  int head_dim = 0;     //                                     (head_dim, else hidden / heads)
  int n_ff = 0;         // MLP hidden width                    (intermediate_size)
  int n_ctx_train = 0;  //                                     (max_position_embeddings)
  float rms_eps = 1e-5f;

  // RoPE. HF checkpoints rotate (i, i + d/2) pairs; llama.cpp's converter permutes the q/k rows
  // of `llama` models so that GGUF llama rotates adjacent pairs (2i, 2i + 1). Same math.
  kernels::RopeLayout rope_layout = kernels::RopeLayout::neox;
  int rope_dims = 0;             // rotated dims of each head (head_dim unless partial)
  float rope_base = 10000.0f;    // rope_theta (gemma3: the global layers')
  float rope_base_local = 0.0f;  // gemma3 sliding layers' base (rope_local_base_freq); 0 = same
  kernels::RopeScaling rope_scaling;  // linear / llama3; gemma3: global layers only

  // Attention.
  int sliding_window = 0;            // 0 = none
  int sliding_window_pattern = 0;    // gemma3: every Nth layer is global; 0 = window on all layers
  int window_from_layer = 0;         // qwen2/3: layers below max_window_layers see everything
  float attn_scale = 0.0f;           // 0 = 1 / sqrt(head_dim); gemma3: query_pre_attn_scalar^-0.5
  float final_logit_softcap = 0.0f;  // 0 = none; else logits = cap * tanh(logits / cap)
  bool tied_embeddings = false;      // output projection is the token embedding
  // {arch}.pooling_type, how an embedding model pools its tokens' states (llama.cpp's: 0 none,
  // 1 mean, 2 cls, 3 last, 4 rank); -1 when the file does not say (embeddings.h).
  int pooling_type = -1;

  int q_dim() const { return n_head * head_dim; }
  int kv_dim() const { return n_head_kv * head_dim; }
  // The sliding window a layer attends over (0 = the whole context).
  int window_of_layer(int layer) const;
  // The RoPE base a layer uses, and whether the scaling applies to it.
  float rope_base_of_layer(int layer) const;
  bool rope_scaled_layer(int layer) const;

  // Throws oxi::Error(context, ...) on impossible values (zero sizes, heads not dividing).
  void validate(const std::string& context) const;
};

// From GGUF metadata (n_vocab from the token embedding's rows). Throws oxi::Error for an
// unsupported architecture, missing keys, or LongRoPE (phi3 rope_factors_long).
ModelConfig config_from_gguf(const gguf::Reader& reader);

// From config.json (a multimodal gemma3's "text_config" is used). Throws oxi::Error naming
// `context` for unsupported model types or rope scaling (LongRoPE, YaRN, dynamic).
ModelConfig config_from_hf(const nlohmann::json& config, const std::string& context);

}  // namespace oxi::llm
