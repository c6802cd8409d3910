// Q4_K_R8: q4_K rows repacked for the matrix-vector product of decoding (the idea of llama.cpp's
// interleaved q4_K repacking at load time; this layout, within one row, is this project's own).
//
// On the GGUF layout every 32-element sub-block of a q4_K super-block needs its own scale
// multiply (a shuffle to broadcast the scale, a madd) and the 6-bit scales of each super-block
// are unpacked on their own: ~60 AVX2 instructions per 144-byte block and row even with the f32
// sums kept in vectors (traits_avx2.h), which keeps decode compute-bound on two cores.
// Repacked, the bytes of a row come in groups of 8 consecutive super-blocks, each super-block
// in its own int32 lane:
//
//   WeightGroupK8 (1152 bytes = 8 q4_K super-blocks):
//     d[8], dmin[8]   the f16 scales together: one vcvtph2ps converts 8
//     sc_lo[4b + k]   low 4 bits of sub-block scale k (low nibble) and k + 4 (high) of block b
//     mn_lo[4b + k]   the same for the mins
//     hi[4b + k]      top 2 bits of sc[k], sc[k + 4], mn[k], mn[k + 4] (bits 0-1, 2-3, 4-5, 6-7)
//     qs[j][i][4b+m]  element 32j + 8i + m of block b (low nibble) and 32j + 8i + 4 + m (high)
//
// so a 32-byte load holds 8 elements of sub-block j of each of the 8 blocks, and the 8 scales
// of a sub-block come out of the repacked scale bytes in a few vector ops for all 8 blocks.
// maddubs sums of a sub-block stay in int16 (8 of them, |sum| <= 8 * 2 * 15 * 127 = 30480: q8_K
// activations never hold -128), then one madd applies the 8 blocks' scales. About 35 AVX2
// instructions per block and row instead of ~60. The blocks of a row that do not fill a group
// (blocks % 8) stay in plain q4_K layout at the row's end; a row has exactly the bytes of its
// q4_K original (row_bytes(Q4_K_R8, n) == row_bytes(Q4_K, n)).
//
// Activations are quantized to q8_K exactly as for q4_K (same scales, same integers) and laid out
// to match (ActGroupK8): per block its f32 scale, the sums of each 32-element sub-block (pairs
// per lane, for the mins) and the q bytes in the weights' order. The tail blocks follow as plain
// BlockQ8_K. The integer sums of every super-block are the plain q4_K ones; only the f32
// summation order differs.
//
// Q4_K_R8 is kernel-internal: dtype_info() never returns it for a file's type id.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/formats/blocks.h"

namespace oxi::kernels {

inline constexpr size_t kK8Blocks = 8;  // super-blocks per group

struct WeightGroupK8 {
  uint16_t d[kK8Blocks];
  uint16_t dmin[kK8Blocks];
  uint8_t sc_lo[4 * kK8Blocks];
  uint8_t mn_lo[4 * kK8Blocks];
  uint8_t hi[4 * kK8Blocks];
  uint8_t qs[8][4][4 * kK8Blocks];
};

struct ActGroupK8 {
  float d[kK8Blocks];
  // [p][2b], [p][2b + 1]: sums of sub-blocks 2p and 2p + 1 of block b
  int16_t sums[4][2 * kK8Blocks];
  // [j][i][0][4b + m]: q[32j + 8i + m] of block b; [j][i][1]: q[32j + 8i + 4 + m]
  int8_t q[8][4][2][4 * kK8Blocks];
};

static_assert(sizeof(WeightGroupK8) == kK8Blocks * sizeof(BlockQ4_K));
static_assert(sizeof(ActGroupK8) == 2208);

// Bytes of one prepared activation of n values (n a multiple of 256).
size_t q4_k_r8_activation_bytes(size_t n) noexcept;
// q8_K-quantizes x[0..n) (as the q4_K activation) into the layout above.
void quantize_activation_q4_k_r8(const float* x, void* out, size_t n) noexcept;

// One row of n elements, q4_K -> q4_K_r8 and back; lossless, src and dst must not overlap.
void repack_row_q4_k_r8(const void* src, void* dst, size_t n) noexcept;
void unpack_row_q4_k_r8(const void* src, void* dst, size_t n) noexcept;

// Row decoder and encoder (bit-identical to q4_K's on the same values).
void dequantize_row_q4_k_r8(const void* src, float* dst, size_t n) noexcept;
void quantize_row_q4_k_r8(const float* src, void* dst, size_t n) noexcept;

}  // namespace oxi::kernels
