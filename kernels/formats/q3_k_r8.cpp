// Q3_K_R8 rows (q3_k_r8.h): repacking to and from q3_K, row decoding and encoding through q3_K's
// own (so they are bit-identical to it) through K8Rows (repacked_rows.h), and the matching
// activation.
#include "kernels/formats/q3_k_r8.h"

#include <cstring>

#include "kernels/formats/quant.h"
#include "kernels/formats/repacked_rows.h"

namespace oxi::kernels {

// Element e's two bits in a q2_K / q3_K block's qs: bits 2 (e % 128 / 32) of qs[32 (e / 128) + e %
// 32].
void pack_k16_quants(const uint8_t* qs, size_t nb, size_t b, size_t p, uint8_t* rows) noexcept {
  for (size_t c = 0; c < kK16Chunks; ++c) {
    for (size_t m = 0; m < 4; ++m) {
      for (bool upper : {false, true}) {
        const size_t e = k3_chunk_element(p, c, m, upper);
        const int low = (qs[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32))) & 3;
        uint8_t& q = rows[(c / 2) * k8_row_bytes(nb) + 4 * b + m];
        q = static_cast<uint8_t>(q | low << (2 * k16_field(c, upper)));
      }
    }
  }
}

void unpack_k16_quants(const uint8_t* rows, size_t nb, size_t b, size_t p, uint8_t* qs) noexcept {
  for (size_t c = 0; c < kK16Chunks; ++c) {
    for (size_t m = 0; m < 4; ++m) {
      for (bool upper : {false, true}) {
        const size_t e = k3_chunk_element(p, c, m, upper);
        const int low = k16_low_bits(rows + (c / 2) * k8_row_bytes(nb), b, c, m, upper);
        uint8_t& q = qs[32 * (e / 128) + e % 32];
        q = static_cast<uint8_t>(q | low << (2 * (e % 128 / 32)));
      }
    }
  }
}

void set_activation_lane_q3_k_r8(const BlockQ8_K& b, size_t k, ActGroupK16& a) noexcept {
  a.d[k] = b.d;
  for (size_t p = 0; p < kK16Pairs; ++p) {
    a.sums4[p][k] = 4 * b.bsums[2 * p];
    a.sums4[p][kK8Blocks + k] = 4 * b.bsums[2 * p + 1];
    for (size_t c = 0; c < kK16Chunks; ++c) {
      std::memcpy(&a.q[p][c][4 * k], &b.qs[k3_chunk_element(p, c, 0, false)], 4);
      std::memcpy(&a.q[p][c][32 + 4 * k], &b.qs[k3_chunk_element(p, c, 0, true)], 4);
    }
  }
}

