// The row functions of the repacked layouts. The r16 layouts (q4_0_r16.cpp, q8_0_r16.cpp, ...): a
// repacked row is whole groups of 16 plain blocks in the layout's arrangement, then a short group
// of the m blocks left in the same arrangement for m (q4_0_r16.h): d[m], the other per-block
// fields, then qs[k][4m], chunk k being bytes 4k .. 4k + 3 of each block's quants. Decoding and
// encoding go through the plain format's row codec, a group at a time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/formats/q4_0_r16.h"
#include "kernels/formats/q4_k_r8.h"
#include "kernels/formats/q5_0_r16.h"
#include "kernels/formats/quant.h"

namespace oxi::kernels {

// m blocks into a group of m (a whole group when m == 16, a row's short group otherwise), in the
// fields R16Fields lists (q4_0_r16.h).
template <class Block>
void pack_r16_blocks(const Block* b, size_t m, void* dst) noexcept {
  using F = R16Fields<Block>;
  auto* g = static_cast<uint8_t*>(dst);
  for (size_t i = 0; i < m; ++i) {
    std::memcpy(g + 2 * i, &b[i].d, 2);
    if constexpr (F::kMins) std::memcpy(F::mins(g, m) + 2 * i, &b[i].m, 2);
    if constexpr (F::kFifthBits) {
      uint32_t qh;
      std::memcpy(&qh, b[i].qh, 4);
      for (size_t k = 0; k < 4; ++k) F::fifth_bits(g, m)[4 * i + k] = q5_r16_fifth_byte(qh, k);
    }
    for (size_t k = 0; k < F::kChunks; ++k)
      std::memcpy(F::quants(g, m, k) + 4 * i, &b[i].qs[4 * k], 4);
  }
}

// And back.
template <class Block>
void unpack_r16_blocks(const void* src, size_t m, Block* b) noexcept {
  using F = R16Fields<Block>;
  const auto* g = static_cast<const uint8_t*>(src);
  for (size_t i = 0; i < m; ++i) {
    std::memcpy(&b[i].d, g + 2 * i, 2);
    if constexpr (F::kMins) std::memcpy(&b[i].m, F::mins(g, m) + 2 * i, 2);
    if constexpr (F::kFifthBits) {
      uint8_t bytes[4];
      std::memcpy(bytes, F::fifth_bits(g, m) + 4 * i, 4);
      const uint32_t qh = q5_0_qh_of(bytes);
      std::memcpy(b[i].qh, &qh, 4);
    }
    for (size_t k = 0; k < F::kChunks; ++k)
      std::memcpy(&b[i].qs[4 * k], F::quants(g, m, k) + 4 * i, 4);
  }
}

// Rows of n elements of plain format Plain (Block, BlockElems per block) in the r16 layout
// whose whole group is Group, Pack and Unpack converting m blocks to and from a group of m (the
// arrangement above unless given: q5_0_r16.cpp's has the fifth bits too).
template <class Block, class Group, DType Plain, size_t BlockElems,
          void (*Pack)(const Block*, size_t, void*) noexcept = pack_r16_blocks<Block>,
          void (*Unpack)(const void*, size_t, Block*) noexcept = unpack_r16_blocks<Block>>
struct R16Rows {
  static_assert(sizeof(Group) == kR16Blocks * sizeof(Block));
  static constexpr size_t kGroupElems = kR16Blocks * BlockElems;

  static size_t groups(size_t n) noexcept { return n / BlockElems / kR16Blocks; }
  static size_t short_blocks(size_t n) noexcept { return n / BlockElems % kR16Blocks; }

  static void repack(const void* src, void* dst, size_t n) noexcept {
    const auto* b = static_cast<const Block*>(src);
    auto* g = static_cast<Group*>(dst);
    const size_t count = groups(n);
    for (size_t i = 0; i < count; ++i) pack_r16_blocks(b + i * kR16Blocks, kR16Blocks, g + i);
    pack_r16_blocks(b + count * kR16Blocks, short_blocks(n), g + count);
  }

  static void unpack(const void* src, void* dst, size_t n) noexcept {
    const auto* g = static_cast<const Group*>(src);
    auto* b = static_cast<Block*>(dst);
    const size_t count = groups(n);
    for (size_t i = 0; i < count; ++i) unpack_r16_blocks(g + i, kR16Blocks, b + i * kR16Blocks);
    unpack_r16_blocks(g + count, short_blocks(n), b + count * kR16Blocks);
  }

  static void dequantize(const void* src, float* dst, size_t n) noexcept {
    const RowDecoder plain = row_decoder(Plain);
    const auto* g = static_cast<const Group*>(src);
    for (size_t i = 0; i * kGroupElems < n; ++i, dst += kGroupElems) {
      const size_t m = std::min(kR16Blocks, n / BlockElems - i * kR16Blocks);
      Block b[kR16Blocks];
      unpack_r16_blocks(g + i, m, b);
      plain(b, dst, m * BlockElems);
    }
  }

