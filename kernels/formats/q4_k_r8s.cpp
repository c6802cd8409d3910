// Q4_K_R8S sets (q4_k_r8s.h): repacking, decoding and the activation, through q4_k_r8's group
// packer and q4_K's scalar decoder (so decoding is bit-identical to q4_K's).
#include "kernels/formats/q4_k_r8s.h"

#include <numeric>
#include <vector>

#include "kernels/formats/quant.h"

namespace oxi::kernels {

namespace {

// Whole groups of a row and blocks of its tail.
size_t whole_groups(size_t n) noexcept {
  return n / QK_K / kK8Blocks;
}
size_t tail_blocks(size_t n) noexcept {
  return n / QK_K % kK8Blocks;
}

}  // namespace

size_t k8s_set_rows(size_t n) noexcept {
  const size_t t = tail_blocks(n);
  return t == 0 ? 1 : kK8Blocks / std::gcd(t, kK8Blocks);
}

size_t k8s_set_groups(size_t n) noexcept {
  return k8s_set_rows(n) * (n / QK_K) / kK8Blocks;
}

size_t k8s_activation_groups(size_t n) noexcept {
  return whole_groups(n) + k8s_set_rows(n) * tail_blocks(n) / kK8Blocks;
}

K8SetLane k8s_lane(size_t n, size_t g, size_t k) noexcept {
  const size_t q = whole_groups(n), t = tail_blocks(n), row_groups = k8s_set_rows(n) * q;
  if (g < row_groups) return {g / q, kK8Blocks * (g % q) + k};
  const size_t lane = kK8Blocks * (g - row_groups) + k;
  return {lane / t, kK8Blocks * q + lane % t};
}

size_t k8s_activation_group(size_t n, size_t g) noexcept {
  const size_t q = whole_groups(n), row_groups = k8s_set_rows(n) * q;
  return g < row_groups ? g % q : q + (g - row_groups);
}

size_t q4_k_r8s_activation_bytes(size_t n) noexcept {
  return k8s_activation_groups(n) * sizeof(ActGroupK8);
}

void quantize_activation_q4_k_r8s(const float* x, void* out, size_t n) noexcept {
  const size_t nb = n / QK_K, groups = k8s_set_groups(n);
  std::vector<BlockQ8_K> b(nb);
  quantize_activation(DType::Q4_K, x, b.data(), n);
  auto* a = static_cast<ActGroupK8*>(out);
  // Each activation group from the first set group that reads it (the same blocks in every
  // group that does).
  std::vector<bool> done(k8s_activation_groups(n));
  for (size_t g = 0; g < groups; ++g) {
    const size_t i = k8s_activation_group(n, g);
    if (done[i]) continue;
    done[i] = true;
    for (size_t k = 0; k < kK8Blocks; ++k)
      set_activation_lane_q4_k_r8(b[k8s_lane(n, g, k).block], k, a[i]);
  }
}

void repack_set_q4_k_r8s(const void* q4_k_rows, void* set, size_t n) noexcept {
  const size_t nb = n / QK_K;
  const auto* rows = static_cast<const BlockQ4_K*>(q4_k_rows);
  auto* g = static_cast<uint8_t*>(set);
  for (size_t i = 0; i < k8s_set_groups(n); ++i) {
    BlockQ4_K group[kK8Blocks];
    for (size_t k = 0; k < kK8Blocks; ++k) {
      const K8SetLane l = k8s_lane(n, i, k);
      group[k] = rows[l.row * nb + l.block];
    }
    pack_group_q4_k_r8(group, kK8Blocks, g + i * kK8GroupBytes);
  }
}

void unpack_set_q4_k_r8s(const void* set, void* q4_k_rows, size_t n) noexcept {
  const size_t nb = n / QK_K;
  auto* rows = static_cast<BlockQ4_K*>(q4_k_rows);
  const auto* g = static_cast<const uint8_t*>(set);
  for (size_t i = 0; i < k8s_set_groups(n); ++i) {
    BlockQ4_K group[kK8Blocks];
    unpack_group_q4_k_r8(g + i * kK8GroupBytes, kK8Blocks, group);
    for (size_t k = 0; k < kK8Blocks; ++k) {
      const K8SetLane l = k8s_lane(n, i, k);
      rows[l.row * nb + l.block] = group[k];
    }
  }
}

void dequantize_set_row_q4_k_r8s(const void* set, size_t row, float* dst, size_t n) noexcept {
  const auto* g = static_cast<const uint8_t*>(set);
  const RowDecoder plain = row_decoder(DType::Q4_K);
  BlockQ4_K group[kK8Blocks];
  for (size_t i = 0; i < k8s_set_groups(n); ++i) {
    bool unpacked = false;
    for (size_t k = 0; k < kK8Blocks; ++k) {
      const K8SetLane l = k8s_lane(n, i, k);
      if (l.row != row) continue;
      if (!unpacked) unpack_group_q4_k_r8(g + i * kK8GroupBytes, kK8Blocks, group);
      unpacked = true;
      plain(&group[k], dst + l.block * QK_K, QK_K);
    }
  }
}

}  // namespace oxi::kernels