namespace {

// Element e of a q3_K block: its third bit (bit e / 32 of hmask[e % 32]).
bool high_bit(const BlockQ3_K& s, size_t e) noexcept {
  return (s.hmask[e % 32] >> (e / 32)) & 1;
}

// Bit position, in a third-bits field of a group of nb blocks, of byte m of block b's lane in
// the lower (group A) or upper (group B) half.
size_t high_position(size_t nb, size_t b, size_t m, bool upper) noexcept {
  return (upper ? 4 * nb : 0) + 4 * b + m;
}

void pack_group(const BlockQ3_K* blocks, size_t nb, uint8_t* g) noexcept {
  std::memset(g, 0, nb * sizeof(BlockQ3_K));
  for (size_t b = 0; b < nb; ++b) {
    const BlockQ3_K& s = blocks[b];
    std::memcpy(g + 2 * b, &s.d, 2);
    for (size_t m = 0; m < 4; ++m) {
      int sc[4];
      for (size_t q = 0; q < 4; ++q) sc[q] = k3_scale(s.scales, static_cast<int>(4 * q + m));
      g[k3_scale_row(nb, 0) + 4 * b + m] = static_cast<uint8_t>((sc[0] & 0xF) | (sc[1] & 0xF) << 4);
      g[k3_scale_row(nb, 1) + 4 * b + m] = static_cast<uint8_t>((sc[2] & 0xF) | (sc[3] & 0xF) << 4);
      g[k3_scale_row(nb, 2) + 4 * b + m] = static_cast<uint8_t>(
          (sc[0] >> 4) | (sc[1] >> 4) << 2 | (sc[2] >> 4) << 4 | (sc[3] >> 4) << 6);
    }
    for (size_t p = 0; p < kK16Pairs; ++p) {
      pack_k16_quants(s.qs, nb, b, p, g + k3_quants_row(nb, p, 0));
      for (size_t c = 0; c < kK16Chunks; ++c) {
        for (size_t m = 0; m < 4; ++m) {
          for (bool upper : {false, true}) {
            const size_t e = k3_chunk_element(p, c, m, upper);
            if (high_bit(s, e)) {
              const size_t bit = high_position(nb, b, m, upper);
              uint8_t& f = g[k3_high_field(nb, p, c) + bit / 8];
              f = static_cast<uint8_t>(f | 1u << (bit % 8));
            }
          }
        }
      }
    }
  }
}

void unpack_group(const uint8_t* g, size_t nb, BlockQ3_K* blocks) noexcept {
  for (size_t b = 0; b < nb; ++b) {
    BlockQ3_K& s = blocks[b];
    std::memset(&s, 0, sizeof(s));
    std::memcpy(&s.d, g + 2 * b, 2);
    for (size_t m = 0; m < 4; ++m) {
      const uint8_t lo01 = g[k3_scale_row(nb, 0) + 4 * b + m];
      const uint8_t lo23 = g[k3_scale_row(nb, 1) + 4 * b + m];
      const uint8_t hi = g[k3_scale_row(nb, 2) + 4 * b + m];
      const int low[4] = {lo01 & 0xF, lo01 >> 4, lo23 & 0xF, lo23 >> 4};
      for (size_t q = 0; q < 4; ++q) {
        // the inverse of k3_scale: group g's low 4 bits in nibble g / 8 of scales[g % 8], its
        // top 2 bits at bits 2 (g / 4) of scales[8 + g % 4]
        const size_t grp = 4 * q + m;
        s.scales[grp % 8] = static_cast<uint8_t>(s.scales[grp % 8] | low[q] << (4 * (grp / 8)));
        s.scales[8 + grp % 4] =
            static_cast<uint8_t>(s.scales[8 + grp % 4] | ((hi >> (2 * q)) & 3) << (2 * (grp / 4)));
      }
    }
    for (size_t p = 0; p < kK16Pairs; ++p) {
      unpack_k16_quants(g + k3_quants_row(nb, p, 0), nb, b, p, s.qs);
      for (size_t c = 0; c < kK16Chunks; ++c) {
        const uint8_t* field = g + k3_high_field(nb, p, c);
        for (size_t m = 0; m < 4; ++m) {
          for (bool upper : {false, true}) {
            const size_t e = k3_chunk_element(p, c, m, upper);
            const size_t bit = high_position(nb, b, m, upper);
            if ((field[bit / 8] >> (bit % 8)) & 1)
              s.hmask[e % 32] = static_cast<uint8_t>(s.hmask[e % 32] | 1u << (e / 32));
          }
        }
      }
    }
  }
}

using Rows = K8Rows<BlockQ3_K, pack_group, unpack_group, DType::Q3_K>;

}  // namespace

size_t q3_k_r8_activation_bytes(size_t n) noexcept {
  return k8_activation_bytes<ActGroupK16>(n);
}

void quantize_activation_q3_k_r8(const float* x, void* out, size_t n) noexcept {
  quantize_k8_activation<ActGroupK16, set_activation_lane_q3_k_r8>(DType::Q3_K, x, out, n);
}

void repack_row_q3_k_r8(const void* src, void* dst, size_t n) noexcept {
  Rows::repack(src, dst, n);
}
void unpack_row_q3_k_r8(const void* src, void* dst, size_t n) noexcept {
  Rows::unpack(src, dst, n);
}
void dequantize_row_q3_k_r8(const void* src, float* dst, size_t n) noexcept {
  Rows::dequantize(src, dst, n);
}
void quantize_row_q3_k_r8(const float* src, void* dst, size_t n) noexcept {
  Rows::quantize(src, dst, n);
}

}  // namespace oxi::kernels
