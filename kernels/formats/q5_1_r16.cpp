// Q5_1_R16 rows (q5_1_r16.h): repacking to and from q5_1, row decoding and encoding through
// q5_1's own codec (so they are bit-identical to it), and the q8_1 activation in that layout.
#include "kernels/formats/q5_1_r16.h"

#include <algorithm>
#include <cstring>

#include "kernels/formats/fp16.h"
#include "kernels/formats/q5_0_r16.h"
#include "kernels/formats/quant.h"
#include "kernels/formats/repacked_rows.h"

namespace oxi::kernels {
namespace {

// m blocks into a group of m (q5_1_r16.h), and back.
void pack_blocks(const BlockQ5_1* b, size_t m, void* dst) noexcept {
  auto* g = static_cast<uint8_t*>(dst);
  for (size_t i = 0; i < m; ++i) {
    std::memcpy(q5_1_r16_scales(g) + 2 * i, &b[i].d, 2);
    std::memcpy(q5_1_r16_mins(g, m) + 2 * i, &b[i].m, 2);
    uint32_t qh;
    std::memcpy(&qh, b[i].qh, 4);
    for (size_t k = 0; k < 4; ++k) {
      q5_1_r16_fifth_bits(g, m)[4 * i + k] = q5_r16_fifth_byte(qh, k);
      std::memcpy(q5_1_r16_quants(g, m, k) + 4 * i, &b[i].qs[4 * k], 4);
    }
  }
}

void unpack_blocks(const void* src, size_t m, BlockQ5_1* b) noexcept {
  const auto* g = static_cast<const uint8_t*>(src);
  for (size_t i = 0; i < m; ++i) {
    std::memcpy(&b[i].d, q5_1_r16_scales(g) + 2 * i, 2);
    std::memcpy(&b[i].m, q5_1_r16_mins(g, m) + 2 * i, 2);
    uint8_t fifth[4];
    std::memcpy(fifth, q5_1_r16_fifth_bits(g, m) + 4 * i, 4);
    const uint32_t qh = q5_0_qh_of(fifth);
    std::memcpy(b[i].qh, &qh, 4);
    for (size_t k = 0; k < 4; ++k)
      std::memcpy(&b[i].qs[4 * k], q5_1_r16_quants(g, m, k) + 4 * i, 4);
  }
}

using Rows = R16Rows<BlockQ5_1, WeightGroupQ5_1R16, DType::Q5_1, QK, pack_blocks, unpack_blocks>;

// A group's activation from m <= 16 q8_1 blocks; lanes past m are zero.
void fill_activation_group(const BlockQ8_1* b, size_t m, ActGroupQ8_1R16& a) noexcept {
  if (m < kR16Blocks) a = ActGroupQ8_1R16{};
  for (size_t i = 0; i < m; ++i) {
    a.d[i] = f16_to_f32(b[i].d);
    a.s[i] = f16_to_f32(b[i].s);
    for (size_t k = 0; k < 4; ++k) {
      std::memcpy(&a.q[k][0][4 * i], &b[i].qs[4 * k], 4);
      std::memcpy(&a.q[k][1][4 * i], &b[i].qs[QK / 2 + 4 * k], 4);
    }
  }
}

}  // namespace

size_t q5_1_r16_activation_bytes(size_t n) noexcept {
  return r16_activation_bytes<ActGroupQ8_1R16>(n);
}

void quantize_activation_q5_1_r16(const float* x, void* out, size_t n) noexcept {
  const size_t blocks = n / QK;
  auto* a = static_cast<ActGroupQ8_1R16*>(out);
  for (size_t first = 0; first < blocks; first += kR16Blocks, ++a, x += kR16Blocks * QK) {
    const size_t m = std::min(kR16Blocks, blocks - first);
    BlockQ8_1 b[kR16Blocks];
    quantize_activation(DType::Q5_1, x, b, m * QK);  // plain q5_1's activation blocks
    fill_activation_group(b, m, *a);
  }
}

void repack_row_q5_1_r16(const void* src, void* dst, size_t n) noexcept {
  Rows::repack(src, dst, n);
}

void unpack_row_q5_1_r16(const void* src, void* dst, size_t n) noexcept {
  Rows::unpack(src, dst, n);
}

void dequantize_row_q5_1_r16(const void* src, float* dst, size_t n) noexcept {
  Rows::dequantize(src, dst, n);
}

void quantize_row_q5_1_r16(const float* src, void* dst, size_t n) noexcept {
  Rows::quantize(src, dst, n);
}

}  // namespace oxi::kernels
