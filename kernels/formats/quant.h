// Public API of kernels/formats: decode and encode GGUF rows, prepare activations, and multiply
// quantized weight rows by activation vectors.
//
// Weights stay in their GGUF block format; a dot product of a quantized row runs on integers
// against an activation quantized the way ggml does it (activation_dtype()):
//   q4_0, q5_0, q8_0, iq4_nl x q8_0  (per 32 values: f16 scale)
//   q4_1, q5_1               x q8_1  (q8_0 plus s = d * sum(q), which carries the weight's min)
//   q2_K .. q6_K, iq4_xs     x q8_K  (per 256 values: f32 scale, sums of each 16 for the mins)
//   tq1_0, tq2_0             x q8_K  (ternary weights: the sums remove the trits' offset)
//   f32, f16, bf16           x f32   (the activation is used as is)
//   q4_0_r16                 x q8_0 in a matching layout (q4_0_r16.h: repacked q4_0)
//   iq4_nl_r16               x q8_0 in q4_0_r16's layout (iq4_nl_r16.h: repacked iq4_nl)
//   q5_0_r16                 x q8_0 in q4_0_r16's layout (q5_0_r16.h: repacked q5_0)
//   q5_1_r16                 x q8_1 in q4_0_r16's layout (q5_1_r16.h: repacked q5_1)
//   q4_1_r16                 x q8_1 in q4_0_r16's layout (q4_1_r16.h: repacked q4_1)
//   q8_0_r16                 x q8_0 in a matching layout (q8_0_r16.h: repacked q8_0)
//   q4_K_r8                  x q8_K in a matching layout (q4_k_r8.h: repacked q4_K)
//   iq4_xs_r8                x q8_K in q4_K_r8's layout (iq4_xs_r8.h: repacked iq4_xs)
//   q5_K_r8                  x q8_K in q4_K_r8's layout (q5_k_r8.h: repacked q5_K)
//   q3_K_r8                  x q8_K in a matching layout (q3_k_r8.h: repacked q3_K)
//   q2_K_r8                  x q8_K in q3_K_r8's layout (q2_k_r8.h: repacked q2_K)
//
// Typical use by a backend, for one token:
//   const size_t ab = activation_bytes(w_type, n);       // once per layer shape
//   quantize_activation(w_type, x, act.data(), n);        // once per token
//   matvec(w_type, w + r0 * row_bytes, row_bytes, r1 - r0, n, act.data(), y + r0);  // per thread
//
// Everything here is single-threaded, allocation free and noexcept; callers split rows across
// threads. Preconditions (not checked): weight_supported(w_type), n a multiple of the block
// size, buffers of the documented sizes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "kernels/cpu_features.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/prefetch.h"

