// Q6_K_R8 rows (q6_k_r8.h): repacking to and from q6_K, row decoding and encoding through q6_K's
// own (so they are bit-identical to it) through K8Rows (repacked_rows.h), and the matching
// activation.
#include "kernels/formats/q6_k_r8.h"

#include <cstring>

#include "kernels/formats/quant.h"
#include "kernels/formats/repacked_rows.h"

namespace oxi::kernels {
namespace {

// Where element e (0..255) of a q6_K block keeps its bits: each half of 128 elements has 64 ql
// and 32 qh bytes; quarter k of a half takes ql byte i + 32 (k % 2), nibble k / 2, and bits 2k,
// 2k + 1 of qh byte i (i = e % 32).
struct Q6Bits {
  size_t ql, qh;
  int ql_shift, qh_shift;
};
Q6Bits q6_bits(size_t e) noexcept {
  const size_t half = e / 128, k = e % 128 / 32, i = e % 32;
  return {64 * half + 32 * (k % 2) + i, 32 * half + i, static_cast<int>(4 * (k / 2)),
          static_cast<int>(2 * k)};
}

void pack_group(const BlockQ6_K* blocks, size_t nb, uint8_t* g) noexcept {
  const size_t row = k8_row_bytes(nb);
  std::memset(g, 0, kQ6K8Rows * row);
  for (size_t b = 0; b < nb; ++b) {
    const BlockQ6_K& s = blocks[b];
    for (size_t e = 0; e < QK_K; ++e) {
      const Q6Bits at = q6_bits(e);
      const int low = (s.ql[at.ql] >> at.ql_shift) & 0xF, high = (s.qh[at.qh] >> at.qh_shift) & 3;
      // element 16s + 8p + 4h + m = 16s + 4k + m
      const size_t sub = e / 16, k = e % 16 / 4, m = e % 4;
      g[q6k8_ql_row(sub, k / 2) * row + 4 * b + m] |= static_cast<uint8_t>(low << (4 * (k % 2)));
      g[q6k8_qh_row(sub) * row + 4 * b + m] |= static_cast<uint8_t>(high << (2 * k));
    }
    for (size_t r = 0; r < 4; ++r)
      std::memcpy(g + q6k8_scale_row(r) * row + 4 * b, s.scales + 4 * r, 4);
    std::memcpy(g + q6k8_d_offset(nb) + 2 * b, &s.d, 2);
  }
}

void unpack_group(const uint8_t* g, size_t nb, BlockQ6_K* blocks) noexcept {
  const size_t row = k8_row_bytes(nb);
  for (size_t b = 0; b < nb; ++b) {
    BlockQ6_K& s = blocks[b];
    std::memset(s.ql, 0, sizeof(s.ql));
    std::memset(s.qh, 0, sizeof(s.qh));
    for (size_t e = 0; e < QK_K; ++e) {
      const size_t sub = e / 16, k = e % 16 / 4, m = e % 4;
      const int low = (g[q6k8_ql_row(sub, k / 2) * row + 4 * b + m] >> (4 * (k % 2))) & 0xF;
      const int high = (g[q6k8_qh_row(sub) * row + 4 * b + m] >> (2 * k)) & 3;
      const Q6Bits at = q6_bits(e);
      s.ql[at.ql] |= static_cast<uint8_t>(low << at.ql_shift);
      s.qh[at.qh] |= static_cast<uint8_t>(high << at.qh_shift);
    }
    for (size_t r = 0; r < 4; ++r)
      std::memcpy(s.scales + 4 * r, g + q6k8_scale_row(r) * row + 4 * b, 4);
    std::memcpy(&s.d, g + q6k8_d_offset(nb) + 2 * b, 2);
  }
}

void set_activation_lane(const BlockQ8_K& b, size_t k, ActGroupQ6K8& a) noexcept {
  a.d[k] = b.d;
  for (size_t r = 0; r < 4; ++r)
    for (size_t j = 0; j < 4; ++j) a.sums[r][4 * k + j] = b.bsums[4 * r + j];
  for (size_t s = 0; s < 16; ++s) {
    for (size_t h = 0; h < 2; ++h) {
      for (size_t p = 0; p < 2; ++p)
        std::memcpy(&a.q[s][h][p][4 * k], &b.qs[16 * s + 8 * p + 4 * h], 4);
    }
  }
}

using Rows = K8Rows<BlockQ6_K, pack_group, unpack_group, DType::Q6_K>;

}  // namespace

size_t q6_k_r8_activation_bytes(size_t n) noexcept {
  const size_t blocks = n / QK_K;
  return (blocks + kK8Blocks - 1) / kK8Blocks * sizeof(ActGroupQ6K8);
}

void quantize_activation_q6_k_r8(const float* x, void* out, size_t n) noexcept {
  const size_t blocks = n / QK_K;
  auto* a = static_cast<ActGroupQ6K8*>(out);
  for (size_t first = 0; first < blocks; first += kK8Blocks, ++a) {
    const size_t nb = k8_group_blocks(blocks, first);
    BlockQ8_K b[kK8Blocks];
    quantize_activation(DType::Q6_K, x + first * QK_K, b, nb * QK_K);
    // A short last group's missing lanes are zero (as q4_K_r8's: an uninitialised scale could be
    // a NaN, and 0 * NaN is not 0).
    if (nb < kK8Blocks) std::memset(a, 0, sizeof(*a));
    for (size_t k = 0; k < nb; ++k) set_activation_lane(b[k], k, *a);
  }
}

void repack_row_q6_k_r8(const void* src, void* dst, size_t n) noexcept {
  Rows::repack(src, dst, n);
}
void unpack_row_q6_k_r8(const void* src, void* dst, size_t n) noexcept {
  Rows::unpack(src, dst, n);
}
void dequantize_row_q6_k_r8(const void* src, float* dst, size_t n) noexcept {
  Rows::dequantize(src, dst, n);
}
void quantize_row_q6_k_r8(const float* src, void* dst, size_t n) noexcept {
  Rows::quantize(src, dst, n);
}

}  // namespace oxi::kernels
