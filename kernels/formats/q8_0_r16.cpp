// Q8_0_R16 rows (q8_0_r16.h): repacking to and from q8_0, row decoding and encoding through
// q8_0's own scalar reference (so they are bit-identical to it), and the matching activation.
#include "kernels/formats/q8_0_r16.h"

#include <cstring>

#include "kernels/formats/fp16.h"
#include "kernels/formats/quant.h"
#include "kernels/formats/quantize_k.h"
#include "kernels/formats/repacked_rows.h"

namespace oxi::kernels {
namespace {

constexpr size_t kGroupElems = kR16Blocks * QK;
constexpr size_t kChunks = QK / 4;  // 4-byte chunks per block: the k of qs[k]

void pack_group(const BlockQ8_0* b, WeightGroupQ8R16& g) noexcept {
  for (size_t i = 0; i < kR16Blocks; ++i) {
    g.d[i] = b[i].d;
    for (size_t k = 0; k < kChunks; ++k) std::memcpy(&g.qs[k][4 * i], &b[i].qs[4 * k], 4);
  }
}

void unpack_group(const WeightGroupQ8R16& g, BlockQ8_0* b) noexcept {
  for (size_t i = 0; i < kR16Blocks; ++i) {
    b[i].d = g.d[i];
    for (size_t k = 0; k < kChunks; ++k) std::memcpy(&b[i].qs[4 * k], &g.qs[k][4 * i], 4);
  }
}

using Rows = RepackedRows<BlockQ8_0, WeightGroupQ8R16, kR16Blocks, QK, DType::Q8_0, pack_group,
                          unpack_group>;

}  // namespace

size_t q8_0_r16_activation_bytes(size_t n) noexcept {
  const size_t blocks = n / QK;
  return blocks / kR16Blocks * sizeof(ActGroupQ8R16) + blocks % kR16Blocks * sizeof(BlockQ8_0);
}

void quantize_activation_q8_0_r16(const float* x, void* out, size_t n) noexcept {
  const size_t blocks = n / QK, groups = blocks / kR16Blocks;
  auto* a = static_cast<ActGroupQ8R16*>(out);
  const RowEncoder quantize_q8_0 = format_kernels().quantize_q8_0;
  for (size_t g = 0; g < groups; ++g, ++a, x += kGroupElems) {
    BlockQ8_0 b[kR16Blocks];
    quantize_q8_0(x, b, kGroupElems);
    for (size_t i = 0; i < kR16Blocks; ++i) {
      a->d[i] = f16_to_f32(b[i].d);
      int32_t sum = 0;
      for (const int8_t q : b[i].qs) sum += q;
      a->sum128[i] = 128 * sum;
      for (size_t k = 0; k < kChunks; ++k) std::memcpy(&a->q[k][4 * i], &b[i].qs[4 * k], 4);
    }
  }
  quantize_q8_0(x, a, (blocks - groups * kR16Blocks) * QK);
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
