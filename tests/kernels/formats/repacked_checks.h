// Checks shared by the repacked weight layouts' tests (test_q4_0_r16.cpp, test_q8_0_r16.cpp,
// test_q4_k_r8.cpp): a packed type holds the same blocks as its plain GGUF type, rearranged, so
// its matvec is checked against a naive double product, the scalar path and the plain type's
// matvec, and its gemm_q against its own per-token matvec, on every available instruction set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/quant.h"

namespace oxi::test::formats {

using kernels::available_isas;

// Whether `isa` has the hand-written AVX2 kernels (avx2, and avx512, which is built from them).
inline bool has_avx2_kernels(kernels::Isa isa) {
  return isa == kernels::Isa::avx2 || isa == kernels::Isa::avx512;
}

// On every available ISA: the table's `fast` flag (e.g. &FormatKernels::fast_q5_k_r8) is
// `hand_written(isa)`, preferred_layout gives `packed` for `plain` (also for a 2048 x 5632 matrix)
// exactly there and `plain` elsewhere, `packed` prefers itself, and gemm_q has a kernel for it.
void expect_preferred_where(kernels::DType plain, kernels::DType packed,
                            bool kernels::FormatKernels::*fast, bool (*hand_written)(kernels::Isa));

// Row lengths for the layouts in groups of 8 super-blocks (q4_K_r8, iq4_xs_r8, q5_K_r8): groups
// and a short one (the 5632 of a TinyLlama FFN), a short group only, one group, two groups, and
// every short size from 1 to 7 blocks after a whole group.
inline constexpr size_t kK8RowLengths[] = {256 * 22, 256 * 3,  256 * 8,  256 * 16,
                                           256 * 9,  256 * 10, 256 * 12, 256 * 13,
                                           256 * 14, 256 * 15, 256 * 1};

// `packed` is a kernel-internal layout of `plain`: named `name`, quantized, with plain's bytes
// per row for every n in `lengths`, never a file's type nor parsed from a user's string,
// supported as weights, and multiplied against `activation` values.
void expect_internal_layout_of(kernels::DType plain, kernels::DType packed, std::string_view name,
                               kernels::DType activation, std::span<const size_t> lengths);

// `row` (n elements of type `plain`) repacked to `packed`; a failing repack_row fails the test.
std::vector<uint8_t> repack_copy(kernels::DType plain, kernels::DType packed,
                                 const std::vector<uint8_t>& row, size_t n);

// For every n in `lengths` and three random rows of type `plain`: repacking to `packed` and back
// gives the row again, the packed row differs from the plain one once it holds a whole group
// (n >= `whole_group`), and it decodes to the plain row's values, bit for bit.
void expect_repack_lossless_and_bit_exact(kernels::DType plain, kernels::DType packed,
                                          std::span<const size_t> lengths, size_t whole_group);

// For every n in `lengths`: `packed`'s row encoder gives `plain`'s encoding, repacked.
void expect_encoder_is_plain_repacked(kernels::DType plain, kernels::DType packed,
                                      std::span<const size_t> lengths);

// For every n in `lengths` and 1, 3, 7 and 33 random rows of type `plain` (times
// row_granule(packed, n): whole sets of q4_K_r8s rows; repacked to `packed`): the packed matvec on
// every ISA is within the activation-rounding bound of a naive double dot with the unquantized x
// (per block of info(plain).block_elems: sum |w| * (amax / 127 * 0.5 + amax * 1e-3), plus 2e-5 *
// magnitude), and within 1e-5 * magnitude of the scalar ISA's packed matvec and of the plain type's
// matvec on the same ISA.
void expect_matvec_matches_naive_scalar_and_plain(kernels::DType plain, kernels::DType packed,
                                                  std::span<const size_t> lengths);

// How gemm_q's outputs must match the per-token matvec's.
enum class GemmMatch {
  kBitExact,         // identical bits
  kUpToContraction,  // within 1e-6 relative (FMA contraction may differ)
};

// For every n in `lengths`, 1, 7 and 33 rows (times row_granule, as above) and 1, 3, 5 and 9
// tokens: the packed gemm_q on every ISA matches that ISA's packed matvec per token as `match`
// says, and leaves the output stride's padding untouched.
void expect_gemm_q_matches_matvec(kernels::DType plain, kernels::DType packed,
                                  std::span<const size_t> lengths, GemmMatch match);

// The layouts whose SIMD matvec finishes rows of whole groups 8 at a time (q4_K_r8, q5_K_r8: hsum8)
// when their count is a multiple of 8: for rows of whole groups and of a short last one, 16 / 24
// rows (batched) and 19 (one at a time), every row's sum on every ISA must be the bits of that
// row multiplied on its own.
void expect_matvec_rows_together_give_each_rows_bits(kernels::DType plain, kernels::DType packed);

// For every n in `lengths`: `packed`'s activation is q4_0_r16's (ActGroupR16: the same q8_0
// values and scales in the same places) with zero_per_q * sum(q) as each block's zero (q4_0_r16's
// is 8 * sum(q)).
void expect_activation_is_q4_0_r16s(kernels::DType packed, int zero_per_q,
                                    std::span<const size_t> lengths);

// One row `plain_row` (n elements of type `plain`, usually built with extreme values) repacked to
// `packed` and multiplied on every ISA by activations of +1 and -1 everywhere (q8 values of
// +-127: the ends of the kernels' integer ranges): within 1e-4 relative (plus 1e-3) of the naive
// double sum of its decoded values. `what` names the row in failures.
void expect_constant_activations_match_naive(kernels::DType plain, kernels::DType packed,
                                             const std::vector<uint8_t>& plain_row, size_t n,
                                             std::string_view what);

// A row of n elements of q4_1 / q5_0 / q5_1 blocks all alike: scale 1.0, min -2.0 (where the block
// has one), every quant byte `nibbles`, fifth bits `qh` (where the block has them).
template <class Block>
std::vector<uint8_t> uniform_block_row(size_t n, uint8_t nibbles, uint32_t qh = 0) {
  Block b;
  b.d = 0x3C00;                                   // 1.0
  if constexpr (requires { b.m; }) b.m = 0xC000;  // -2.0
  if constexpr (requires { b.qh; }) std::memcpy(b.qh, &qh, 4);
  std::memset(b.qs, nibbles, sizeof b.qs);
  std::vector<uint8_t> row(n / 32 * sizeof b);
  for (size_t i = 0; i < n / 32; ++i) std::memcpy(row.data() + i * sizeof b, &b, sizeof b);
  return row;
}

// Rows of such blocks, quants 0 and all ones (q5: with the fifth bits clear / set) and mixed
// patterns, through expect_constant_activations_match_naive: the extremes of every path's ranges
// (on AVX2 two maddubs pairs of 2 x 31 x 127 summed in int16 for q5).
template <class Block>
void expect_uniform_rows_match_naive(kernels::DType plain, kernels::DType packed) {
  const size_t n = 32 * 16 + 32 * 3;  // a whole group and a short one
  const std::pair<uint8_t, uint32_t> patterns[] = {{0x00, 0},
                                                   {0xFF, 0xFFFFFFFFu},
                                                   {0x0F, 0xFFFF0000u},
                                                   {0xF0, 0x0000FFFFu},
                                                   {0x5A, 0xA5C3F00Fu}};
  for (const auto& [nibbles, qh] : patterns) {
    std::string what = "nibbles " + std::to_string(nibbles);
    if constexpr (requires(Block b) { b.qh; }) what += " qh " + std::to_string(qh);
    expect_constant_activations_match_naive(plain, packed, uniform_block_row<Block>(n, nibbles, qh),
                                            n, what);
  }
}

// Where the avx512 kernels of `packed` take 512-bit vectors but fold them to the 256-bit
// kernel's int32 lanes before any f32 arithmetic (q6_K, q4_K_r8, q4_K_r8s): for every n in
// `lengths`, 9 rows (times row_granule) and 5 tokens, its matvec and gemm_q on avx512 give the
// bits they give on avx2. Skips where this machine lacks either. `packed` may be `plain` (a type
// kept in its GGUF layout).
void expect_avx512_bit_identical_to_avx2(kernels::DType plain, kernels::DType packed,
                                         std::span<const size_t> lengths);
// The same for any two instruction sets: `isa` gives the bits `reference` gives.
void expect_isa_bit_identical(kernels::DType plain, kernels::DType packed,
                              std::span<const size_t> lengths, kernels::Isa reference,
                              kernels::Isa isa);

}  // namespace oxi::test::formats
