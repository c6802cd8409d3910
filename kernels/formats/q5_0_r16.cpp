// Q5_0_R16 rows (q5_0_r16.h): repacking to and from q5_0, row decoding and encoding through
// q5_0's own codec (so they are bit-identical to it), and the activation with its zero.
#include "kernels/formats/q5_0_r16.h"

#include <cstring>

#include "kernels/formats/repacked_rows.h"

namespace oxi::kernels {
namespace {

using Rows = R16Rows<BlockQ5_0, WeightGroupQ5R16, DType::Q5_0, QK>;

void fill_activation_group(const BlockQ8_0* b, size_t m, ActGroupR16& a) noexcept {
  fill_r16_activation_group(b, m, 16, a);
}

}  // namespace

size_t q5_0_r16_activation_bytes(size_t n) noexcept {
  return r16_activation_bytes<ActGroupR16>(n);
}

void quantize_activation_q5_0_r16(const float* x, void* out, size_t n) noexcept {
  quantize_r16_activation<ActGroupR16, BlockQ8_0, fill_activation_group>(x, out, n);
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
