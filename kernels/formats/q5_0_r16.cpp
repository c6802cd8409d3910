// Q5_0_R16 rows (q5_0_r16.h): repacking to and from q5_0, row decoding and encoding through
// q5_0's own codec (so they are bit-identical to it), and the activation with its zero.
#include "kernels/formats/q5_0_r16.h"

#include <cstring>

#include "kernels/formats/repacked_rows.h"

namespace oxi::kernels {
namespace {

// m blocks into a group of m (q5_0_r16.h), and back.
void pack_blocks(const BlockQ5_0* b, size_t m, void* dst) noexcept {
  auto* g = static_cast<uint8_t*>(dst);
  for (size_t i = 0; i < m; ++i) {
    std::memcpy(q5_r16_scales(g) + 2 * i, &b[i].d, 2);
    uint32_t qh;
    std::memcpy(&qh, b[i].qh, 4);
    for (size_t k = 0; k < 4; ++k) {
      q5_r16_fifth_bits(g, m)[4 * i + k] = q5_r16_fifth_byte(qh, k);
      std::memcpy(q5_r16_quants(g, m, k) + 4 * i, &b[i].qs[4 * k], 4);
    }
  }
}

void unpack_blocks(const void* src, size_t m, BlockQ5_0* b) noexcept {
  const auto* g = static_cast<const uint8_t*>(src);
  for (size_t i = 0; i < m; ++i) {
    std::memcpy(&b[i].d, q5_r16_scales(g) + 2 * i, 2);
    uint8_t fifth[4];
    std::memcpy(fifth, q5_r16_fifth_bits(g, m) + 4 * i, 4);
    const uint32_t qh = q5_0_qh_of(fifth);
    std::memcpy(b[i].qh, &qh, 4);
    for (size_t k = 0; k < 4; ++k) std::memcpy(&b[i].qs[4 * k], q5_r16_quants(g, m, k) + 4 * i, 4);
  }
}

using Rows = R16Rows<BlockQ5_0, WeightGroupQ5R16, DType::Q5_0, QK, pack_blocks, unpack_blocks>;

void fill_activation_group(const BlockQ8_0* b, size_t m, ActGroupR16& a) noexcept {
  fill_r16_activation_group(b, m, 16, a);
}

}  // namespace

size_t q5_0_r16_activation_bytes(size_t n) noexcept {
  return r16_activation_bytes<ActGroupR16>(n);
}

void quantize_activation_q5_0_r16(const float* x, void* out, size_t n) noexcept {
  quantize_r16_activation<ActGroupR16, fill_activation_group>(x, out, n);
}

void repack_row_q5_0_r16(const void* src, void* dst, size_t n) noexcept {
  Rows::repack(src, dst, n);
}

void unpack_row_q5_0_r16(const void* src, void* dst, size_t n) noexcept {
  Rows::unpack(src, dst, n);
}

void dequantize_row_q5_0_r16(const void* src, float* dst, size_t n) noexcept {
  Rows::dequantize(src, dst, n);
}

void quantize_row_q5_0_r16(const float* src, void* dst, size_t n) noexcept {
  Rows::quantize(src, dst, n);
}

}  // namespace oxi::kernels
