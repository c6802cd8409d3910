// Q4_0_R16: q4_0 rows repacked for the matrix-vector product of decoding (the idea of
// llama.cpp's CPU repacking of q4_0 at load time; the layout is this project's own).
//
// Plain q4_0 costs ~15 instructions per 18-byte block and row on AVX2 (nibble unpack, a u8 x s8
// dot whose 8 lanes mix one block, a scalar f16 scale conversion and broadcast), which keeps
// its matvec compute-bound at 40-52 % of the read bandwidth on two cores. Repacked, the same
// bytes of a row come in groups of 16 consecutive blocks:
//
//   WeightGroupR16 (288 bytes = 16 q4_0 blocks):
//     d[16]        the 16 f16 scales together: one vcvtph2ps converts 8
//     qs[k][4b+j]  = qs[4k + j] of block b (k = 0..3, j = 0..3): 64 bytes per k, 4 per block
//
// so one 32-byte load holds 4 quant bytes of each of 8 blocks, each block in its own int32
// lane. maddubs + madd (or vpdpbusd) then leave every block's sum in its own lane: no
// horizontal adds, no shuffles, and the per-block scale is a plain vector multiply. The m
// blocks of a row that do not fill a group (m = blocks % 16) form a short group at the row's
// end, the same arrangement for m blocks: d[m], then qs[k][4m] for k = 0..3 (18m bytes; the
// kernels read it with masked loads). A row has exactly the bytes of its q4_0 original
// (row_bytes(Q4_0_R16, n) == row_bytes(Q4_0, n)). The short group used to be m plain q4_0
// blocks, multiplied by the plain q4_0 code at ~3x the instructions per byte: 12 of the 28
// blocks of Qwen2.5-0.5B's 896-wide rows (docs/benchmarks.md, thirty-eighth session).
//
// Activations are quantized to q8_0 exactly as for q4_0 (same scales, same integers) and laid
// out to match (ActGroupR16): per block the f32 value of its f16 scale, 8 * sum(q) (the q4_0
// zero point: dot = sum(nibble * q) - 8 * sum(q), so nibbles are used unsigned 0..15), and the
// q bytes paired with the low and the high nibbles of each weight chunk. A short group's
// activation is a whole ActGroupR16 whose lanes past its m blocks are zero (scale, zero point
// and q), so they add nothing. The integer dot of every block is the plain q4_0 one; only the
// f32 summation order differs.
//
// Q4_0_R16 is kernel-internal: dtype_info() never returns it for a file's type id.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/formats/blocks.h"

namespace oxi::kernels {

inline constexpr size_t kR16Blocks = 16;  // blocks per group

struct WeightGroupR16 {
  uint16_t d[kR16Blocks];
  uint8_t qs[4][4 * kR16Blocks];
};

struct ActGroupR16 {
  float d[kR16Blocks];             // the block's q8_0 scale (f16-rounded), as f32
  int32_t zero[kR16Blocks];        // 8 * sum(q) of the block (iq4_nl_r16.h: 128 * sum(q))
  int8_t q[4][2][4 * kR16Blocks];  // [k][0][4b + j]: q[4k + j] of block b; [k][1]: q[16 + 4k + j]
};

static_assert(sizeof(WeightGroupR16) == kR16Blocks * sizeof(BlockQ4_0));
static_assert(sizeof(ActGroupR16) == 640);

// A group of m <= 16 blocks at `group` (a whole one when m == 16): its m f16 scales, and its
// chunk k of quant bytes (4 per block). Byte: uint8_t or const uint8_t.
template <class Byte>
Byte* r16_scales(Byte* group) noexcept {
  return group;
}
template <class Byte>
Byte* r16_quants(Byte* group, size_t m, size_t k) noexcept {
  return group + 2 * m + 4 * m * k;
}

// The fields of every r16 layout's group of m blocks (q4_0_r16, q4_1_r16, q5_0_r16, q5_1_r16,
// q8_0_r16, iq4_nl_r16), in the order they come, each m blocks long: the f16 scales, the f16
// mins (blocks with an m: q4_1, q5_1), a byte of fifth bits per chunk (blocks with a qh: q5_0,
// q5_1), then the quants chunk by chunk, 4 bytes a block. Byte: (const) uint8_t.
template <class Block>
struct R16Fields {
  static constexpr bool kMins = requires(Block b) { b.m; };
  static constexpr bool kFifthBits = requires(Block b) { b.qh; };
  static constexpr size_t kChunks = sizeof(Block::qs) / 4;
  static constexpr size_t kMinsAt = 2;  // bytes per block before the field
  static constexpr size_t kFifthAt = kMinsAt + (kMins ? 2 : 0);
  static constexpr size_t kQuantsAt = kFifthAt + (kFifthBits ? 4 : 0);

  template <class Byte>
  static Byte* mins(Byte* group, size_t m) noexcept {
    return group + kMinsAt * m;
  }
  template <class Byte>
  static Byte* fifth_bits(Byte* group, size_t m) noexcept {
    return group + kFifthAt * m;
  }
  template <class Byte>
  static Byte* quants(Byte* group, size_t m, size_t k) noexcept {
    return group + kQuantsAt * m + 4 * m * k;
  }
};

// Block b's 32 activation values qs into a group's q (ActGroupR16's arrangement, which
// q5_1_r16.h's ActGroupQ8_1R16 shares).
void place_r16_activation_quants(const int8_t* qs, size_t b,
                                 int8_t (&q)[4][2][4 * kR16Blocks]) noexcept;

// A group's activation from m <= 16 q8_0 blocks, zero = zero_per_q * sum(q) (8 here, 128 for
// iq4_nl_r16.h); lanes past m are zero.
void fill_r16_activation_group(const BlockQ8_0* b, size_t m, int zero_per_q,
                               ActGroupR16& a) noexcept;

// Bytes of one prepared activation of n values (n a multiple of 32).
size_t q4_0_r16_activation_bytes(size_t n) noexcept;
// q8_0-quantizes x[0..n) (as quantize_row_q8_0 does) into the layout above.
void quantize_activation_q4_0_r16(const float* x, void* out, size_t n) noexcept;

// One row of n elements, q4_0 -> q4_0_r16 and back; lossless, src and dst must not overlap.
void repack_row_q4_0_r16(const void* src, void* dst, size_t n) noexcept;
void unpack_row_q4_0_r16(const void* src, void* dst, size_t n) noexcept;

// Row decoder and encoder (bit-identical to q4_0's on the same values).
void dequantize_row_q4_0_r16(const void* src, float* dst, size_t n) noexcept;
void quantize_row_q4_0_r16(const float* src, void* dst, size_t n) noexcept;

}  // namespace oxi::kernels
