// Q8_0_R16: q8_0 rows repacked for the matrix-vector product of decoding, in the style of
// Q4_0_R16 (q4_0_r16.h).
//
// Plain q8_0 costs ~12 instructions per 34-byte block and row on AVX2 (a dot whose 8 int32
// lanes all belong to one block, two scalar f16 scale conversions, a multiply and a broadcast
// per block), which kept its matvec near compute-bound on two cores: 71-75 % of the read
// bandwidth in a third of the runs. Repacked, the same bytes of a row come in groups of 16
// consecutive blocks:
//
//   WeightGroupQ8R16 (544 bytes = 16 q8_0 blocks):
//     d[16]        the 16 f16 scales together: one vcvtph2ps converts 8
//     qs[k][4b+j]  = qs[4k + j] of block b (k = 0..7, j = 0..3): 64 bytes per k, 4 per block
//
// so one 32-byte load holds 4 quant bytes of each of 8 blocks, each block in its own int32
// lane, and the per-block scale is a plain vector multiply after 8 such steps (~6.5
// instructions a block; on one core of the development VM, matvec on cache-resident rows went
// from 42 to 63-67 GB/s and gemm_q from 99 to 126 GOP/s). 544 = 17 * 32: in a 32-byte aligned row
// every scale vector and quant load of a group stays 32-byte aligned. The m blocks of a row
// that do not fill a group (m = blocks % 16) form a short group at the row's end, the same
// arrangement for m blocks: d[m], then qs[k][4m] for k = 0..7 (34m bytes; r16_scales /
// r16_quants in q4_0_r16.h). A row has exactly the bytes of its q8_0 original
// (row_bytes(Q8_0_R16, n) == row_bytes(Q8_0, n)).
//
// Activations are quantized to q8_0 exactly as for q8_0 (same scales, same integers) and laid
// out to match (ActGroupQ8R16): per block the f32 value of its f16 scale, 128 x the sum of its
// q (for the VNNI tiles), and the q bytes in the weight's interleave. A short group's
// activation is a whole ActGroupQ8R16 whose lanes past its m blocks are zero. The integer dot
// of every block is the plain q8_0 one; only the f32 summation order differs.
//
// Q8_0_R16 is kernel-internal: dtype_info() never returns it for a file's type id.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/formats/blocks.h"
#include "kernels/formats/q4_0_r16.h"

namespace oxi::kernels {

struct WeightGroupQ8R16 {
  uint16_t d[kR16Blocks];
  int8_t qs[8][4 * kR16Blocks];
};

struct ActGroupQ8R16 {
  float d[kR16Blocks];  // the block's q8_0 scale (f16-rounded), as f32
  // 128 x the sum of block b's q: with VNNI the tiles take a weight byte w as the unsigned
  // w + 128 (w ^ 0x80) and subtract this (q8_0_r16_tiles.h)
  int32_t sum128[kR16Blocks];
  int8_t q[8][4 * kR16Blocks];  // [k][4b + j]: q[4k + j] of block b
};

static_assert(sizeof(WeightGroupQ8R16) == kR16Blocks * sizeof(BlockQ8_0));
static_assert(sizeof(ActGroupQ8R16) == 640);

// Bytes of one prepared activation of n values (n a multiple of 32).
size_t q8_0_r16_activation_bytes(size_t n) noexcept;
// q8_0-quantizes x[0..n) (as quantize_row_q8_0 does) into the layout above.
void quantize_activation_q8_0_r16(const float* x, void* out, size_t n) noexcept;

// One row of n elements, q8_0 -> q8_0_r16 and back; lossless, src and dst must not overlap.
void repack_row_q8_0_r16(const void* src, void* dst, size_t n) noexcept;
void unpack_row_q8_0_r16(const void* src, void* dst, size_t n) noexcept;

// Row decoder and encoder (bit-identical to q8_0's on the same values).
void dequantize_row_q8_0_r16(const void* src, float* dst, size_t n) noexcept;
void quantize_row_q8_0_r16(const float* src, void* dst, size_t n) noexcept;

}  // namespace oxi::kernels