  static void quantize(const float* src, void* dst, size_t n) noexcept {
    const RowEncoder plain = row_encoder(Plain);
    auto* g = static_cast<Group*>(dst);
    for (size_t i = 0; i * kGroupElems < n; ++i, src += kGroupElems) {
      const size_t m = std::min(kR16Blocks, n / BlockElems - i * kR16Blocks);
      Block b[kR16Blocks];
      plain(src, b, m * BlockElems);
      pack_r16_blocks(b, m, g + i);
    }
  }
};

// Rows of n elements of plain format Plain (super-blocks of 256, type Block) in a layout of
// groups of 8 super-blocks (q4_k_r8.h, iq4_xs_r8.h): group i of a row starts at byte
// i * 8 * sizeof(Block), block 8i of the plain row, and the row's last group may be short. Pack
// and Unpack convert one group of nb <= 8 blocks.
template <class Block, void (*Pack)(const Block*, size_t, uint8_t*) noexcept,
          void (*Unpack)(const uint8_t*, size_t, Block*) noexcept, DType Plain>
struct K8Rows {
  static void repack(const void* src, void* dst, size_t n) noexcept {
    const size_t blocks = n / QK_K;
    const auto* b = static_cast<const Block*>(src);
    auto* g = static_cast<uint8_t*>(dst);
    for (size_t first = 0; first < blocks; first += kK8Blocks)
      Pack(b + first, k8_group_blocks(blocks, first), g + first * sizeof(Block));
  }

  static void unpack(const void* src, void* dst, size_t n) noexcept {
    const size_t blocks = n / QK_K;
    const auto* g = static_cast<const uint8_t*>(src);
    auto* b = static_cast<Block*>(dst);
    for (size_t first = 0; first < blocks; first += kK8Blocks)
      Unpack(g + first * sizeof(Block), k8_group_blocks(blocks, first), b + first);
  }

  // Decoding and encoding through the plain format's own row codec, a group at a time.
  static void dequantize(const void* src, float* dst, size_t n) noexcept {
    const size_t blocks = n / QK_K;
    const auto* g = static_cast<const uint8_t*>(src);
    const RowDecoder plain = row_decoder(Plain);
    for (size_t first = 0; first < blocks; first += kK8Blocks) {
      const size_t nb = k8_group_blocks(blocks, first);
      Block b[kK8Blocks];
      Unpack(g + first * sizeof(Block), nb, b);
      plain(b, dst + first * QK_K, nb * QK_K);
    }
  }

  static void quantize(const float* src, void* dst, size_t n) noexcept {
    const size_t blocks = n / QK_K;
    auto* g = static_cast<uint8_t*>(dst);
    const RowEncoder plain = row_encoder(Plain);
    for (size_t first = 0; first < blocks; first += kK8Blocks) {
      const size_t nb = k8_group_blocks(blocks, first);
      Block b[kK8Blocks];
      plain(src + first * QK_K, b, nb * QK_K);
      Pack(b, nb, g + first * sizeof(Block));
    }
  }
};

// The activation of a layout in groups of 8 super-blocks (AGroup per group: q4_K_r8's ActGroupK8,
// q3_K_r8's ActGroupK16; the last one holding a short group's blocks): its bytes for n values,
// and x[0, n) quantized to q8_K as for `plain` into it, SetLane laying out lane k from block k.
template <class AGroup>
size_t k8_activation_bytes(size_t n) noexcept {
  return (n / QK_K + kK8Blocks - 1) / kK8Blocks * sizeof(AGroup);
}

template <class AGroup, void (*SetLane)(const BlockQ8_K&, size_t, AGroup&) noexcept>
void quantize_k8_activation(DType plain, const float* x, void* out, size_t n) noexcept {
  const size_t blocks = n / QK_K;
  auto* a = static_cast<AGroup*>(out);
  for (size_t first = 0; first < blocks; first += kK8Blocks, ++a) {
    const size_t nb = k8_group_blocks(blocks, first);
    BlockQ8_K b[kK8Blocks];
    quantize_activation(plain, x + first * QK_K, b, nb * QK_K);
    // A short last group's missing lanes are zero: weights read as zero there meet zeros (an
    // uninitialised scale could be a NaN, and 0 * NaN is not 0). A whole group's lanes are all
    // written below.
    if (nb < kK8Blocks) std::memset(a, 0, sizeof(*a));
    for (size_t k = 0; k < nb; ++k) SetLane(b[k], k, *a);
  }
}

// The activation of an r16 layout (AGroup per group of 16 q8_0 or q8_1 blocks, ABlock, the last
// one holding the short group's): its bytes for n values, and x[0, n) quantized into it, Fill
// laying out each group from its m <= 16 blocks (lanes past m zero).
template <class AGroup>
size_t r16_activation_bytes(size_t n) noexcept {
  return (n / QK + kR16Blocks - 1) / kR16Blocks * sizeof(AGroup);
}

// x[0, n) as the activation blocks: q8_0, or q8_1 as plain q5_1's (q5_1_r16.h).
inline void quantize_activation_blocks(const float* x, BlockQ8_0* b, size_t n) noexcept {
  format_kernels().quantize_q8_0(x, b, n);
}
inline void quantize_activation_blocks(const float* x, BlockQ8_1* b, size_t n) noexcept {
  quantize_activation(DType::Q5_1, x, b, n);
}

template <class AGroup, class ABlock, void (*Fill)(const ABlock*, size_t, AGroup&) noexcept>
void quantize_r16_activation(const float* x, void* out, size_t n) noexcept {
  const size_t blocks = n / QK;
  auto* a = static_cast<AGroup*>(out);
  for (size_t first = 0; first < blocks; first += kR16Blocks, ++a, x += kR16Blocks * QK) {
    const size_t m = std::min(kR16Blocks, blocks - first);
    ABlock b[kR16Blocks];
    quantize_activation_blocks(x, b, m * QK);
    Fill(b, m, *a);
  }
}

}  // namespace oxi::kernels
