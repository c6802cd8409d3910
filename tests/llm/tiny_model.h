// Tiny random Llama-family models for tests: a state dict under Hugging Face names (each
// tensor kept both as encoded bytes and as the floats those bytes decode to), written as GGUF
// (llama.cpp names, q/k rows permuted for `llama`) or as an HF directory (config.json,
// tokenizer.json, safetensors or pytorch_model.bin).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kernels/formats/dtype.h"

namespace oxi::llm::test {

struct TinySpec {
  std::string arch;  // llama qwen2 qwen3 gemma3 phi3
  int n_vocab = 300, n_embd = 64, n_layer = 2, n_head = 4, n_head_kv = 2, head_dim = 16;
  int n_ff = 128, n_ctx_train = 512;
  float rms_eps = 1e-5f, rope_base = 10000.0f;
  float rope_base_local = 0.0f;     // gemma3
  float rope_linear_factor = 0.0f;  // > 0: linear rope scaling (gemma3: global layers)
  // > 0: Llama 3 rope scaling (HF rope_scaling; GGUF rope_freqs.weight as the converter
  // writes it), with low/high frequency factors 1 and 4.
  float llama3_factor = 0.0f, llama3_original_context = 0.0f;
  int sliding_window = 0, sliding_window_pattern = 0;
  float query_pre_attn_scalar = 0.0f;  // gemma3
  bool tied = false;
  bool qkv_bias = false, qk_norm = false, fused = false, gemma = false;
};

// The spec each architecture's tests use; k_quants: widths multiples of 256.
TinySpec tiny_spec(const std::string& arch, bool k_quants);

struct TinyTensor {
  std::vector<int64_t> shape;
  kernels::DType dtype;
  std::vector<std::byte> bytes;  // encoded in dtype
  std::vector<float> values;     // what the bytes decode to (what a correct engine computes with)
};

struct TinyModel {
  TinySpec spec;
  std::map<std::string, TinyTensor> tensors;  // HF names

  const std::vector<float>& values(const std::string& name) const;
  bool has(const std::string& name) const { return tensors.count(name) != 0; }
};

// Random weights: matrices in `matrix_dtype`, vectors (norms, biases) in `vector_dtype`.
TinyModel make_tiny_model(const TinySpec& spec, kernels::DType matrix_dtype,
                          kernels::DType vector_dtype, uint32_t seed);

// Each matrix re-encoded in dtype (what --quant does at load) for the reference.
TinyModel quantized_copy(const TinyModel& model, kernels::DType dtype);

void write_gguf(const TinyModel& model, const std::filesystem::path& file);

// n token ids in 3 .. n_vocab - 1 (past <unk> <s> </s>) from a seeded linear congruence.
std::vector<int32_t> test_prompt(size_t n, int n_vocab, uint32_t seed);
// format: "safetensors" or "torch".
void write_hf_dir(const TinyModel& model, const std::filesystem::path& dir,
                  const std::string& format = "safetensors");

inline constexpr const char* kChatTemplate =
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}";

}  // namespace oxi::llm::test
