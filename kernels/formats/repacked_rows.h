// The row functions of the repacked layouts with groups of blocks (q4_0_r16.cpp, q8_0_r16.cpp):
// a repacked row is whole groups of GroupBlocks plain blocks in the layout's own arrangement
// (Pack / Unpack convert one group), then the blocks that do not fill a group: a short group
// (PackShort / UnpackShort convert m of them) or, without those, left plain. Decoding and
// encoding go through the plain format's row codec, a group at a time.
#pragma once

#include <cstddef>
#include <cstring>

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

}  // namespace oxi::kernels
