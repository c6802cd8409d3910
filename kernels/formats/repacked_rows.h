// The row functions of the repacked layouts with a plain tail (q4_0_r16.cpp, q8_0_r16.cpp): a
// repacked row is whole groups of GroupBlocks plain blocks in the layout's own arrangement
// (Pack / Unpack convert one group), then the blocks that do not fill a group, left plain.
// Decoding and encoding go through the plain format's row codec, a group at a time.
#pragma once

#include <cstddef>
#include <cstring>

#include "kernels/formats/quant.h"

namespace oxi::kernels {

template <typename Block, typename Group, size_t GroupBlocks, size_t BlockElems, DType Plain,
          void (*Pack)(const Block*, Group&) noexcept,
          void (*Unpack)(const Group&, Block*) noexcept>
struct RepackedRows {
  static constexpr size_t kGroupElems = GroupBlocks * BlockElems;

  static size_t groups(size_t n) noexcept { return n / BlockElems / GroupBlocks; }
  static size_t tail_blocks(size_t n) noexcept { return n / BlockElems - groups(n) * GroupBlocks; }

  static void repack(const void* src, void* dst, size_t n) noexcept {
    const auto* b = static_cast<const Block*>(src);
    auto* g = static_cast<Group*>(dst);
    const size_t count = groups(n);
    for (size_t i = 0; i < count; ++i) Pack(b + i * GroupBlocks, g[i]);
    std::memcpy(g + count, b + count * GroupBlocks, tail_blocks(n) * sizeof(Block));
  }

  static void unpack(const void* src, void* dst, size_t n) noexcept {
    const auto* g = static_cast<const Group*>(src);
    auto* b = static_cast<Block*>(dst);
    const size_t count = groups(n);
    for (size_t i = 0; i < count; ++i) Unpack(g[i], b + i * GroupBlocks);
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
    plain(g + count, dst, n - count * kGroupElems);
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
    plain(src, g + count, n - count * kGroupElems);
  }
};

}  // namespace oxi::kernels
