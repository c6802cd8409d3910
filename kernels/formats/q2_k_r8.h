// Q2_K_R8: q2_K rows repacked for the products: q3_K_r8's groups of 8 super-blocks and its quants
// rows by pairs of 16-element groups (q3_k_r8.h), without the third bits, with q2_K's scales and
// mins; q3_K_r8's activation layout (ActGroupK16). Multiplied by hand-written tiles on AVX2 and
// avx512 (q2_k_r8_tiles.h).
//
// Plain q2_K costs ~50 vector ops per 84-byte block and row on avx512; one core multiplies it at
// ~14 GB/s in L2 (`bench kernels`), slower than memory feeds two cores. Repacked, a group of
// nb <= 8 blocks (the last group of a row holds the blocks % 8 that remain, when any) is 21 rows
// of 4 * nb bytes (4 bytes of every block):
//
//   row 0            d | dmin << 16, the block's f16 scales
//   rows 1-4         row 1 + q, byte 4b + m: scales[4q + m] of block b as q2_K has it (the
//                    group's 4-bit scale in the low nibble, its 4-bit min in the high one)
//   then per pair p = 0..7 of element groups (A = 2p, B = 2p + 1):
//     2 quants rows  q3_K_r8's: row h, byte 4b + m, bits 2s .. 2s + 1: the two bits of element
//                    4 (2h + s / 2) + m of group A (s even) or B (s odd) of block b
//
// so chunk c = 2h + k of pair p is one 512-bit product, as in q3_K_r8, and a pair's scales (and
// mins) apply to its four chunks' sums at once. A row has exactly the bytes of its q2_K original.
// The integer sums of every super-block are the plain q2_K ones; only the f32 summation order
// differs.
//
// Q2_K_R8 is kernel-internal: dtype_info() never returns it for a file's type id.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/formats/blocks.h"
#include "kernels/formats/q3_k_r8.h"

namespace oxi::kernels {

// Offsets in a group of nb blocks: scale row q (0..3) and quants row h of pair p.
constexpr size_t k2_scale_row(size_t nb, size_t q) noexcept {
  return (1 + q) * k8_row_bytes(nb);
}
constexpr size_t k2_quants_row(size_t nb, size_t p, size_t h) noexcept {
  return 5 * k8_row_bytes(nb) + (2 * p + h) * k8_row_bytes(nb);
}
static_assert(k2_quants_row(kK8Blocks, kK16Pairs, 0) == kK8Blocks * sizeof(BlockQ2_K));

// One row of n elements, q2_K -> q2_K_r8 and back; lossless, src and dst must not overlap.
void repack_row_q2_k_r8(const void* src, void* dst, size_t n) noexcept;
void unpack_row_q2_k_r8(const void* src, void* dst, size_t n) noexcept;

// Row decoder and encoder (bit-identical to q2_K's on the same values).
void dequantize_row_q2_k_r8(const void* src, float* dst, size_t n) noexcept;
void quantize_row_q2_k_r8(const float* src, void* dst, size_t n) noexcept;

}  // namespace oxi::kernels
