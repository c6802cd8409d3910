// KvCache: rows stored position-major come back position-major (copy_rows_out / copy_rows_in,
// what saved states hold), while attention reads each kv head's rows together (attend_rows).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernels/formats/fp16.h"
#include "lib/core/error.h"
#include "lib/llm/kv_cache.h"
#include "tests/common/test_data.h"

namespace oxi::llm {
namespace {

constexpr size_t kLayers = 3, kCtx = 10, kHeads = 2, kHeadDim = 4, kKvDim = kHeads * kHeadDim;

std::vector<uint8_t> as_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TEST(KvCache, RowsStoredComeBackPositionMajor) {
  KvCache cache(kLayers, kCtx, kHeads, kHeadDim, kernels::DType::F32);
  EXPECT_EQ(cache.kv_dim(), kKvDim);
  EXPECT_EQ(cache.bytes(), 2 * kLayers * kCtx * kKvDim * sizeof(float));
  // positions 0..6 of layer 1, stored in two batches
  const std::vector<float> keys = test::random_normal(7 * kKvDim, 1);
  const std::vector<float> values = test::random_normal(7 * kKvDim, 2);
  cache.store(1, 0, std::span(keys).first(3 * kKvDim), std::span(values).first(3 * kKvDim));
  cache.store(1, 3, std::span(keys).subspan(3 * kKvDim), std::span(values).subspan(3 * kKvDim));
  std::vector<uint8_t> k(cache.rows_bytes(7)), v(k.size());
  cache.copy_rows_out(1, 7, k, v);
  EXPECT_EQ(k, as_bytes(keys));
  EXPECT_EQ(v, as_bytes(values));

  // Attention sees kv head g's row of position p at p * kv_stride + g * kv_head_stride.
  backends::AttentionArgs a;
  cache.attend_rows(1, 7, a);
  ASSERT_EQ(a.kv_stride, kHeadDim);
  ASSERT_EQ(a.kv_head_stride, kCtx * kHeadDim);
  ASSERT_EQ(a.k.size(), (kHeads - 1) * a.kv_head_stride + 7 * kHeadDim);
  for (size_t p = 0; p < 7; ++p)
    for (size_t g = 0; g < kHeads; ++g)
      for (size_t d = 0; d < kHeadDim; ++d) {
        EXPECT_EQ(a.k[p * a.kv_stride + g * a.kv_head_stride + d],
                  keys[p * kKvDim + g * kHeadDim + d]);
        EXPECT_EQ(a.v[p * a.kv_stride + g * a.kv_head_stride + d],
                  values[p * kKvDim + g * kHeadDim + d]);
      }

  // copy_rows_in into another cache: the same rows, and layer 1 only
  KvCache other(kLayers, kCtx, kHeads, kHeadDim, kernels::DType::F32);
  other.copy_rows_in(1, 7, k, v);
  std::vector<uint8_t> k2(k.size()), v2(v.size());
  other.copy_rows_out(1, 7, k2, v2);
  EXPECT_EQ(k2, k);
  EXPECT_EQ(v2, v);
  other.copy_rows_out(0, 7, k2, v2);
  EXPECT_EQ(k2, std::vector<uint8_t>(k.size(), 0));
}

TEST(KvCache, F16RowsAreTheRoundedValues) {
  KvCache cache(1, kCtx, kHeads, kHeadDim, kernels::DType::F16);
  const std::vector<float> keys = test::random_normal(2 * kKvDim, 3);
  const std::vector<float> values = test::random_normal(2 * kKvDim, 4);
  cache.store(0, 5, keys, values);  // positions 5 and 6
  std::vector<uint8_t> k(cache.rows_bytes(7)), v(k.size());
  ASSERT_EQ(k.size(), 7 * kKvDim * 2);
  cache.copy_rows_out(0, 7, k, v);
  for (size_t i = 0; i < keys.size(); ++i) {
    uint16_t kh, vh;
    std::memcpy(&kh, k.data() + 5 * kKvDim * 2 + 2 * i, 2);
    std::memcpy(&vh, v.data() + 5 * kKvDim * 2 + 2 * i, 2);
    EXPECT_EQ(kh, kernels::f32_to_f16(keys[i])) << i;
    EXPECT_EQ(vh, kernels::f32_to_f16(values[i])) << i;
  }
}

TEST(KvCache, RejectsRowsOutsideTheCache) {
  KvCache cache(2, kCtx, kHeads, kHeadDim, kernels::DType::F32);
  const std::vector<float> row(kKvDim, 1.0f), two(2 * kKvDim, 1.0f);
  EXPECT_THROW(cache.store(2, 0, row, row), Error);         // no layer 2
  EXPECT_THROW(cache.store(0, kCtx - 1, two, two), Error);  // past the context
  EXPECT_THROW(cache.store(0, 0, row, two), Error);         // keys and values differ
  EXPECT_THROW(cache.store(0, 0, std::span(row).first(3), std::span(row).first(3)), Error);
  std::vector<uint8_t> k(cache.rows_bytes(kCtx + 1)), v(k.size());
  EXPECT_THROW(cache.copy_rows_out(0, kCtx + 1, k, v), Error);
  std::vector<uint8_t> small(cache.rows_bytes(2) - 1);
  EXPECT_THROW(cache.copy_rows_out(0, 2, small, small), Error);
  backends::AttentionArgs a;
  EXPECT_THROW(cache.attend_rows(0, kCtx + 1, a), Error);
  EXPECT_THROW(KvCache(1, 4, 2, 4, kernels::DType::Q8_0), Error);
}

}  // namespace
}  // namespace oxi::llm
