// Q4_K_R8 rows (q4_k_r8.h): repacking to and from q4_K, row decoding and encoding through q4_K's
// own scalar reference (so they are bit-identical to it), and the matching activation.
#include "kernels/formats/q4_k_r8.h"

#include <cstring>

#include "kernels/formats/quant.h"
#include "kernels/formats/repacked_rows.h"

namespace oxi::kernels {
void pack_group_q4_k_r8(const BlockQ4_K* blocks, size_t nb, uint8_t* g) noexcept {
  const size_t row = k8_row_bytes(nb);
  for (size_t b = 0; b < nb; ++b) {
    const BlockQ4_K& s = blocks[b];
    uint8_t sc[8], mn[8];
    for (int j = 0; j < 8; ++j) k4_scale_min(s.scales, j, sc[j], mn[j]);
    const uint32_t dm = uint32_t{s.d} | uint32_t{s.dmin} << 16;
    std::memcpy(g + kK8RowDm * row + 4 * b, &dm, 4);
    for (size_t k = 0; k < 4; ++k) {
      g[kK8RowScLo * row + 4 * b + k] =
          static_cast<uint8_t>((sc[k] & 0xF) | (sc[k + 4] & 0xF) << 4);
      g[kK8RowMnLo * row + 4 * b + k] =
          static_cast<uint8_t>((mn[k] & 0xF) | (mn[k + 4] & 0xF) << 4);
      g[kK8RowHi * row + 4 * b + k] = static_cast<uint8_t>(
          (sc[k] >> 4) | (sc[k + 4] >> 4) << 2 | (mn[k] >> 4) << 4 | (mn[k + 4] >> 4) << 6);
    }
    // sub-block j: the low (j even) or high (j odd) nibbles of qs[32 * (j / 2) ..]
    for (size_t j = 0; j < 8; ++j) {
      const uint8_t* q = s.qs + 32 * (j / 2);
      const int shift = j % 2 ? 4 : 0;
      for (size_t i = 0; i < 4; ++i) {
        for (size_t m = 0; m < 4; ++m) {
          const int lo = (q[8 * i + m] >> shift) & 0xF, hi = (q[8 * i + 4 + m] >> shift) & 0xF;
          g[k8_qs_row(j, i) * row + 4 * b + m] = static_cast<uint8_t>(lo | hi << 4);
        }
      }
    }
  }
}

void unpack_group_q4_k_r8(const uint8_t* g, size_t nb, BlockQ4_K* blocks) noexcept {
  const size_t row = k8_row_bytes(nb);
  for (size_t b = 0; b < nb; ++b) {
    BlockQ4_K& s = blocks[b];
    uint8_t sc[8], mn[8];
    for (size_t k = 0; k < 4; ++k) {
      const uint8_t lo_s = g[kK8RowScLo * row + 4 * b + k];
      const uint8_t lo_m = g[kK8RowMnLo * row + 4 * b + k];
      const uint8_t hi = g[kK8RowHi * row + 4 * b + k];
      sc[k] = static_cast<uint8_t>((lo_s & 0xF) | (hi & 3) << 4);
      sc[k + 4] = static_cast<uint8_t>((lo_s >> 4) | ((hi >> 2) & 3) << 4);
      mn[k] = static_cast<uint8_t>((lo_m & 0xF) | ((hi >> 4) & 3) << 4);
      mn[k + 4] = static_cast<uint8_t>((lo_m >> 4) | (hi >> 6) << 4);
    }
    // the inverse of k4_scale_min
    for (size_t k = 0; k < 4; ++k) {
      s.scales[k] = static_cast<uint8_t>(sc[k] | (sc[k + 4] >> 4) << 6);
      s.scales[k + 4] = static_cast<uint8_t>(mn[k] | (mn[k + 4] >> 4) << 6);
      s.scales[k + 8] = static_cast<uint8_t>((sc[k + 4] & 0xF) | (mn[k + 4] & 0xF) << 4);
    }
    uint32_t dm;
    std::memcpy(&dm, g + kK8RowDm * row + 4 * b, 4);
    s.d = static_cast<uint16_t>(dm);
    s.dmin = static_cast<uint16_t>(dm >> 16);
    std::memset(s.qs, 0, sizeof(s.qs));
    for (size_t j = 0; j < 8; ++j) {
      const int shift = j % 2 ? 4 : 0;
      for (size_t i = 0; i < 4; ++i) {
        for (size_t m = 0; m < 4; ++m) {
          const size_t l = 8 * i + m;  // element 32j + l of the block
          const uint8_t q = g[k8_qs_row(j, i) * row + 4 * b + m];
          s.qs[32 * (j / 2) + l] |= static_cast<uint8_t>((q & 0xF) << shift);
          s.qs[32 * (j / 2) + l + 4] |= static_cast<uint8_t>((q >> 4) << shift);
        }
      }
    }
  }
}

void set_activation_lane_q4_k_r8(const BlockQ8_K& b, size_t k, ActGroupK8& a) noexcept {
  a.d[k] = b.d;
  for (size_t p = 0; p < 4; ++p) {
    a.sums[p][2 * k] = static_cast<int16_t>(b.bsums[4 * p] + b.bsums[4 * p + 1]);
    a.sums[p][2 * k + 1] = static_cast<int16_t>(b.bsums[4 * p + 2] + b.bsums[4 * p + 3]);
  }
  for (size_t j = 0; j < 8; ++j) {
    for (size_t i = 0; i < 4; ++i) {
      std::memcpy(&a.q[j][i][0][4 * k], &b.qs[32 * j + 8 * i], 4);
      std::memcpy(&a.q[j][i][1][4 * k], &b.qs[32 * j + 8 * i + 4], 4);
    }
  }
}

size_t q4_k_r8_activation_bytes(size_t n) noexcept {
  return k8_activation_bytes<ActGroupK8>(n);
}

void quantize_activation_q4_k_r8(const float* x, void* out, size_t n) noexcept {
  quantize_k8_activation<ActGroupK8, set_activation_lane_q4_k_r8>(DType::Q4_K, x, out, n);
}

namespace {
using Rows = K8Rows<BlockQ4_K, pack_group_q4_k_r8, unpack_group_q4_k_r8, DType::Q4_K>;
}  // namespace

void repack_row_q4_k_r8(const void* src, void* dst, size_t n) noexcept {
  Rows::repack(src, dst, n);
}
void unpack_row_q4_k_r8(const void* src, void* dst, size_t n) noexcept {
  Rows::unpack(src, dst, n);
}
void dequantize_row_q4_k_r8(const void* src, float* dst, size_t n) noexcept {
  Rows::dequantize(src, dst, n);
}
void quantize_row_q4_k_r8(const float* src, void* dst, size_t n) noexcept {
  Rows::quantize(src, dst, n);
}

}  // namespace oxi::kernels
