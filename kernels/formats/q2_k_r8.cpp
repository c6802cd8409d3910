// Q2_K_R8 rows (q2_k_r8.h): repacking to and from q2_K, and row decoding and encoding through
// q2_K's own (so they are bit-identical to it), through K8Rows (repacked_rows.h).
#include "kernels/formats/q2_k_r8.h"

#include <cstring>

#include "kernels/formats/quant.h"
#include "kernels/formats/repacked_rows.h"

namespace oxi::kernels {
namespace {

void pack_group(const BlockQ2_K* blocks, size_t nb, uint8_t* g) noexcept {
  std::memset(g, 0, nb * sizeof(BlockQ2_K));
  for (size_t b = 0; b < nb; ++b) {
    const BlockQ2_K& s = blocks[b];
    const uint32_t dm = uint32_t{s.d} | uint32_t{s.dmin} << 16;
    std::memcpy(g + 4 * b, &dm, 4);
    for (size_t q = 0; q < 4; ++q)
      std::memcpy(g + k2_scale_row(nb, q) + 4 * b, s.scales + 4 * q, 4);
    for (size_t p = 0; p < kK16Pairs; ++p)
      pack_k16_quants(s.qs, nb, b, p, g + k2_quants_row(nb, p, 0));
  }
}

void unpack_group(const uint8_t* g, size_t nb, BlockQ2_K* blocks) noexcept {
  for (size_t b = 0; b < nb; ++b) {
    BlockQ2_K& s = blocks[b];
    std::memset(&s, 0, sizeof(s));
    uint32_t dm;
    std::memcpy(&dm, g + 4 * b, 4);
    s.d = static_cast<uint16_t>(dm);
    s.dmin = static_cast<uint16_t>(dm >> 16);
    for (size_t q = 0; q < 4; ++q)
      std::memcpy(s.scales + 4 * q, g + k2_scale_row(nb, q) + 4 * b, 4);
    for (size_t p = 0; p < kK16Pairs; ++p)
      unpack_k16_quants(g + k2_quants_row(nb, p, 0), nb, b, p, s.qs);
  }
}

using Rows = K8Rows<BlockQ2_K, pack_group, unpack_group, DType::Q2_K>;

}  // namespace

void repack_row_q2_k_r8(const void* src, void* dst, size_t n) noexcept {
  Rows::repack(src, dst, n);
}
void unpack_row_q2_k_r8(const void* src, void* dst, size_t n) noexcept {
  Rows::unpack(src, dst, n);
}
void dequantize_row_q2_k_r8(const void* src, float* dst, size_t n) noexcept {
  Rows::dequantize(src, dst, n);
}
void quantize_row_q2_k_r8(const float* src, void* dst, size_t n) noexcept {
  Rows::quantize(src, dst, n);
}

}  // namespace oxi::kernels
