// Rotary position embedding: frequencies (with linear, llama3 or per-dimension scaling) and
// the rotation itself in both pair layouts, optionally over only the first rot_dims of a head.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace oxi::kernels {

enum class RopeLayout {
  adjacent,  // pairs (2i, 2i+1): GPT-J, llama.cpp's "normal" mode (LLaMA GGUFs)
  neox,      // pairs (i, i + rot_dims/2): GPT-NeoX, HF "rotate_half" (Qwen, Phi, Gemma, ...)
};

struct RopeScaling {
  enum class Kind { none, linear, llama3 };
  Kind kind = Kind::none;
  float factor = 1.0f;  // linear: positions / factor; llama3: low-frequency slow-down
  // llama3 only: wavelengths above original_max_position / low_freq_factor are divided by
  // factor, those below original_max_position / high_freq_factor are kept, and the band
  // between is blended linearly in original_max_position / wavelength.
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  float original_max_position = 8192.0f;
};

// inv_freq[i] = base^(-2i / rot_dims) for i < rot_dims / 2, scaled as `scaling` says, then
// divided by freq_factors[i] when given (GGUF "rope_freqs": rot_dims / 2 entries).
std::vector<float> rope_inv_freq(size_t rot_dims, float base, const RopeScaling& scaling = {},
                                 std::span<const float> freq_factors = {});

// Rotates x in place: token t (x + t * token_stride) holds n_heads heads of head_dim floats;
// the first rot_dims = 2 * inv_freq.size() dims of each head turn by angle position * inv_freq[i]
// and the rest pass through. Angles are formed in double so large positions keep precision.
// positions: one per token. attn_factor scales cos and sin (YaRN's magnitude correction; 1
// otherwise).
void rope(std::span<float> x, size_t n_tokens, size_t token_stride, size_t n_heads, size_t head_dim,
          std::span<const float> inv_freq, RopeLayout layout, std::span<const int32_t> positions,
          float attn_factor = 1.0f) noexcept;

// The same for consecutive positions pos0, pos0 + 1, ...
void rope(std::span<float> x, size_t n_tokens, size_t token_stride, size_t n_heads, size_t head_dim,
          std::span<const float> inv_freq, RopeLayout layout, int64_t pos0,
          float attn_factor = 1.0f) noexcept;

// The cos and sin of every (token, pair) angle of a batch at positions pos0, pos0 + 1, ...:
// computed once and shared by q and k and by every layer with the same frequencies (a decode
// step of a 22-layer model otherwise forms 44 times the same 32 double cos / sin pairs). The
// rotation through a table is bit-identical to rope() with the same arguments.
struct RopeTable {
  size_t pairs = 0;
  std::vector<float> cos, sin;  // (n_tokens, pairs), times attn_factor
};

void rope_table(std::span<const float> inv_freq, int64_t pos0, size_t n_tokens, float attn_factor,
                RopeTable& table);
// The same for tokens at any positions (a batch of several sequences, each at its own place).
void rope_table(std::span<const float> inv_freq, std::span<const int64_t> positions,
                float attn_factor, RopeTable& table);

// rope() over tokens 0 .. n_tokens - 1 of the table (n_tokens <= the table's).
void rope(std::span<float> x, size_t n_tokens, size_t token_stride, size_t n_heads, size_t head_dim,
          const RopeTable& table, RopeLayout layout) noexcept;

}  // namespace oxi::kernels
