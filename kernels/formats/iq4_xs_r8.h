// IQ4_XS_R8: iq4_xs rows repacked for the products (the arrangement of q4_K_r8, q4_k_r8.h, for
// iq4_xs's super-blocks, so that they share its activation layout, ActGroupK8).
//
// Plain iq4_xs spends ~25 AVX2 instructions per 32 weights: a 16-byte table lookup per nibble
// half, a signed x signed dot through the sign trick, and each sub-block's scale unpacked and
// applied on its own; one core multiplies it at ~22 GB/s in L2, against ~57 for q4_K_r8, so
// decode stayed at about half the read bandwidth (docs/benchmarks.md, forty-third session).
// Repacked, the bytes of a row come in groups of 8 consecutive super-blocks (the last group of a
// row holds the blocks % 8 that remain, when any), each super-block in its own int32 lane. A
// group of nb <= 8 blocks is 34 rows of 4 * nb bytes, 4 bytes of every row per block:
//
//   row 0           d | scales_h << 16: the block's f16 scale and the top two bits of its 8
//                   sub-block scales
//   row 1           scales_l: the low four bits of the sub-block scales (nibble j % 2 of byte
//                   j / 2: iq4_xs's own bytes)
//   row 2 + 4j + i  qs[4b + m]: the index of element 32j + 8i + m of block b (low nibble) and of
//                   32j + 8i + 4 + m (high), q4_K_r8's order
//
// so a whole group is 1088 bytes (17 lines) and a 32-byte load holds 8 indices of sub-block j of
// each of the 8 blocks. A shorter last group is read with masked loads (its missing lanes read as
// zero). A row has exactly the bytes of its iq4_xs original.
//
// The products look each index up as level + 128 (0..240, a byte: the u8 side of vpdpbusd), so
// a sub-block's dot is sum((level + 128) * q) - 128 * sum(q), and with the sub-block scales s_j =
// ls_j - 32 a block's integer sum is sum_j s_j * dot_j - 128 * sum_j s_j * bsum_j: the second
// term is q4_K_r8's mins term with the scales as mins, from the activation's sub-block sums. The
// integers are exact (|sum_j s_j dot_j| < 2^28), and are iq4_xs's own sums.
//
// IQ4_XS_R8 is kernel-internal: dtype_info() never returns it for a file's type id.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/formats/blocks.h"
#include "kernels/formats/q4_k_r8.h"

namespace oxi::kernels {

inline constexpr size_t kXS8Rows = 34;  // rows of a group, 4 bytes per block each
inline constexpr size_t kXS8RowDScalesH = 0, kXS8RowScalesL = 1;
// Row of indices for sub-block j, quarter i.
constexpr size_t xs8_qs_row(size_t j, size_t i) noexcept {
  return 2 + 4 * j + i;
}
inline constexpr size_t kXS8GroupBytes = kXS8Rows * k8_row_bytes(kK8Blocks);
static_assert(kXS8GroupBytes == kK8Blocks * sizeof(BlockIQ4_XS));

// One row of n elements, iq4_xs -> iq4_xs_r8 and back; lossless, src and dst must not overlap.
void repack_row_iq4_xs_r8(const void* src, void* dst, size_t n) noexcept;
void unpack_row_iq4_xs_r8(const void* src, void* dst, size_t n) noexcept;

// Row decoder and encoder (bit-identical to iq4_xs's on the same values).
void dequantize_row_iq4_xs_r8(const void* src, float* dst, size_t n) noexcept;
void quantize_row_iq4_xs_r8(const float* src, void* dst, size_t n) noexcept;

// The activation is q4_K_r8's (q4_k_r8_activation_bytes, quantize_activation_q4_k_r8).

}  // namespace oxi::kernels
