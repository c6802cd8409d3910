// Q4_1_R16 rows (q4_1_r16.h): repacking to and from q4_1, row decoding and encoding through
// q4_1's own codec (so they are bit-identical to it). Its activation is q5_1_r16's.
#include "kernels/formats/q4_1_r16.h"

#include "kernels/formats/repacked_rows.h"

namespace oxi::kernels {
namespace {

using Rows = R16Rows<BlockQ4_1, WeightGroupQ4_1R16, DType::Q4_1, QK>;

}  // namespace

void repack_row_q4_1_r16(const void* src, void* dst, size_t n) noexcept {
  Rows::repack(src, dst, n);
}

void unpack_row_q4_1_r16(const void* src, void* dst, size_t n) noexcept {
  Rows::unpack(src, dst, n);
}

void dequantize_row_q4_1_r16(const void* src, float* dst, size_t n) noexcept {
  Rows::dequantize(src, dst, n);
}

void quantize_row_q4_1_r16(const float* src, void* dst, size_t n) noexcept {
  Rows::quantize(src, dst, n);
}

}  // namespace oxi::kernels
