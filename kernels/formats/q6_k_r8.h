// Q6_K_R8: q6_K rows repacked for the products (q4_K_r8's arrangement, q4_k_r8.h: groups of 8
// super-blocks, one per int32 lane), with an activation layout of its own (ActGroupQ6K8).
//
// Plain q6_K reduces each 210-byte super-block on its own: its 16 scales widened, its lanes
// folded, its -32 offset taken off through the activation's sums, then an f32 multiply-add, ~50
// avx512 instructions a block (traits_avx2.h). In Q4_K_M files q6_K holds a quarter of decode's
// bytes (the output matrix, and attn_v / ffn_down in a third of the layers), and its products
// ran at ~52 GB/s against q4_K_r8's ~57 (docs/benchmarks.md, forty-fifth session). Repacked, the
// bytes of a row come in groups of 8 consecutive super-blocks (the last group of a row holds
// the blocks % 8 that remain, when any), each super-block in its own int32 lane, so the scales,
// the offset and the f32 step are done once for 8 blocks. A group of nb <= 8 blocks is 52 rows
// of 4 * nb bytes, 4 bytes of every row per block, then the blocks' f16 scales:
//
//   row r (r < 4)        the scales of sub-blocks 4r .. 4r + 3 (byte k: sub-block 4r + k)
//   then per pair of sub-blocks (2i, 2i + 1), six rows from 4 + 6i:
//   ql row p of sub-block s (4 + 6i + 2 (s % 2) + p, p < 2): byte m holds the low four bits of
//                        element 16s + 8p + m (low nibble) and of 16s + 8p + 4 + m (high nibble)
//   qh row of sub-block s (4 + 6i + 4 + s % 2): bits 2k and 2k + 1 of byte m are the top two
//                        bits of element 16s + 4k + m (k < 4: ql's row p = k / 2, nibble k % 2)
//   then d[nb]           the blocks' f16 scales (2 * nb bytes)
//
// so sub-block s (16 elements) of the 8 blocks is the 64 bytes of its two ql rows (one 512-bit
// load, 128 elements, on a cache line of its own where the group starts on one) and the 32 bytes
// of its qh row, and a group is read in address order: with the qh rows after all the ql rows and
// the scales last, decode streamed these matrices slower than plain q6_K (docs/benchmarks.md,
// forty-fifth session). A whole group is 1680 bytes. A shorter last group is read with masked
// loads (its missing lanes read as zero). A row has exactly the bytes of its q6_K original.
//
// Activations are quantized to q8_K exactly as for q6_K (same scales, same integers) and laid out
// to match: per block its f32 scale, the sums of its 16-element sub-blocks, and the q bytes in
// the weights' order. The integer sum of every super-block is the plain q6_K one (sum_s sc_s *
// (sum q * x - 32 * bsum_s)); only the f32 summation order differs.
//
// Q6_K_R8 is kernel-internal: dtype_info() never returns it for a file's type id.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/formats/blocks.h"
#include "kernels/formats/q4_k_r8.h"

namespace oxi::kernels {

inline constexpr size_t kQ6K8Rows = 52;  // rows of a group, 4 bytes per block each
// Row of the scales of sub-blocks 4r..4r+3; of ql for sub-block s, half p; of qh for sub-block s.
constexpr size_t q6k8_scale_row(size_t r) noexcept {
  return r;
}
constexpr size_t q6k8_ql_row(size_t s, size_t p) noexcept {
  return 4 + 6 * (s / 2) + 2 * (s % 2) + p;
}
constexpr size_t q6k8_qh_row(size_t s) noexcept {
  return 4 + 6 * (s / 2) + 4 + s % 2;
}
// Byte offset of the f16 scales in a group of nb blocks.
constexpr size_t q6k8_d_offset(size_t nb) noexcept {
  return kQ6K8Rows * k8_row_bytes(nb);
}
inline constexpr size_t kQ6K8GroupBytes = kK8Blocks * sizeof(BlockQ6_K);
static_assert(q6k8_d_offset(kK8Blocks) + 2 * kK8Blocks == kQ6K8GroupBytes);

struct ActGroupQ6K8 {
  float d[kK8Blocks];
  // [r][4b + k]: the sum of the 16 q of sub-block 4r + k of block b (the scale rows' order)
  int16_t sums[4][4 * kK8Blocks];
  // Never written or read: puts q on a cache line of its own (one 512-bit load per [s][h]).
  uint8_t pad[32];
  // [s][h][p][4b + m]: q[16s + 8p + 4h + m] of block b (ql's nibble h of row 2s + p)
  int8_t q[16][2][2][4 * kK8Blocks];
};
static_assert(sizeof(ActGroupQ6K8) == 2368 && offsetof(ActGroupQ6K8, q) % 64 == 0);

// Bytes of one prepared activation of n values (n a multiple of 256): a whole ActGroupQ6K8 per
// group, the last one too.
size_t q6_k_r8_activation_bytes(size_t n) noexcept;
// q8_K-quantizes x[0..n) (as the q6_K activation) into the layout above.
void quantize_activation_q6_k_r8(const float* x, void* out, size_t n) noexcept;

// One row of n elements, q6_K -> q6_K_r8 and back; lossless, src and dst must not overlap.
void repack_row_q6_k_r8(const void* src, void* dst, size_t n) noexcept;
void unpack_row_q6_k_r8(const void* src, void* dst, size_t n) noexcept;

// Row decoder and encoder (bit-identical to q6_K's on the same values).
void dequantize_row_q6_k_r8(const void* src, float* dst, size_t n) noexcept;
void quantize_row_q6_k_r8(const float* src, void* dst, size_t n) noexcept;

}  // namespace oxi::kernels
