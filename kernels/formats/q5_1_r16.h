// Q5_1_R16: q5_1 rows repacked for the matrix-vector product of decoding, q5_0_r16's
// arrangement (q5_0_r16.h) with each block's min beside its scale. q5_1 is whisper.cpp's
// quantized format for its tiny, base and small downloads (ggml-*-q5_1.bin).
//
//   WeightGroupQ5_1R16 (384 bytes = 16 q5_1 blocks, 6 cache lines):
//     d[16], m[16]   the f16 scales and mins together: one vcvtph2ps converts 8 of either
//     qh[b][k]       block b's fifth bits of chunk k (as q5_0_r16)
//     qs[k][4b+j]    = qs[4k + j] of block b (as q4_0_r16)
//
// A row's last m = blocks % 16 blocks form a short group in the same arrangement for m: d[m],
// m[m], qh[m][4], then qs[k][4m] (24m bytes): row_bytes(Q5_1_R16, n) == row_bytes(Q5_1, n).
//
// The activation is q8_1 (q8_0's values and scale, plus s = d * sum(q) in f16) in the same
// places (ActGroupQ8_1R16): a block's dot is d_w d_a sum(q_w q_a) + m_w s_a, as plain q5_1's.
//
// Q5_1_R16 is kernel-internal: dtype_info() never returns it for a file's type id.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/formats/blocks.h"
#include "kernels/formats/q4_0_r16.h"

namespace oxi::kernels {

struct WeightGroupQ5_1R16 {
  uint16_t d[kR16Blocks];
  uint16_t m[kR16Blocks];
  uint8_t qh[kR16Blocks][4];
  uint8_t qs[4][4 * kR16Blocks];
};

struct ActGroupQ8_1R16 {
  float d[kR16Blocks];             // the block's q8_1 scale (f16-rounded), as f32
  float s[kR16Blocks];             // its s = d * sum(q) (f16-rounded), as f32
  int8_t q[4][2][4 * kR16Blocks];  // as ActGroupR16's
};

static_assert(sizeof(WeightGroupQ5_1R16) == kR16Blocks * sizeof(BlockQ5_1));
static_assert(sizeof(ActGroupQ8_1R16) == 640);

// A group's fields: R16Fields<BlockQ5_1> (q4_0_r16.h).

// Bytes of one prepared activation of n values (n a multiple of 32).
size_t q5_1_r16_activation_bytes(size_t n) noexcept;
// q8_1-quantizes x[0..n) (as quantize_activation(Q5_1, ...) does) into ActGroupQ8_1R16s.
void quantize_activation_q5_1_r16(const float* x, void* out, size_t n) noexcept;

// One row of n elements, q5_1 -> q5_1_r16 and back; lossless, src and dst must not overlap.
void repack_row_q5_1_r16(const void* src, void* dst, size_t n) noexcept;
void unpack_row_q5_1_r16(const void* src, void* dst, size_t n) noexcept;

// Row decoder and encoder (bit-identical to q5_1's on the same values).
void dequantize_row_q5_1_r16(const void* src, float* dst, size_t n) noexcept;
void quantize_row_q5_1_r16(const float* src, void* dst, size_t n) noexcept;

}  // namespace oxi::kernels
