// Q5_K_R8: q5_K rows repacked for the products (q4_K_r8's arrangement, q4_k_r8.h, with the fifth
// bits after it, so that they share its activation layout, ActGroupK8, and its scale code).
//
// Plain q5_K spends ~70 AVX2 instructions per 176-byte block and row (q4_K's ~60 and the fifth
// bits' unpacking); one core multiplies it at ~23-30 GB/s in L2 against ~45-57 for q4_K_r8, so
// decode of a Q5_K_M file is arithmetic-bound in the VM's fast minutes (docs/benchmarks.md,
// forty-eighth session). Repacked, the bytes of a row come in groups of 8 consecutive
// super-blocks (the last group of a row holds the blocks % 8 that remain, when any), each
// super-block in its own int32 lane. A group of nb <= 8 blocks is q4_K_r8's 36 rows of 4 * nb
// bytes (q4_k_r8.h: d | dmin << 16, the sub-block scales and mins, and the low four bits of
// every element, quants row (j, i), byte 4b + m: element 32j + 8i + m of block b in the low
// nibble, 32j + 8i + 4 + m in the high one) with the fifth bits after each sub-block's rows:
//
//   rows 0-3         q4_K_r8's rows 0-3 (the scales)
//   then per sub-block j = 0..7:
//     4 rows         q4_K_r8's quants rows (j, 0..3)
//     4 fields       of nb bytes, field i: the fifth bits of the elements of quants row (j, i),
//                    as one little-endian integer of 8 * nb bits: bit 4b + m for the low nibble
//                    of byte 4b + m, bit 4nb + 4b + m for its high nibble
//
// so a group is read front to back, one stream (the fifth bits in a region of their own at the
// group's end had streamed slower from memory: docs/benchmarks.md, forty-ninth session). A whole
// group is 1408 bytes (22 lines) and its fields are 64-bit masks whose bit k belongs to byte k
// of the 64 bytes a 512-bit product builds from the quants row (the low nibbles' values in the
// lower half, the high ones' in the upper): on avx512 one mask load and one masked add of 16 per
// 32 quant bytes; AVX2 spreads each half's 32 bits to the bytes of a 256-bit vector
// (q5_k_r8_tiles.h). A shorter last group's masks have their two halves 4 * nb bits apart (spread
// apart by the kernel). A row has exactly the bytes of its q5_K original.
//
// The activation is q4_K_r8's (q8_K values, q4_k_r8_activation_bytes,
// quantize_activation_q4_k_r8). The integer sums of every super-block are the plain q5_K ones;
// only the f32 summation order differs.
//
// Q5_K_R8 is kernel-internal: dtype_info() never returns it for a file's type id.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/formats/blocks.h"
#include "kernels/formats/q4_k_r8.h"

namespace oxi::kernels {

// Offsets in a group of nb blocks: quants row (j, i) (4 * nb bytes) and the fifth-bits field of
// sub-block j, quarter i (nb bytes).
constexpr size_t k5_quants_row(size_t nb, size_t j, size_t i) noexcept {
  return 4 * k8_row_bytes(nb) + j * 20 * nb + i * k8_row_bytes(nb);
}
constexpr size_t k5_fifth_field(size_t nb, size_t j, size_t i) noexcept {
  return k5_quants_row(nb, j, 4) + i * nb;
}
inline constexpr size_t kK5GroupBytes = k5_quants_row(kK8Blocks, 8, 0);
static_assert(kK5GroupBytes == kK8Blocks * sizeof(BlockQ5_K));

// One row of n elements, q5_K -> q5_K_r8 and back; lossless, src and dst must not overlap.
void repack_row_q5_k_r8(const void* src, void* dst, size_t n) noexcept;
void unpack_row_q5_k_r8(const void* src, void* dst, size_t n) noexcept;

// Row decoder and encoder (bit-identical to q5_K's on the same values).
void dequantize_row_q5_k_r8(const void* src, float* dst, size_t n) noexcept;
void quantize_row_q5_k_r8(const float* src, void* dst, size_t n) noexcept;

}  // namespace oxi::kernels
