// Q4_1_R16: q4_1 rows repacked for the matrix-vector product of decoding, q4_0_r16's
// arrangement (q4_0_r16.h) with each block's min beside its scale, as q5_1_r16 (q5_1_r16.h)
// without the fifth bits. Plain q4_1 costs about as many instructions per block as plain q4_0
// and has no integer GEMM tile of its own, so its products were compute-bound (TinyLlama-shaped
// Q4_1: decode ~27 GB/s, pp512 ~68 tok/s on two cores; docs/benchmarks.md, forty-eighth
// session).
//
//   WeightGroupQ4_1R16 (320 bytes = 16 q4_1 blocks, 5 cache lines):
//     d[16], m[16]   the f16 scales and mins together: one vcvtph2ps converts 8 of either
//     qs[k][4b+j]    = qs[4k + j] of block b (as q4_0_r16)
//
// A row's last m = blocks % 16 blocks form a short group in the same arrangement for m: d[m],
// m[m], then qs[k][4m] (20m bytes): row_bytes(Q4_1_R16, n) == row_bytes(Q4_1, n).
//
// The activation is q5_1_r16's (ActGroupQ8_1R16: q8_1 values, d and s = d * sum(q)): a block's
// dot is d_w d_a sum(q_w q_a) + m_w s_a, as plain q4_1's. The tiles are q5_1_r16's
// (q5_r16_tiles.h, Q4_1Format: the nibbles without a fifth bit).
//
// Q4_1_R16 is kernel-internal: dtype_info() never returns it for a file's type id.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/formats/blocks.h"
#include "kernels/formats/q4_0_r16.h"

namespace oxi::kernels {

struct WeightGroupQ4_1R16 {
  uint16_t d[kR16Blocks];
  uint16_t m[kR16Blocks];
  uint8_t qs[4][4 * kR16Blocks];
};

static_assert(sizeof(WeightGroupQ4_1R16) == kR16Blocks * sizeof(BlockQ4_1));

// A group's fields: R16Fields<BlockQ4_1> (q4_0_r16.h).

// One row of n elements, q4_1 -> q4_1_r16 and back; lossless, src and dst must not overlap.
void repack_row_q4_1_r16(const void* src, void* dst, size_t n) noexcept;
void unpack_row_q4_1_r16(const void* src, void* dst, size_t n) noexcept;

// Row decoder and encoder (bit-identical to q4_1's on the same values).
void dequantize_row_q4_1_r16(const void* src, float* dst, size_t n) noexcept;
void quantize_row_q4_1_r16(const float* src, void* dst, size_t n) noexcept;

}  // namespace oxi::kernels
