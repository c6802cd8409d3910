// Q3_K_R8: q3_K rows repacked for the products (the idea of q4_K_r8, q4_k_r8.h: groups of 8
// consecutive super-blocks of a row, each super-block in its own int32 lane; this layout is the
// project's own).
//
// Plain q3_K (16 groups of 16 elements a super-block, a signed 6-bit scale each, two low bits
// of each element in qs and the third in hmask) costs ~70 vector ops per 110-byte block and row
// on avx512 (per 64 elements: broadcast loads and variable shifts for the low bits and again for
// the high bits, a permute of the group scales, maddubs, vpdpwssd); one core multiplies it at
// ~11 GB/s in L2 (`bench kernels`), slower than memory feeds two cores, so a Q3_K_* file decodes
// arithmetic-bound. Multiplied by hand-written tiles on AVX2 and avx512 (q3_k_r8_tiles.h).
// Repacked, a group of nb <= 8 blocks (the last group of a row holds the
// blocks % 8 that remain, when any) is, with rows of 4 * nb bytes (4 bytes of every block):
//
//   d                2 * nb bytes: the blocks' f16 scales
//   scale rows 0-2   byte 4b + m of block b: row 0 the low 4 bits of scale m (low nibble) and
//                    m + 4 (high), row 1 those of scales 8 + m and 12 + m, row 2 the top 2 bits
//                    of scales m, m + 4, m + 8, m + 12 (bits 0-1, 2-3, 4-5, 6-7)
//   then per pair p = 0..7 of element groups (A = 2p: elements 32p .. 32p + 15, B = 2p + 1: the
//   16 after), 12 * nb bytes:
//     2 quants rows  row h, byte 4b + m, bits 2s .. 2s + 1: the low two bits of element
//                    4 (2h + s / 2) + m of group A (s even) or B (s odd) of block b
//     4 fields       of nb bytes, field c: the third bits of chunk c (below) as one little-endian
//                    integer of 8 * nb bits: bit 4b + m for element 4c + m of group A of block b,
//                    bit 4nb + 4b + m for element 4c + m of group B
//
// Chunk c = 2h + k of pair p is what one 512-bit product takes: quants row h broadcast to both
// halves and shifted by 4k in the lower half, 4k + 2 in the upper, its two bits kept (group A's
// elements 4c .. 4c + 3 in the lower half's lane b, group B's in the upper), the third bit added
// as 4 under the field's 64-bit mask (a whole group's field is that mask as it is; a short
// group's has its halves 4 * nb bits apart), then one vpdpbusd against the activation's 64 bytes
// of the same elements. A pair's two scales (A's in the lower half, B's in the upper) apply to
// its four chunks' sums at once. A row has exactly the bytes of its q3_K original.
//
// The activation (ActGroupK16) is q8_K's values (the same scales and integers as for q3_K) laid
// out to match, a whole group for the last blocks too, its missing lanes zero: per block its f32
// scale, each pair's 16-element group sums times 4 as int32 (A's in lanes 0-7, B's in 8-15) and the
// q bytes of every chunk. The integer sums of every super-block are the plain q3_K ones; only the
// f32 summation order differs.
//
// Q3_K_R8 is kernel-internal: dtype_info() never returns it for a file's type id.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/formats/blocks.h"
#include "kernels/formats/q4_k_r8.h"

