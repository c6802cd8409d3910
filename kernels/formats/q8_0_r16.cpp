// Q8_0_R16 rows (q8_0_r16.h): repacking to and from q8_0, row decoding and encoding through
// q8_0's own scalar reference (so they are bit-identical to it), and the matching activation.
#include "kernels/formats/q8_0_r16.h"

#include <algorithm>
#include <cstring>

#include "kernels/formats/fp16.h"
#include "kernels/formats/quant.h"
#include "kernels/formats/quantize_k.h"
#include "kernels/formats/repacked_rows.h"

namespace oxi::kernels {
namespace {

constexpr size_t kChunks = QK / 4;  // 4-byte chunks per block: the k of qs[k]

using Rows = R16Rows<BlockQ8_0, WeightGroupQ8R16, DType::Q8_0, QK>;

// A group's activation from m <= 16 q8_0 blocks; lanes past m are zero.
void fill_activation_group(const BlockQ8_0* b, size_t m, ActGroupQ8R16& a) noexcept {
  if (m < kR16Blocks) a = ActGroupQ8R16{};
  for (size_t i = 0; i < m; ++i) {
    a.d[i] = f16_to_f32(b[i].d);
    int32_t sum = 0;
    for (const int8_t q : b[i].qs) sum += q;
    a.sum128[i] = 128 * sum;
    for (size_t k = 0; k < kChunks; ++k) std::memcpy(&a.q[k][4 * i], &b[i].qs[4 * k], 4);
  }
}

}  // namespace

size_t q8_0_r16_activation_bytes(size_t n) noexcept {
  return r16_activation_bytes<ActGroupQ8R16>(n);
}

void quantize_activation_q8_0_r16(const float* x, void* out, size_t n) noexcept {
  quantize_r16_activation<ActGroupQ8R16, BlockQ8_0, fill_activation_group>(x, out, n);
}

void repack_row_q8_0_r16(const void* src, void* dst, size_t n) noexcept {
  Rows::repack(src, dst, n);
}

void unpack_row_q8_0_r16(const void* src, void* dst, size_t n) noexcept {
  Rows::unpack(src, dst, n);
}

void dequantize_row_q8_0_r16(const void* src, float* dst, size_t n) noexcept {
  Rows::dequantize(src, dst, n);
}

void quantize_row_q8_0_r16(const float* src, void* dst, size_t n) noexcept {
  Rows::quantize(src, dst, n);
}

}  // namespace oxi::kernels
