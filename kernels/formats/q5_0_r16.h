// Q5_0_R16: q5_0 rows repacked for the matrix-vector product of decoding, in q4_0_r16's
// arrangement (q4_0_r16.h) with each block's fifth bits beside its scale.
//
// Plain q5_0 costs ~20 AVX2 instructions per 22-byte block and row (nibble unpack, the 32 fifth
// bits expanded to bytes, a u8 x s8 dot whose lanes mix one block, a scalar f16 scale): about
// half of the read bandwidth in decode. q5_0 is what llama.cpp writes for q4_K where a row is
// not a multiple of 256 (Qwen2.5-0.5B's 896-wide rows in its K-quant files). Repacked, a row's
// bytes come in groups of 16 consecutive blocks:
//
//   WeightGroupQ5R16 (352 bytes = 16 q5_0 blocks):
//     d[16]        the 16 f16 scales together: one vcvtph2ps converts 8
//     qh[b][k]     block b's fifth bits of chunk k: bits 0-3 those of elements 4k .. 4k + 3 (the
//                  low nibbles of chunk k), bits 4-7 those of 16 + 4k .. 16 + 4k + 3 (the high)
//     qs[k][4b+j]  = qs[4k + j] of block b (k = 0..3, j = 0..3), as in q4_0_r16
//
// so one 32-bit lane of a load holds block b's four fifth-bit bytes (one vpshufb spreads chunk
// k's byte over the lane's 4 quant bytes, a test against 1, 2, 4, 8 / 16 .. 128 picks each
// element's bit), and the values 0..31 (= q5_0 value + 16) meet the activation unsigned, with
// 16 * sum(q) as its zero. A row's last m = blocks % 16 blocks form a short group in the same
// arrangement for m: d[m], qh[m][4], then qs[k][4m] (22m bytes): row_bytes(Q5_0_R16, n) ==
// row_bytes(Q5_0, n).
//
// The activation is q4_0_r16's ActGroupR16 (q8_0 values rearranged) with zero = 16 * sum(q).
//
// Q5_0_R16 is kernel-internal: dtype_info() never returns it for a file's type id.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/formats/blocks.h"
#include "kernels/formats/q4_0_r16.h"

namespace oxi::kernels {

struct WeightGroupQ5R16 {
  uint16_t d[kR16Blocks];
  uint8_t qh[kR16Blocks][4];
  uint8_t qs[4][4 * kR16Blocks];
};

static_assert(sizeof(WeightGroupQ5R16) == kR16Blocks * sizeof(BlockQ5_0));

// A group's fields: R16Fields<BlockQ5_0> (q4_0_r16.h).

// Chunk k's fifth-bit byte from a q5_0 block's qh (little-endian bits), and back.
constexpr uint8_t q5_r16_fifth_byte(uint32_t qh, size_t k) noexcept {
  return static_cast<uint8_t>((qh >> (4 * k) & 0xF) | (qh >> (16 + 4 * k) & 0xF) << 4);
}
constexpr uint32_t q5_0_qh_of(const uint8_t (&fifth)[4]) noexcept {
  uint32_t qh = 0;
  for (size_t k = 0; k < 4; ++k)
    qh |= (fifth[k] & 0xFu) << (4 * k) | (fifth[k] >> 4u) << (16 + 4 * k);
  return qh;
}

// Bytes of one prepared activation of n values (n a multiple of 32).
size_t q5_0_r16_activation_bytes(size_t n) noexcept;
// q8_0-quantizes x[0..n) (as quantize_row_q8_0 does) into ActGroupR16s with zero 16 * sum(q).
void quantize_activation_q5_0_r16(const float* x, void* out, size_t n) noexcept;

// One row of n elements, q5_0 -> q5_0_r16 and back; lossless, src and dst must not overlap.
void repack_row_q5_0_r16(const void* src, void* dst, size_t n) noexcept;
void unpack_row_q5_0_r16(const void* src, void* dst, size_t n) noexcept;

// Row decoder and encoder (bit-identical to q5_0's on the same values).
void dequantize_row_q5_0_r16(const void* src, float* dst, size_t n) noexcept;
void quantize_row_q5_0_r16(const float* src, void* dst, size_t n) noexcept;

}  // namespace oxi::kernels
