// Q4_0_R16 rows (q4_0_r16.h): repacking to and from q4_0, row decoding and encoding through
// q4_0's own scalar reference (so they are bit-identical to it), and the matching activation;
// also repack_row for every repacked layout (q8_0_r16.h and q4_k_r8.h too).
#include "kernels/formats/q4_0_r16.h"

#include <algorithm>
#include <cstring>

#include "kernels/formats/fp16.h"
#include "kernels/formats/iq4_nl_r16.h"
#include "kernels/formats/iq4_xs_r8.h"
#include "kernels/formats/q4_k_r8.h"
#include "kernels/formats/q4_k_r8s.h"
#include "kernels/formats/q2_k_r8.h"
#include "kernels/formats/q3_k_r8.h"
#include "kernels/formats/q5_k_r8.h"
#include "kernels/formats/q5_0_r16.h"
#include "kernels/formats/q4_1_r16.h"
#include "kernels/formats/q5_1_r16.h"
#include "kernels/formats/q8_0_r16.h"
#include "kernels/formats/quant.h"
#include "kernels/formats/quantize_k.h"
#include "kernels/formats/repacked_rows.h"

namespace oxi::kernels {
namespace {

using Rows = R16Rows<BlockQ4_0, WeightGroupR16, DType::Q4_0, QK>;

void fill_activation_group(const BlockQ8_0* b, size_t m, ActGroupR16& a) noexcept {
  fill_r16_activation_group(b, m, 8, a);
}

}  // namespace

void place_r16_activation_quants(const int8_t* qs, size_t b,
                                 int8_t (&q)[4][2][4 * kR16Blocks]) noexcept {
  for (size_t k = 0; k < 4; ++k) {
    std::memcpy(&q[k][0][4 * b], qs + 4 * k, 4);
    std::memcpy(&q[k][1][4 * b], qs + QK / 2 + 4 * k, 4);
  }
}

void fill_r16_activation_group(const BlockQ8_0* b, size_t m, int zero_per_q,
                               ActGroupR16& a) noexcept {
  if (m < kR16Blocks) a = ActGroupR16{};
  for (size_t i = 0; i < m; ++i) {
    int sum = 0;
    for (int8_t q : b[i].qs) sum += q;
    a.d[i] = f16_to_f32(b[i].d);
    a.zero[i] = zero_per_q * sum;
    place_r16_activation_quants(b[i].qs, i, a.q);
  }
}

size_t q4_0_r16_activation_bytes(size_t n) noexcept {
  return r16_activation_bytes<ActGroupR16>(n);
}

void quantize_activation_q4_0_r16(const float* x, void* out, size_t n) noexcept {
  quantize_r16_activation<ActGroupR16, BlockQ8_0, fill_activation_group>(x, out, n);
}

void repack_row_q4_0_r16(const void* src, void* dst, size_t n) noexcept {
  Rows::repack(src, dst, n);
}

void unpack_row_q4_0_r16(const void* src, void* dst, size_t n) noexcept {
  Rows::unpack(src, dst, n);
}

void dequantize_row_q4_0_r16(const void* src, float* dst, size_t n) noexcept {
  Rows::dequantize(src, dst, n);
}

void quantize_row_q4_0_r16(const float* src, void* dst, size_t n) noexcept {
  Rows::quantize(src, dst, n);
}

bool repack_row(DType from, DType to, const void* src, void* dst, size_t n) noexcept {
  if (from == DType::Q4_0 && to == DType::Q4_0_R16) {
    repack_row_q4_0_r16(src, dst, n);
  } else if (from == DType::Q4_0_R16 && to == DType::Q4_0) {
    unpack_row_q4_0_r16(src, dst, n);
  } else if (from == DType::Q8_0 && to == DType::Q8_0_R16) {
    repack_row_q8_0_r16(src, dst, n);
  } else if (from == DType::Q8_0_R16 && to == DType::Q8_0) {
    unpack_row_q8_0_r16(src, dst, n);
  } else if (from == DType::Q4_K && to == DType::Q4_K_R8) {
    repack_row_q4_k_r8(src, dst, n);
  } else if (from == DType::Q4_K_R8 && to == DType::Q4_K) {
    unpack_row_q4_k_r8(src, dst, n);
  } else if (from == DType::IQ4_NL && to == DType::IQ4_NL_R16) {
    repack_row_iq4_nl_r16(src, dst, n);
  } else if (from == DType::IQ4_NL_R16 && to == DType::IQ4_NL) {
    unpack_row_iq4_nl_r16(src, dst, n);
  } else if (from == DType::Q5_0 && to == DType::Q5_0_R16) {
    repack_row_q5_0_r16(src, dst, n);
  } else if (from == DType::Q5_0_R16 && to == DType::Q5_0) {
    unpack_row_q5_0_r16(src, dst, n);
  } else if (from == DType::Q4_1 && to == DType::Q4_1_R16) {
    repack_row_q4_1_r16(src, dst, n);
  } else if (from == DType::Q4_1_R16 && to == DType::Q4_1) {
    unpack_row_q4_1_r16(src, dst, n);
  } else if (from == DType::Q5_1 && to == DType::Q5_1_R16) {
    repack_row_q5_1_r16(src, dst, n);
  } else if (from == DType::Q5_1_R16 && to == DType::Q5_1) {
    unpack_row_q5_1_r16(src, dst, n);
  } else if (from == DType::Q5_K && to == DType::Q5_K_R8) {
    repack_row_q5_k_r8(src, dst, n);
  } else if (from == DType::Q5_K_R8 && to == DType::Q5_K) {
    unpack_row_q5_k_r8(src, dst, n);
  } else if (from == DType::Q3_K && to == DType::Q3_K_R8) {
    repack_row_q3_k_r8(src, dst, n);
  } else if (from == DType::Q3_K_R8 && to == DType::Q3_K) {
    unpack_row_q3_k_r8(src, dst, n);
  } else if (from == DType::Q2_K && to == DType::Q2_K_R8) {
    repack_row_q2_k_r8(src, dst, n);
  } else if (from == DType::Q2_K_R8 && to == DType::Q2_K) {
    unpack_row_q2_k_r8(src, dst, n);
  } else if (from == DType::IQ4_XS && to == DType::IQ4_XS_R8) {
    repack_row_iq4_xs_r8(src, dst, n);
  } else if (from == DType::IQ4_XS_R8 && to == DType::IQ4_XS) {
    unpack_row_iq4_xs_r8(src, dst, n);
  } else {
    return false;
  }
  return true;
}

bool repack_rows(DType from, DType to, const void* src, void* dst, size_t rows, size_t n) noexcept {
  const size_t granule = row_granule(to, n) * row_granule(from, n), bytes = row_bytes(from, n);
  if (rows % granule != 0 || bytes != row_bytes(to, n)) return false;
  const auto* s = static_cast<const std::byte*>(src);
  auto* d = static_cast<std::byte*>(dst);
  if (from == DType::Q4_K && to == DType::Q4_K_R8S) {
    for (size_t r = 0; r < rows; r += granule) repack_set_q4_k_r8s(s + r * bytes, d + r * bytes, n);
    return true;
  }
  if (from == DType::Q4_K_R8S && to == DType::Q4_K) {
    for (size_t r = 0; r < rows; r += granule) unpack_set_q4_k_r8s(s + r * bytes, d + r * bytes, n);
    return true;
  }
  for (size_t r = 0; r < rows; ++r) {
    if (!repack_row(from, to, s + r * bytes, d + r * bytes, n)) return false;
  }
  return true;
}

}  // namespace oxi::kernels
