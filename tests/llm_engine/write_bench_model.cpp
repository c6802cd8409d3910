// write_llm_bench_model FILE [q4_0|q8_0|q4_k_m|f16|TYPE] [tinyllama|llama-3b|qwen-0.5b]: a
// Llama-shaped GGUF with random weights of a real model's size, for `oxinfer bench llm` where no
// model can be downloaded. Matrices are quantized row by row, so memory stays near the file's
// size. TYPE: any weight type the kernels have (iq4_xs, q5_K, ...), every matrix in it.
// qwen-0.5b's widths (896, 4864) are not multiples of 256: 32-element formats and f16 only.
// q4_k_m mixes types the way llama.cpp's Q4_K_M does: q6_K for output.weight and for attn_v /
// ffn_down in the first and last eighth of the layers and every third layer between, q4_K for
// the rest.
// Options after SIZE: layers=N (that many layers instead of the size's), silent-from=K (the
// layers from K on add nothing: zero attn_output and ffn_down, so the model's logits are those of
// its first K layers alone). Every tensor's values come from a generator seeded by its name, so
// `FILE q4_0 tinyllama layers=4` and `FILE q4_0 tinyllama silent-from=4` agree on every token:
// a draft and a target for measuring speculative decoding (every draft token accepted).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kernels/formats/quant.h"
#include "lib/formats/gguf.h"

