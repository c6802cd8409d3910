// IQ4_NL_R16 rows (iq4_nl_r16.h): q4_0_r16's row functions over iq4_nl blocks, and the
// activation with its own zero.
#include "kernels/formats/iq4_nl_r16.h"

#include "kernels/formats/blocks.h"
#include "kernels/formats/repacked_rows.h"

namespace oxi::kernels {
namespace {

using Rows = R16Rows<BlockIQ4_NL, WeightGroupR16, DType::IQ4_NL, QK>;

void fill_activation_group(const BlockQ8_0* b, size_t m, ActGroupR16& a) noexcept {
  fill_r16_activation_group(b, m, 128, a);
}

}  // namespace

size_t iq4_nl_r16_activation_bytes(size_t n) noexcept {
  return r16_activation_bytes<ActGroupR16>(n);
}

void quantize_activation_iq4_nl_r16(const float* x, void* out, size_t n) noexcept {
  quantize_r16_activation<ActGroupR16, BlockQ8_0, fill_activation_group>(x, out, n);
}

void repack_row_iq4_nl_r16(const void* src, void* dst, size_t n) noexcept {
  Rows::repack(src, dst, n);
}

void unpack_row_iq4_nl_r16(const void* src, void* dst, size_t n) noexcept {
  Rows::unpack(src, dst, n);
}

void dequantize_row_iq4_nl_r16(const void* src, float* dst, size_t n) noexcept {
  Rows::dequantize(src, dst, n);
}

void quantize_row_iq4_nl_r16(const float* src, void* dst, size_t n) noexcept {
  Rows::quantize(src, dst, n);
}

}  // namespace oxi::kernels