namespace oxi::kernels {

inline constexpr size_t kK16Pairs = 8;   // pairs of 16-element groups a super-block
inline constexpr size_t kK16Chunks = 4;  // 512-bit products a pair

// Offsets in a group of nb blocks: the scale rows, quants row h of pair p (4 * nb bytes) and the
// third-bits field of chunk c of pair p (nb bytes).
constexpr size_t k3_scale_row(size_t nb, size_t r) noexcept {
  return 2 * nb + r * k8_row_bytes(nb);
}
constexpr size_t k3_quants_row(size_t nb, size_t p, size_t h) noexcept {
  return 14 * nb + p * 12 * nb + h * k8_row_bytes(nb);
}
constexpr size_t k3_high_field(size_t nb, size_t p, size_t c) noexcept {
  return k3_quants_row(nb, p, 2) + c * nb;
}
inline constexpr size_t kK3GroupBytes = k3_quants_row(kK8Blocks, kK16Pairs, 0);
static_assert(kK3GroupBytes == kK8Blocks * sizeof(BlockQ3_K));

// Element (0..255) of a block that chunk c of pair p holds at byte m of a lane, in group A
// (upper == false) or B.
constexpr size_t k3_chunk_element(size_t p, size_t c, size_t m, bool upper) noexcept {
  return 32 * p + (upper ? 16 : 0) + 4 * c + m;
}

// The field (bits 2s, 2s + 1 of a byte of quants row c / 2) that holds chunk c's element of
// group A (upper == false) or B, and those two bits of byte m of block b's lane in that row.
constexpr size_t k16_field(size_t c, bool upper) noexcept {
  return 2 * (c % 2) + (upper ? 1 : 0);
}
inline int k16_low_bits(const uint8_t* row, size_t b, size_t c, size_t m, bool upper) noexcept {
  return (row[4 * b + m] >> (2 * k16_field(c, upper))) & 3;
}

struct ActGroupK16 {
  float d[kK8Blocks];
  // Never written or read: puts sums and q on cache lines of their own.
  uint8_t pad[32];
  // [p][b]: 4 x the sum of the q of group 2p of block b (the 4 every q3_K level is biased by;
  // q2_K_r8 divides it out of its mins' sums); [p][8 + b]: of group 2p + 1
  int32_t sums4[kK16Pairs][2 * kK8Blocks];
  // [p][c][4b + m]: q of element k3_chunk_element(p, c, m, false) of block b; [p][c][32 + 4b + m]:
  // of element k3_chunk_element(p, c, m, true)
  int8_t q[kK16Pairs][kK16Chunks][64];
};
static_assert(sizeof(ActGroupK16) == 2624 && offsetof(ActGroupK16, sums4) % 64 == 0 &&
              offsetof(ActGroupK16, q) % 64 == 0);

// Block b's two bits of every element of pair p (from the 64 qs bytes of a q2_K or q3_K block,
// which arrange them alike) into the two quants rows at `rows` of a group of nb blocks (OR'ed
// into zeroed rows), and back (OR'ed into zeroed qs).
void pack_k16_quants(const uint8_t* qs, size_t nb, size_t b, size_t p, uint8_t* rows) noexcept;
void unpack_k16_quants(const uint8_t* rows, size_t nb, size_t b, size_t p, uint8_t* qs) noexcept;
// Lane k of a group's activation from one q8_K block.
void set_activation_lane_q3_k_r8(const BlockQ8_K& b, size_t k, ActGroupK16& a) noexcept;

// Bytes of one prepared activation of n values (n a multiple of 256): a whole ActGroupK16 per
// group, the last one too.
size_t q3_k_r8_activation_bytes(size_t n) noexcept;
// q8_K-quantizes x[0..n) (as the q3_K activation) into the layout above.
void quantize_activation_q3_k_r8(const float* x, void* out, size_t n) noexcept;

// One row of n elements, q3_K -> q3_K_r8 and back; lossless, src and dst must not overlap.
void repack_row_q3_k_r8(const void* src, void* dst, size_t n) noexcept;
void unpack_row_q3_k_r8(const void* src, void* dst, size_t n) noexcept;

// Row decoder and encoder (bit-identical to q3_K's on the same values).
void dequantize_row_q3_k_r8(const void* src, float* dst, size_t n) noexcept;
void quantize_row_q3_k_r8(const float* src, void* dst, size_t n) noexcept;

}  // namespace oxi::kernels
