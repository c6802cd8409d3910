// Q4_K_R8: q4_K rows repacked for the matrix-vector product of decoding (the idea of llama.cpp's
// interleaved q4_K repacking at load time; this layout, within one row, is this project's own).
//
// On the GGUF layout every 32-element sub-block of a q4_K super-block needs its own scale
// multiply (a shuffle to broadcast the scale, a madd) and the 6-bit scales of each super-block
// are unpacked on their own: ~60 AVX2 instructions per 144-byte block and row even with the f32
// sums kept in vectors (traits_avx2.h), which keeps decode compute-bound on two cores.
// Repacked, the bytes of a row come in groups of 8 consecutive super-blocks (the last group of
// a row holds the blocks % 8 that remain, when any), each super-block in its own int32 lane. A
// group of nb <= 8 blocks is 36 rows of 4 * nb bytes, 4 bytes of every row per block:
//
//   row 0           dm[b]: d | dmin << 16, the block's f16 scales (packed apart, then one
//                   vcvtph2ps for the 8 d and one for the 8 dmin)
//   row 1           sc_lo[4b + k]: low 4 bits of sub-block scale k (low nibble) and k + 4 (high)
//   row 2           mn_lo[4b + k]: the same for the mins
//   row 3           hi[4b + k]: top 2 bits of sc[k], sc[k + 4], mn[k], mn[k + 4] (bits 0-1, 2-3,
//                   4-5, 6-7)
//   row 4 + 4j + i  qs[4b + m]: element 32j + 8i + m of block b (low nibble) and 32j + 8i + 4 + m
//                   (high)
//
// so in a whole group (1152 bytes) a 32-byte load holds 8 elements of sub-block j of each of the
// 8 blocks, and the 8 scales of a sub-block come out of the repacked scale bytes in a few vector
// ops for all 8 blocks. A shorter last group is read with masked loads (its missing lanes read
// as zero), so a row's every block goes through the same code: the plain q4_K trait that once
// multiplied those blocks ran at ~60 % of this layout's speed (26 vs 42 GB/s a core in L2;
// TinyLlama's ffn_down rows of 5632 are 2 groups + 6 blocks, 27 % of their bytes). maddubs sums of
// a sub-block stay in int16 (8 of them, |sum| <= 8 * 2 * 15 * 127 = 30480: q8_K activations never
// hold -128), then one madd applies the 8 blocks' scales. About 35 AVX2 instructions per block and
// row instead of ~60. A row has exactly the bytes of its q4_K original (row_bytes(Q4_K_R8, n) ==
// row_bytes(Q4_K, n)).
//
// Activations are quantized to q8_K exactly as for q4_K (same scales, same integers) and laid out
// to match (ActGroupK8), a whole group for the last blocks too, its missing lanes zero: per block
// its f32 scale, the sums of each 32-element sub-block (pairs per lane, for the mins) and the q
// bytes in the weights' order. The integer sums of every super-block are the plain q4_K ones;
// only the f32 summation order differs.
//
// Q4_K_R8 is kernel-internal: dtype_info() never returns it for a file's type id.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/formats/blocks.h"

namespace oxi::kernels {

inline constexpr size_t kK8Blocks = 8;  // super-blocks per group
inline constexpr size_t kK8Rows = 36;   // rows of a group, 4 bytes per block each
inline constexpr size_t kK8RowDm = 0, kK8RowScLo = 1, kK8RowMnLo = 2, kK8RowHi = 3;
// Row of qs for sub-block j, quarter i.
constexpr size_t k8_qs_row(size_t j, size_t i) noexcept {
  return 4 + 4 * j + i;
}
// Bytes of one row of a group of nb blocks, and of a whole group.
constexpr size_t k8_row_bytes(size_t nb) noexcept {
  return 4 * nb;
}
inline constexpr size_t kK8GroupBytes = kK8Rows * k8_row_bytes(kK8Blocks);
// Blocks of the group that starts at block `first` of a row of `blocks` (8, or fewer for a
// row's short last group).
constexpr size_t k8_group_blocks(size_t blocks, size_t first) noexcept {
  return blocks - first < kK8Blocks ? blocks - first : kK8Blocks;
}

struct ActGroupK8 {
  float d[kK8Blocks];
  // [p][2b], [p][2b + 1]: sums of sub-blocks 2p and 2p + 1 of block b
  int16_t sums[4][2 * kK8Blocks];
  // Never written or read: puts q on a cache line of its own, so that one 512-bit load takes
  // each 64-byte [j][i] pair without splitting a line (q4_k_r8_tiles.h).
  uint8_t pad[32];
  // [j][i][0][4b + m]: q[32j + 8i + m] of block b; [j][i][1]: q[32j + 8i + 4 + m]
  int8_t q[8][4][2][4 * kK8Blocks];
};

static_assert(kK8GroupBytes == kK8Blocks * sizeof(BlockQ4_K));
static_assert(sizeof(ActGroupK8) == 2240 && offsetof(ActGroupK8, q) % 64 == 0);

// Bytes of one prepared activation of n values (n a multiple of 256): a whole ActGroupK8 per
// group, the last one too.
size_t q4_k_r8_activation_bytes(size_t n) noexcept;
// q8_K-quantizes x[0..n) (as the q4_K activation) into the layout above.
void quantize_activation_q4_k_r8(const float* x, void* out, size_t n) noexcept;

// One row of n elements, q4_K -> q4_K_r8 and back; lossless, src and dst must not overlap.
void repack_row_q4_k_r8(const void* src, void* dst, size_t n) noexcept;
void unpack_row_q4_k_r8(const void* src, void* dst, size_t n) noexcept;

// One group of nb <= 8 blocks: q4_K -> this layout (144 * nb bytes at g) and back; and lane k of
// a group's activation from one q8_K block (q4_k_r8s.h builds its groups from these).
void pack_group_q4_k_r8(const BlockQ4_K* blocks, size_t nb, uint8_t* g) noexcept;
void unpack_group_q4_k_r8(const uint8_t* g, size_t nb, BlockQ4_K* blocks) noexcept;
void set_activation_lane_q4_k_r8(const BlockQ8_K& b, size_t k, ActGroupK8& a) noexcept;

// Row decoder and encoder (bit-identical to q4_K's on the same values).
void dequantize_row_q4_k_r8(const void* src, float* dst, size_t n) noexcept;
void quantize_row_q4_k_r8(const float* src, void* dst, size_t n) noexcept;

}  // namespace oxi::kernels