namespace oxi::kernels {

// f32 values of one row: dst[0..n) from n elements of src.
using RowDecoder = void (*)(const void* src, float* dst, size_t n) noexcept;
// One row of n floats into the block format.
using RowEncoder = void (*)(const float* src, void* dst, size_t n) noexcept;
// y[r] = dot(row r of w, x) for r < rows; rows are w_row_bytes apart.
using MatvecFn = void (*)(const void* w, size_t w_row_bytes, size_t rows, size_t n,
                          const void* x_act, float* y) noexcept;
// y[t * y_stride + r] = dot(row r of w, activation t) for t < tokens, r < rows; activation t
// starts at x_act + t * x_act_stride bytes (usually activation_bytes(w_type, n)).
using GemmQFn = void (*)(const void* w, size_t w_row_bytes, size_t rows, size_t n,
                         const void* x_act, size_t x_act_stride, size_t tokens, float* y,
                         size_t y_stride) noexcept;

// Number of table slots: every GGUF type id and the kernel-internal ones (dtype.h) below this.
inline constexpr size_t kDTypeSlots = 64;

// Weight types with matvec / gemm_q / dequantize / quantize support:
// f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K iq4_nl iq4_xs tq1_0 tq2_0,
// q4_0_r16, q8_0_r16, q4_K_r8, iq4_xs_r8, iq4_nl_r16, q5_0_r16, q5_1_r16, q4_1_r16, q5_K_r8,
// q3_K_r8, q2_K_r8
// and q4_K_r8s (which has no row decoder or encoder: a matrix of it is decoded by
// dequantize_matrix_row).
bool weight_supported(DType t) noexcept;

// Rows of n elements a matrix of type t holds together: a multiple of it is the least a matrix,
// a product's row range or a repack takes (K8Sets(n).set_rows for q4_K_r8s, 1 for every other
// type).
size_t row_granule(DType t, size_t n) noexcept;

// ---- rows (scalar reference; dequantization is bit-exact to ggml) ----

// Also decodes q8_1 and q8_K (activation formats), which tests use.
void dequantize_row(DType t, const void* src, float* dst, size_t n) noexcept;
// K-quants search scales the way ggml's reference quantizers do (not bit-identical to them).
void quantize_row(DType t, const float* src, void* dst, size_t n) noexcept;
// Function pointers for the above; nullptr for unsupported types.
RowDecoder row_decoder(DType t) noexcept;
RowEncoder row_encoder(DType t) noexcept;
// One row of n floats into the block format with each element's rounding error weighed by its
// column's importance (n values: an importance matrix's mean squares of the inputs, llama.cpp's
// imatrix), as ggml's quantizers weigh it: importance x sqrt(sigma2 + x^2). K-quants (Q2_K ..
// Q6_K) and Q4_0 / Q4_1 / Q5_0 / Q5_1; nullptr for the others (Q8_0 and the float formats have
// no choice to make; IQ4_NL / IQ4_XS / TQ are not done).
using ImportanceRowEncoder = void (*)(const float* src, const float* importance, void* dst,
                                      size_t n) noexcept;
ImportanceRowEncoder importance_row_encoder(DType t) noexcept;
// Row `row` of a matrix of type t (rows row_bytes apart) decoded: dequantize_row of that row,
// or for q4_K_r8s through the row's set.
void dequantize_matrix_row(DType t, const void* matrix, size_t row_bytes, size_t row, float* dst,
                           size_t n) noexcept;

// ---- activations ----

// The format activations take for weights of type `weight` (F32, Q8_0, Q8_1 or Q8_K; for
// q4_0_r16 and q8_0_r16, Q8_0 values in that layout's own arrangement; for q4_K_r8, Q8_K values
// in its own arrangement).
DType activation_dtype(DType weight) noexcept;
// Bytes of one prepared activation vector of n values: row_bytes(activation_dtype(weight), n),
// or for a repacked weight layout its own arrangement's bytes rounded up to a multiple of
// kActivationAlign (the padding is never written or read), so that activations placed one
// after another are as aligned as the first (their groups hold f32 fields).
inline constexpr size_t kActivationAlign = 64;
size_t activation_bytes(DType weight, size_t n) noexcept;
// `bytes` rounded up to a multiple of kActivationAlign: where activations of several layouts
// share one buffer, each starts at such an offset.
inline constexpr size_t align_activation_bytes(size_t bytes) noexcept {
  return (bytes + kActivationAlign - 1) / kActivationAlign * kActivationAlign;
}
// The first kActivationAlign-aligned byte at or after p: where a buffer of at least
// kActivationAlign - 1 bytes more than its activations needs them to start.
template <class Byte>
Byte* align_activation_start(Byte* p) noexcept {
  static_assert(sizeof(Byte) == 1);
  const auto at = reinterpret_cast<uintptr_t>(p);
  return p + (kActivationAlign - at % kActivationAlign) % kActivationAlign;
}
// Writes activation_bytes(weight, n) bytes to out.
void quantize_activation(DType weight, const float* x, void* out, size_t n) noexcept;

// ---- repacked layouts ----

// Rewrites one row of n elements stored as `from` into `to` (q4_0 <-> q4_0_r16, q8_0 <->
// q8_0_r16, q4_K <-> q4_K_r8, iq4_xs <-> iq4_xs_r8, iq4_nl <-> iq4_nl_r16, q5_0 <->
// q5_0_r16, q5_1 <-> q5_1_r16, q4_1 <-> q4_1_r16, q5_K <-> q5_K_r8, q3_K <-> q3_K_r8, q2_K <-> q2_K_r8), byte count
// unchanged
// and lossless. Returns false (writing nothing) for any other pair. src and dst must not overlap.
bool repack_row(DType from, DType to, const void* src, void* dst, size_t n) noexcept;
// The same for `rows` dense rows, which also takes q4_K <-> q4_K_r8s; false (writing nothing)
// also when rows is not a multiple of both types' row_granule.
bool repack_rows(DType from, DType to, const void* src, void* dst, size_t rows, size_t n) noexcept;

// ---- products ----

// Kernels of one instruction set, indexed by the GGUF type id; nullptr where unsupported.
struct FormatKernels {
  Isa isa = Isa::scalar;
  std::array<MatvecFn, kDTypeSlots> matvec{};
  std::array<GemmQFn, kDTypeSlots> gemm_q{};
  // Whether this set has a hand-written q4_0_r16 kernel, faster than its plain q4_0 one (the
  // reference q4_0_r16 kernel is not worth a repack).
  bool fast_q4_0_r16 = false;
  // The same for q8_0_r16 and plain q8_0.
  bool fast_q8_0_r16 = false;
  // The same for q4_K_r8 and plain q4_K.
  bool fast_q4_k_r8 = false;
  // The same for iq4_xs_r8 and plain iq4_xs.
  bool fast_iq4_xs_r8 = false;
  // The same for iq4_nl_r16 and plain iq4_nl.
  bool fast_iq4_nl_r16 = false;
  // The same for q5_0_r16 and plain q5_0.
  bool fast_q5_0_r16 = false;
  // The same for q5_1_r16 and plain q5_1.
  bool fast_q5_1_r16 = false;
  // The same for q4_1_r16 and plain q4_1.
  bool fast_q4_1_r16 = false;
  // The same for q5_K_r8 and plain q5_K.
  bool fast_q5_k_r8 = false;
  // The same for q3_K_r8 and plain q3_K.
  bool fast_q3_k_r8 = false;
  // The same for q2_K_r8 and plain q2_K.
  bool fast_q2_k_r8 = false;
  // Per weight type: whether gemm_q's tiles of 2-3 tokens request their weights ahead and
  // split each weight vector once for all the tokens, so that a few tokens (decode steps of
  // conversations batched together, a speculative draft) run faster through gemm_q than
  // through one matvec a token.
  std::array<bool, kDTypeSlots> few_token_tiles{};
  // Whether some one-token passes follow stream_lines(layout) (prefetch.h): the avx512 kernels.
  bool stream_lines_choice = false;
  // q8_0 activation blocks of x[0..n), bit-identical to quantize_row_q8_0 for finite x (what
  // quantize_activation uses for every q8_0-based layout).
  RowEncoder quantize_q8_0 = nullptr;
  // q8_1 activation blocks (q4_1 / q5_1 and their r16 layouts), the same for quantize_row_q8_1.
  RowEncoder quantize_q8_1 = nullptr;
  // q8_K activation blocks of x[0..n), bit-identical to quantize_row_q8_K (the activation of
  // every K-quant layout).
  RowEncoder quantize_q8_K = nullptr;

