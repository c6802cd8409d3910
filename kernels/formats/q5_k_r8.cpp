// Q5_K_R8 rows (q5_k_r8.h): repacking to and from q5_K (q4_K_r8's rows from the four-bit part,
// each sub-block's fifth-bits fields after its quants rows), and row decoding and encoding through
// q5_K's own (so they are bit-identical to it), through K8Rows (repacked_rows.h).
#include "kernels/formats/q5_k_r8.h"

#include <cstring>

#include "kernels/formats/quant.h"
#include "kernels/formats/repacked_rows.h"

namespace oxi::kernels {
namespace {

// The four-bit part of a q5_K block: the same fields as a q4_K block.
BlockQ4_K low_bits(const BlockQ5_K& s) noexcept {
  BlockQ4_K b;
  b.d = s.d;
  b.dmin = s.dmin;
  std::memcpy(b.scales, s.scales, sizeof(b.scales));
  std::memcpy(b.qs, s.qs, sizeof(b.qs));
  return b;
}

// Element e's fifth bit in a q5_K block: bit e / 32 of qh[e % 32].
bool fifth_bit(const BlockQ5_K& s, size_t e) noexcept {
  return (s.qh[e % 32] >> (e / 32)) & 1;
}

// Bit position, in field (j, i) of a group of nb blocks, of element 32j + 8i + m (+ 4 when
// `high`) of block b.
size_t fifth_position(size_t nb, size_t b, size_t m, bool high) noexcept {
  return (high ? 4 * nb : 0) + 4 * b + m;
}

void pack_group(const BlockQ5_K* blocks, size_t nb, uint8_t* g) noexcept {
  BlockQ4_K low[kK8Blocks];
  for (size_t b = 0; b < nb; ++b) low[b] = low_bits(blocks[b]);
  uint8_t q4[kK8Blocks * sizeof(BlockQ4_K)];
  pack_group_q4_k_r8(low, nb, q4);
  const size_t row = k8_row_bytes(nb);
  std::memcpy(g, q4, 4 * row);
  for (size_t j = 0; j < 8; ++j) {
    for (size_t i = 0; i < 4; ++i) {
      std::memcpy(g + k5_quants_row(nb, j, i), q4 + k8_qs_row(j, i) * row, row);
      uint8_t* field = g + k5_fifth_field(nb, j, i);
      std::memset(field, 0, nb);
      for (size_t b = 0; b < nb; ++b) {
        for (size_t m = 0; m < 4; ++m) {
          for (bool high : {false, true}) {
            if (!fifth_bit(blocks[b], 32 * j + 8 * i + m + (high ? 4 : 0))) continue;
            const size_t bit = fifth_position(nb, b, m, high);
            field[bit / 8] = static_cast<uint8_t>(field[bit / 8] | 1u << (bit % 8));
          }
        }
      }
    }
  }
}

void unpack_group(const uint8_t* g, size_t nb, BlockQ5_K* blocks) noexcept {
  const size_t row = k8_row_bytes(nb);
  uint8_t q4[kK8Blocks * sizeof(BlockQ4_K)];
  std::memcpy(q4, g, 4 * row);
  for (size_t j = 0; j < 8; ++j)
    for (size_t i = 0; i < 4; ++i)
      std::memcpy(q4 + k8_qs_row(j, i) * row, g + k5_quants_row(nb, j, i), row);
  BlockQ4_K low[kK8Blocks];
  unpack_group_q4_k_r8(q4, nb, low);
  for (size_t b = 0; b < nb; ++b) {
    BlockQ5_K& s = blocks[b];
    s.d = low[b].d;
    s.dmin = low[b].dmin;
    std::memcpy(s.scales, low[b].scales, sizeof(s.scales));
    std::memcpy(s.qs, low[b].qs, sizeof(s.qs));
    std::memset(s.qh, 0, sizeof(s.qh));
  }
  for (size_t j = 0; j < 8; ++j) {
    for (size_t i = 0; i < 4; ++i) {
      const uint8_t* field = g + k5_fifth_field(nb, j, i);
      for (size_t b = 0; b < nb; ++b) {
        for (size_t m = 0; m < 4; ++m) {
          for (bool high : {false, true}) {
            const size_t bit = fifth_position(nb, b, m, high);
            if (!((field[bit / 8] >> (bit % 8)) & 1)) continue;
            const size_t e = 32 * j + 8 * i + m + (high ? 4 : 0);
            blocks[b].qh[e % 32] = static_cast<uint8_t>(blocks[b].qh[e % 32] | 1u << (e / 32));
          }
        }
      }
    }
  }
}

using Rows = K8Rows<BlockQ5_K, pack_group, unpack_group, DType::Q5_K>;

}  // namespace

void repack_row_q5_k_r8(const void* src, void* dst, size_t n) noexcept {
  Rows::repack(src, dst, n);
}
void unpack_row_q5_k_r8(const void* src, void* dst, size_t n) noexcept {
  Rows::unpack(src, dst, n);
}
void dequantize_row_q5_k_r8(const void* src, float* dst, size_t n) noexcept {
  Rows::dequantize(src, dst, n);
}
void quantize_row_q5_k_r8(const float* src, void* dst, size_t n) noexcept {
  Rows::quantize(src, dst, n);
}

}  // namespace oxi::kernels
