// The row functions of the repacked layouts with groups of blocks (q4_0_r16.cpp, q8_0_r16.cpp):
// a repacked row is whole groups of GroupBlocks plain blocks in the layout's own arrangement
// (Pack / Unpack convert one group), then the blocks that do not fill a group: a short group
// (PackShort / UnpackShort convert m of them) or, without those, left plain. Decoding and
// encoding go through the plain format's row codec, a group at a time.
#pragma once

#include <cstddef>
#include <cstring>

#include "kernels/formats/q4_0_r16.h"
#include "kernels/formats/quant.h"

namespace oxi::kernels {

template <typename Block, typename Group, size_t GroupBlocks, size_t BlockElems, DType Plain,
          void (*Pack)(const Block*, Group&) noexcept,
          void (*Unpack)(const Group&, Block*) noexcept,
          void (*PackShort)(const Block*, size_t, void*) noexcept = nullptr,
          void (*UnpackShort)(const void*, size_t, Block*) noexcept = nullptr>
struct RepackedRows {
  static constexpr size_t kGroupElems = GroupBlocks * BlockElems;

  static size_t groups(size_t n) noexcept { return n / BlockElems / GroupBlocks; }
  static size_t tail_blocks(size_t n) noexcept { return n / BlockElems - groups(n) * GroupBlocks; }

  static void repack(const void* src, void* dst, size_t n) noexcept {
    const auto* b = static_cast<const Block*>(src);
    auto* g = static_cast<Group*>(dst);
    const size_t count = groups(n);
    for (size_t i = 0; i < count; ++i) Pack(b + i * GroupBlocks, g[i]);
    if constexpr (PackShort != nullptr)
      PackShort(b + count * GroupBlocks, tail_blocks(n), g + count);
    else
      std::memcpy(g + count, b + count * GroupBlocks, tail_blocks(n) * sizeof(Block));
  }

  static void unpack(const void* src, void* dst, size_t n) noexcept {
    const auto* g = static_cast<const Group*>(src);
    auto* b = static_cast<Block*>(dst);
    const size_t count = groups(n);
    for (size_t i = 0; i < count; ++i) Unpack(g[i], b + i * GroupBlocks);
    if constexpr (UnpackShort != nullptr)
      UnpackShort(g + count, tail_blocks(n), b + count * GroupBlocks);
    else
      std::memcpy(b + count * GroupBlocks, g + count, tail_blocks(n) * sizeof(Block));
  }

  static void dequantize(const void* src, float* dst, size_t n) noexcept {
    const RowDecoder plain = row_decoder(Plain);
    const auto* g = static_cast<const Group*>(src);
    const size_t count = groups(n);
    for (size_t i = 0; i < count; ++i, dst += kGroupElems) {
      Block b[GroupBlocks];
      Unpack(g[i], b);
      plain(b, dst, kGroupElems);
    }
    if constexpr (UnpackShort != nullptr) {
      Block b[GroupBlocks];
      UnpackShort(g + count, tail_blocks(n), b);
      plain(b, dst, n - count * kGroupElems);
    } else {
      plain(g + count, dst, n - count * kGroupElems);
    }
  }

  static void quantize(const float* src, void* dst, size_t n) noexcept {
    const RowEncoder plain = row_encoder(Plain);
    auto* g = static_cast<Group*>(dst);
    const size_t count = groups(n);
    for (size_t i = 0; i < count; ++i, src += kGroupElems) {
      Block b[GroupBlocks];
      plain(src, b, kGroupElems);
      Pack(b, g[i]);
    }
    if constexpr (PackShort != nullptr) {
      Block b[GroupBlocks];
      plain(src, b, n - count * kGroupElems);
      PackShort(b, tail_blocks(n), g + count);
    } else {
      plain(src, g + count, n - count * kGroupElems);
    }
  }
};

// The r16 layouts' groups (q4_0_r16.h, q8_0_r16.h): m blocks into a group of m (a whole group
// when m == 16, a row's short group otherwise), d[m] then qs[k][4m], chunk k being bytes
// 4k .. 4k + 3 of each block's quants; and back.
template <class Block>
void pack_r16_blocks(const Block* b, size_t m, void* dst) noexcept {
  constexpr size_t kChunks = sizeof(b->qs) / 4;
  auto* g = static_cast<uint8_t*>(dst);
  for (size_t i = 0; i < m; ++i) {
    std::memcpy(r16_scales(g) + 2 * i, &b[i].d, 2);
    for (size_t k = 0; k < kChunks; ++k)
      std::memcpy(r16_quants(g, m, k) + 4 * i, &b[i].qs[4 * k], 4);
  }
}

template <class Block>
void unpack_r16_blocks(const void* src, size_t m, Block* b) noexcept {
  constexpr size_t kChunks = sizeof(b->qs) / 4;
  const auto* g = static_cast<const uint8_t*>(src);
  for (size_t i = 0; i < m; ++i) {
    std::memcpy(&b[i].d, r16_scales(g) + 2 * i, 2);
    for (size_t k = 0; k < kChunks; ++k)
      std::memcpy(&b[i].qs[4 * k], r16_quants(g, m, k) + 4 * i, 4);
  }
}

template <class Block, class Group>
void pack_r16_group(const Block* b, Group& g) noexcept {
  static_assert(sizeof(Group) == kR16Blocks * sizeof(Block));
  pack_r16_blocks(b, kR16Blocks, &g);
}

template <class Block, class Group>
void unpack_r16_group(const Group& g, Block* b) noexcept {
  unpack_r16_blocks(&g, kR16Blocks, b);
}

// The row functions of an r16 layout of plain format Plain.
template <class Block, class Group, DType Plain, size_t BlockElems>
using R16Rows =
    RepackedRows<Block, Group, kR16Blocks, BlockElems, Plain, pack_r16_group<Block, Group>,
                 unpack_r16_group<Block, Group>, pack_r16_blocks<Block>, unpack_r16_blocks<Block>>;

}  // namespace oxi::kernels