namespace {

using oxi::kernels::DType;

struct Shape {
  int n_vocab, n_embd, n_layer, n_head, n_head_kv, n_ff;
};

std::vector<std::byte> random_matrix(DType dtype, size_t rows, size_t cols, float stddev,
                                     std::mt19937& rng) {
  const size_t row_bytes = oxi::kernels::row_bytes(dtype, cols);
  std::vector<std::byte> out(rows * row_bytes);
  std::normal_distribution<float> dist(0.0f, stddev > 0 ? stddev : 1.0f);
  std::vector<float> row(cols);
  for (size_t r = 0; r < rows; ++r) {
    for (float& x : row) x = stddev > 0 ? dist(rng) : 0.0f;  // 0: a matrix of zeros
    oxi::kernels::quantize_row(dtype, row.data(), out.data() + r * row_bytes, cols);
  }
  return out;
}

std::vector<std::byte> ones(size_t n) {
  std::vector<float> v(n, 1.0f);
  std::vector<std::byte> b(n * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: write_llm_bench_model FILE [q4_0|q8_0|q4_k_m|f16|TYPE] "
                 "[tinyllama|llama-3b|qwen-0.5b]\n");
    return 2;
  }
  const std::string type = argc > 2 ? argv[2] : "q4_0";
  const std::string size = argc > 3 ? argv[3] : "tinyllama";
  int layers = 0, silent_from = -1;
  for (int i = 4; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("layers=", 0) == 0) {
      layers = std::atoi(arg.c_str() + 7);
    } else if (arg.rfind("silent-from=", 0) == 0) {
      silent_from = std::atoi(arg.c_str() + 12);
    } else {
      std::fprintf(stderr, "write_llm_bench_model: unknown option '%s'\n", arg.c_str());
      return 2;
    }
  }
  const bool k_mix = type == "q4_k_m";
  const std::optional<DType> parsed = k_mix ? DType::Q4_K : oxi::kernels::parse_dtype(type);
  if (!parsed || !oxi::kernels::weight_supported(*parsed)) {
    std::fprintf(stderr, "write_llm_bench_model: unknown weight type '%s'\n", type.c_str());
    return 2;
  }
  const DType dtype = *parsed;
  // TinyLlama 1.1B, Llama 3.2 3B's body with a 32k vocabulary, or Qwen2.5 0.5B's (rows of 896
  // and 4864: q4_0 rows with blocks that do not fill a repacked group, q4_K ones with a short
  // group).
  Shape s = size == "llama-3b"    ? Shape{32000, 3072, 28, 24, 8, 8192}
            : size == "qwen-0.5b" ? Shape{32000, 896, 24, 14, 2, 4864}
                                  : Shape{32000, 2048, 22, 32, 4, 5632};
  if (layers > 0) s.n_layer = layers;
  const int head_dim = s.n_embd / s.n_head;

  oxi::gguf::Writer w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.context_length", 2048);
  w.set_u32("llama.embedding_length", s.n_embd);
  w.set_u32("llama.block_count", s.n_layer);
  w.set_u32("llama.feed_forward_length", s.n_ff);
  w.set_u32("llama.attention.head_count", s.n_head);
  w.set_u32("llama.attention.head_count_kv", s.n_head_kv);
  w.set_u32("llama.rope.dimension_count", head_dim);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_f32("llama.rope.freq_base", 10000.0f);
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  for (int b = 0; b < 256; ++b) {
    char text[8];
    std::snprintf(text, sizeof text, "<0x%02X>", b);
    tokens.emplace_back(text);
  }
  while (static_cast<int>(tokens.size()) < s.n_vocab)
    tokens.push_back("\xE2\x96\x81w" + std::to_string(tokens.size()));
  std::vector<int32_t> types(tokens.size(), 1);
  types[0] = 2;
  types[1] = types[2] = 3;
  for (size_t i = 3; i < 259; ++i) types[i] = 6;
  std::vector<float> scores(tokens.size());
  for (size_t i = 259; i < tokens.size(); ++i) scores[i] = -static_cast<float>(i);
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_f32_array("tokenizer.ggml.scores", scores);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_bool("tokenizer.ggml.add_bos_token", true);

  const size_t e = s.n_embd, q = s.n_head * head_dim, kv = s.n_head_kv * head_dim, ff = s.n_ff;
  const float in_std = 1.0f / std::sqrt(static_cast<float>(e));
  auto matrix = [&](const std::string& name, size_t rows, size_t cols, float stddev,
                    bool more_bits = false) {
    // A generator of the tensor's own (FNV-1a of its name), so that files with other layer
    // counts share the tensors they both have.
    uint32_t seed = 2166136261u;
    for (char c : name) seed = (seed ^ static_cast<uint8_t>(c)) * 16777619u;
    std::mt19937 rng(seed);
    const DType t = k_mix && more_bits ? DType::Q6_K : dtype;
    if (oxi::kernels::row_bytes(t, cols) == 0) {
      std::fprintf(stderr,
                   "write_llm_bench_model: %s is %zu wide, not a whole number of %s blocks\n",
                   name.c_str(), cols, std::string(oxi::kernels::name(t)).c_str());
      std::exit(2);
    }
    w.add_tensor(name, t, {static_cast<int64_t>(rows), static_cast<int64_t>(cols)},
                 random_matrix(t, rows, cols, stddev, rng));
  };
  const int n8 = s.n_layer / 8;
  auto more_bits = [&](int l) { return l < n8 || l >= 7 * s.n_layer / 8 || (l - n8) % 3 == 2; };
  matrix("token_embd.weight", s.n_vocab, e, 1.0f);
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    w.add_tensor(p + "attn_norm.weight", DType::F32, {static_cast<int64_t>(e)}, ones(e));
    matrix(p + "attn_q.weight", q, e, in_std);
    matrix(p + "attn_k.weight", kv, e, in_std);
    matrix(p + "attn_v.weight", kv, e, in_std, more_bits(l));
    const bool silent = silent_from >= 0 && l >= silent_from;
    matrix(p + "attn_output.weight", e, q, silent ? 0.0f : 1.0f / std::sqrt(static_cast<float>(q)));
    w.add_tensor(p + "ffn_norm.weight", DType::F32, {static_cast<int64_t>(e)}, ones(e));
    matrix(p + "ffn_gate.weight", ff, e, in_std);
    matrix(p + "ffn_up.weight", ff, e, in_std);
    matrix(p + "ffn_down.weight", e, ff, silent ? 0.0f : 1.0f / std::sqrt(static_cast<float>(ff)),
           more_bits(l));
    std::fprintf(stderr, "\rlayer %d/%d", l + 1, s.n_layer);
  }
  w.add_tensor("output_norm.weight", DType::F32, {static_cast<int64_t>(e)}, ones(e));
  matrix("output.weight", s.n_vocab, e, in_std, true);
  std::fprintf(stderr, "\nwriting %s\n", argv[1]);
  w.write(argv[1]);
  return 0;
}
