// Q4_K_R8S sets (q4_k_r8s.h): repacking, decoding and the activation, through q4_k_r8's group
// packer and q4_K's scalar decoder (so decoding is bit-identical to q4_K's).
#include "kernels/formats/q4_k_r8s.h"

#include <vector>

#include "kernels/formats/quant.h"

namespace oxi::kernels {

size_t q4_k_r8s_activation_bytes(size_t n) noexcept {
  return K8Sets(n).act_groups * sizeof(ActGroupK8);
}

void quantize_activation_q4_k_r8s(const float* x, void* out, size_t n) noexcept {
  const K8Sets sets(n);
  std::vector<BlockQ8_K> b(n / QK_K);
  quantize_activation(DType::Q4_K, x, b.data(), n);
  auto* a = static_cast<ActGroupK8*>(out);
  for (size_t i = 0; i < sets.act_groups; ++i) {
    for (size_t k = 0; k < kK8Blocks; ++k)
      set_activation_lane_q4_k_r8(b[sets.act_block(i, k)], k, a[i]);
  }
}

void repack_set_q4_k_r8s(const void* q4_k_rows, void* set, size_t n) noexcept {
  const K8Sets sets(n);
  const size_t nb = n / QK_K;
  const auto* rows = static_cast<const BlockQ4_K*>(q4_k_rows);
  auto* g = static_cast<uint8_t*>(set);
  for (size_t i = 0; i < sets.groups; ++i) {
    BlockQ4_K group[kK8Blocks];
    for (size_t k = 0; k < kK8Blocks; ++k) {
      const K8Sets::Lane l = sets.lane(i, k);
      group[k] = rows[l.row * nb + l.block];
    }
    pack_group_q4_k_r8(group, kK8Blocks, g + i * kK8GroupBytes);
  }
}

void unpack_set_q4_k_r8s(const void* set, void* q4_k_rows, size_t n) noexcept {
  const K8Sets sets(n);
  const size_t nb = n / QK_K;
  auto* rows = static_cast<BlockQ4_K*>(q4_k_rows);
  const auto* g = static_cast<const uint8_t*>(set);
  for (size_t i = 0; i < sets.groups; ++i) {
    BlockQ4_K group[kK8Blocks];
    unpack_group_q4_k_r8(g + i * kK8GroupBytes, kK8Blocks, group);
    for (size_t k = 0; k < kK8Blocks; ++k) {
      const K8Sets::Lane l = sets.lane(i, k);
      rows[l.row * nb + l.block] = group[k];
    }
  }
}

void dequantize_set_row_q4_k_r8s(const void* set, size_t row, float* dst, size_t n) noexcept {
  const K8Sets sets(n);
  const auto* g = static_cast<const uint8_t*>(set);
  const RowDecoder plain = row_decoder(DType::Q4_K);
  BlockQ4_K group[kK8Blocks];
  for (size_t i = 0; i < sets.groups; ++i) {
    bool unpacked = false;
    for (size_t k = 0; k < kK8Blocks; ++k) {
      const K8Sets::Lane l = sets.lane(i, k);
      if (l.row != row) continue;
      if (!unpacked) unpack_group_q4_k_r8(g + i * kK8GroupBytes, kK8Blocks, group);
      unpacked = true;
      plain(&group[k], dst + l.block * QK_K, QK_K);
    }
  }
}

}  // namespace oxi::kernels
