// Q5_1_R16 rows (q5_1_r16.h): repacking to and from q5_1, row decoding and encoding through
// q5_1's own codec (so they are bit-identical to it), and the q8_1 activation in that layout.
#include "kernels/formats/q5_1_r16.h"

#include "kernels/formats/fp16.h"
#include "kernels/formats/repacked_rows.h"

namespace oxi::kernels {
namespace {

using Rows = R16Rows<BlockQ5_1, WeightGroupQ5_1R16, DType::Q5_1, QK>;

// A group's activation from m <= 16 q8_1 blocks; lanes past m are zero.
void fill_activation_group(const BlockQ8_1* b, size_t m, ActGroupQ8_1R16& a) noexcept {
  if (m < kR16Blocks) a = ActGroupQ8_1R16{};
  for (size_t i = 0; i < m; ++i) {
    a.d[i] = f16_to_f32(b[i].d);
    a.s[i] = f16_to_f32(b[i].s);
    place_r16_activation_quants(b[i].qs, i, a.q);
  }
}

}  // namespace

size_t q5_1_r16_activation_bytes(size_t n) noexcept {
  return r16_activation_bytes<ActGroupQ8_1R16>(n);
}

void quantize_activation_q5_1_r16(const float* x, void* out, size_t n) noexcept {
  quantize_r16_activation<ActGroupQ8_1R16, BlockQ8_1, fill_activation_group>(x, out, n);
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