  MatvecFn matvec_for(DType t) const noexcept { return slot(matvec, t); }
  GemmQFn gemm_q_for(DType t) const noexcept { return slot(gemm_q, t); }
  bool few_token_tiles_for(DType t) const noexcept {
    return static_cast<size_t>(t) < kDTypeSlots && few_token_tiles[static_cast<size_t>(t)];
  }
  // The layout to hold weights stored as t in for these kernels: q4_0_r16 for q4_0,
  // q8_0_r16 for q8_0, q4_K_r8 for q4_K, iq4_xs_r8 for iq4_xs, iq4_nl_r16 for iq4_nl,
  // q5_0_r16 for q5_0, q5_1_r16 for q5_1, q4_1_r16 for q4_1, q5_K_r8 for q5_K, q3_K_r8 for q3_K and q2_K_r8
  // for q2_K where they are faster, else t
  // itself.
  DType preferred_layout(DType t) const noexcept {
    if (t == DType::Q4_0 && fast_q4_0_r16) return DType::Q4_0_R16;
    if (t == DType::Q8_0 && fast_q8_0_r16) return DType::Q8_0_R16;
    if (t == DType::Q4_K && fast_q4_k_r8) return DType::Q4_K_R8;
    if (t == DType::IQ4_XS && fast_iq4_xs_r8) return DType::IQ4_XS_R8;
    if (t == DType::IQ4_NL && fast_iq4_nl_r16) return DType::IQ4_NL_R16;
    if (t == DType::Q5_0 && fast_q5_0_r16) return DType::Q5_0_R16;
    if (t == DType::Q5_1 && fast_q5_1_r16) return DType::Q5_1_R16;
    if (t == DType::Q4_1 && fast_q4_1_r16) return DType::Q4_1_R16;
    if (t == DType::Q5_K && fast_q5_k_r8) return DType::Q5_K_R8;
    if (t == DType::Q3_K && fast_q3_k_r8) return DType::Q3_K_R8;
    if (t == DType::Q2_K && fast_q2_k_r8) return DType::Q2_K_R8;
    return t;
  }
  // The same for a matrix of rows x cols: q4_K rows that end in a short q4_K_r8 group take
  // q4_K_r8s where their count fills its sets (q4_k_r8s.h).
  DType preferred_layout(DType t, size_t rows, size_t cols) const noexcept;
  // Which stream mode (stream_lines(layout), prefetch.h) one-token products of weights of type
  // t follow; nullopt where they always request the same.
  std::optional<StreamLayout> stream_layout(DType t) const noexcept {
    if (!stream_lines_choice) return std::nullopt;
    if (t == DType::Q4_0_R16 || t == DType::IQ4_NL_R16 || t == DType::Q5_0_R16 ||
        t == DType::Q5_1_R16 || t == DType::Q4_1_R16)
      return StreamLayout::kQ4_0R16;
    if (t == DType::Q8_0_R16) return StreamLayout::kQ8_0R16;
    if (t == DType::Q4_K_R8 || t == DType::Q4_K_R8S) return StreamLayout::kQ4KR8;
    return std::nullopt;
  }

 private:
  template <class Fn>
  static Fn slot(const std::array<Fn, kDTypeSlots>& a, DType t) noexcept {
    const auto i = static_cast<size_t>(t);
    return i < kDTypeSlots ? a[i] : nullptr;
  }
};

// The table for `isa`; for an unavailable isa, the scalar table.
const FormatKernels& format_kernels(Isa isa) noexcept;
// The table for selected_isa().
const FormatKernels& format_kernels() noexcept;

// Convenience wrappers over format_kernels(): see MatvecFn and GemmQFn.
void matvec(DType w_type, const void* w, size_t w_row_bytes, size_t rows, size_t n,
            const void* x_act, float* y) noexcept;
void gemm_q(DType w_type, const void* w, size_t w_row_bytes, size_t rows, size_t n,
            const void* x_act, size_t x_act_stride, size_t tokens, float* y,
            size_t y_stride) noexcept;

}  // namespace oxi::kernels
