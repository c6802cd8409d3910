// IQ4_XS_R8 rows (iq4_xs_r8.h): repacking to and from iq4_xs, and row decoding and encoding
// through iq4_xs's own (so they are bit-identical to it), through K8Rows (repacked_rows.h).
#include "kernels/formats/iq4_xs_r8.h"

#include <algorithm>
#include <cstring>

#include "kernels/formats/quant.h"
#include "kernels/formats/repacked_rows.h"

namespace oxi::kernels {
namespace {

// Byte and nibble shift of element e's index in an iq4_xs block: sub-block e / 32 holds its
// first 16 elements in the low nibbles of its 16 bytes and the next 16 in the high ones.
size_t qs_byte(size_t e) noexcept {
  return 16 * (e / 32) + e % 16;
}
int qs_shift(size_t e) noexcept {
  return e % 32 < 16 ? 0 : 4;
}

void pack_group(const BlockIQ4_XS* blocks, size_t nb, uint8_t* g) noexcept {
  const size_t row = k8_row_bytes(nb);
  for (size_t b = 0; b < nb; ++b) {
    const BlockIQ4_XS& s = blocks[b];
    const uint32_t dh = uint32_t{s.d} | uint32_t{s.scales_h} << 16;
    std::memcpy(g + kXS8RowDScalesH * row + 4 * b, &dh, 4);
    std::memcpy(g + kXS8RowScalesL * row + 4 * b, s.scales_l, 4);
    const auto index = [&](size_t e) { return (s.qs[qs_byte(e)] >> qs_shift(e)) & 0xF; };
    for (size_t j = 0; j < 8; ++j) {
      for (size_t i = 0; i < 4; ++i) {
        for (size_t m = 0; m < 4; ++m) {
          const size_t e = 32 * j + 8 * i + m;
          g[xs8_qs_row(j, i) * row + 4 * b + m] =
              static_cast<uint8_t>(index(e) | index(e + 4) << 4);
        }
      }
    }
  }
}

void unpack_group(const uint8_t* g, size_t nb, BlockIQ4_XS* blocks) noexcept {
  const size_t row = k8_row_bytes(nb);
  for (size_t b = 0; b < nb; ++b) {
    BlockIQ4_XS& s = blocks[b];
    uint32_t dh;
    std::memcpy(&dh, g + kXS8RowDScalesH * row + 4 * b, 4);
    s.d = static_cast<uint16_t>(dh);
    s.scales_h = static_cast<uint16_t>(dh >> 16);
    std::memcpy(s.scales_l, g + kXS8RowScalesL * row + 4 * b, 4);
    std::memset(s.qs, 0, sizeof(s.qs));
    for (size_t j = 0; j < 8; ++j) {
      for (size_t i = 0; i < 4; ++i) {
        for (size_t m = 0; m < 4; ++m) {
          const size_t e = 32 * j + 8 * i + m;
          const uint8_t q = g[xs8_qs_row(j, i) * row + 4 * b + m];
          s.qs[qs_byte(e)] |= static_cast<uint8_t>((q & 0xF) << qs_shift(e));
          s.qs[qs_byte(e + 4)] |= static_cast<uint8_t>((q >> 4) << qs_shift(e + 4));
        }
      }
    }
  }
}

using Rows = K8Rows<BlockIQ4_XS, pack_group, unpack_group, DType::IQ4_XS>;

}  // namespace

void repack_row_iq4_xs_r8(const void* src, void* dst, size_t n) noexcept {
  Rows::repack(src, dst, n);
}
void unpack_row_iq4_xs_r8(const void* src, void* dst, size_t n) noexcept {
  Rows::unpack(src, dst, n);
}
void dequantize_row_iq4_xs_r8(const void* src, float* dst, size_t n) noexcept {
  Rows::dequantize(src, dst, n);
}
void quantize_row_iq4_xs_r8(const float* src, void* dst, size_t n) noexcept {
  Rows::quantize(src, dst, n);
}

}  // namespace oxi::kernels
