// q4_K rows repacked in sets of rows (kernels/formats/q4_k_r8s.h): the set sizes, the groups'
// sources, lossless repacking of whole matrices, decoding any row bit-identically to q4_K, the
// activation pattern,
// and the matvec / gemm_q against a naive double product, the scalar path and plain q4_K on
// every available instruction set.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <vector>

#include "kernels/formats/blocks.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/q4_k_r8s.h"
#include "kernels/formats/quant.h"
#include "tests/common/test_data.h"
#include "tests/kernels/formats/reference.h"
#include "tests/kernels/formats/repacked_checks.h"

namespace oxi::test::formats {
namespace {

using kernels::DType;
using kernels::Isa;

// Every short-group size (1-7 blocks) after whole groups, rows of fewer than 8 blocks (a group
// spans up to 8 rows), TinyLlama's 5632 (sets of 4), Llama-3.2-3B's 3072 (sets of 2), Llama 2
// 7B's 11008 (43 blocks, sets of 8), and whole groups (sets of one row: q4_K_r8's layout).
const size_t kLengths[] = {256 * 22, 256 * 12, 256 * 43, 256 * 9, 256 * 10,
                           256 * 11, 256 * 13, 256 * 15, 256 * 1, 256 * 2,
                           256 * 3,  256 * 6,  256 * 7,  256 * 8, 256 * 16};

std::vector<uint8_t> random_rows(size_t rows, size_t n, uint32_t seed) {
  std::vector<uint8_t> out;
  for (size_t r = 0; r < rows; ++r) {
    const std::vector<uint8_t> row = random_row(DType::Q4_K, n, seed * 1000 + r);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

TEST(Q4_KR8S, SetsFillWholeGroups) {
  EXPECT_EQ(kernels::name(DType::Q4_K_R8S), "q4_K_r8s");
  EXPECT_FALSE(kernels::dtype_info(static_cast<uint32_t>(DType::Q4_K_R8S)).has_value());
  EXPECT_TRUE(kernels::weight_supported(DType::Q4_K_R8S));
  EXPECT_EQ(kernels::activation_dtype(DType::Q4_K_R8S), DType::Q8_K);
  EXPECT_EQ(kernels::row_decoder(DType::Q4_K_R8S), nullptr);  // rows are not on their own
  EXPECT_EQ(kernels::K8Sets(256 * 22).set_rows, 4u);
  EXPECT_EQ(kernels::K8Sets(256 * 22).groups, 11u);
  EXPECT_EQ(kernels::K8Sets(256 * 22).act_groups, 5u);  // 2 whole + 3 tail patterns
  EXPECT_EQ(kernels::K8Sets(256 * 12).set_rows, 2u);
  EXPECT_EQ(kernels::K8Sets(256 * 43).set_rows, 8u);
  EXPECT_EQ(kernels::K8Sets(256 * 16).set_rows, 1u);
  for (size_t n : kLengths) {
    const size_t nb = n / 256, rows = kernels::K8Sets(n).set_rows;
    EXPECT_EQ(rows * nb % 8, 0u) << n;
    EXPECT_EQ(kernels::K8Sets(n).groups * 8, rows * nb) << n;
    EXPECT_EQ(kernels::row_granule(DType::Q4_K_R8S, n), rows);
    EXPECT_EQ(kernels::row_granule(DType::Q4_K_R8, n), 1u);
    EXPECT_EQ(kernels::row_bytes(DType::Q4_K_R8S, n), kernels::row_bytes(DType::Q4_K, n));
  }
  // rows that do not fill the sets are refused
  std::vector<uint8_t> src(3 * kernels::row_bytes(DType::Q4_K, 256 * 22)), dst(src.size());
  EXPECT_FALSE(
      kernels::repack_rows(DType::Q4_K, DType::Q4_K_R8S, src.data(), dst.data(), 3, 256 * 22));
}

// The expected source of lane k of group g of a set (q4_k_r8s.h), written out here: each row's
// whole groups, row after row, then the tails, lane 8h + k of the tails being block 8q + (8h + k)
// % t of row (8h + k) / t.
struct Source {
  size_t row, block;
};
Source expected_lane(size_t n, size_t g, size_t k) {
  const size_t q = n / 256 / 8, t = n / 256 % 8, rows = kernels::K8Sets(n).set_rows;
  if (g < rows * q) return {g / q, 8 * (g % q) + k};
  const size_t lane = 8 * (g - rows * q) + k;
  return {lane / t, 8 * q + lane % t};
}

TEST(Q4_KR8S, GroupsAreRowGroupsThenTails) {
  for (size_t n : kLengths) {
    const size_t rows = kernels::K8Sets(n).set_rows, nb = n / 256;
    const std::vector<uint8_t> plain = random_rows(rows, n, 3);
    std::vector<uint8_t> packed(plain.size());
    ASSERT_TRUE(
        kernels::repack_rows(DType::Q4_K, DType::Q4_K_R8S, plain.data(), packed.data(), rows, n));
    const auto* blocks = reinterpret_cast<const kernels::BlockQ4_K*>(plain.data());
    // every (row, block) exactly once
    std::vector<int> seen(rows * nb);
    for (size_t g = 0; g < kernels::K8Sets(n).groups; ++g) {
      kernels::BlockQ4_K want[8];
      for (size_t k = 0; k < 8; ++k) {
        const Source s = expected_lane(n, g, k);
        ASSERT_LT(s.row, rows);
        ++seen[s.row * nb + s.block];
        want[k] = blocks[s.row * nb + s.block];
      }
      uint8_t group[kernels::kK8GroupBytes];
      kernels::pack_group_q4_k_r8(want, 8, group);
      ASSERT_EQ(std::memcmp(packed.data() + g * kernels::kK8GroupBytes, group, sizeof(group)), 0)
          << "n " << n << " group " << g;
    }
    for (int c : seen) ASSERT_EQ(c, 1) << "n " << n;
  }
}

TEST(Q4_KR8S, RepackIsLosslessAndEveryRowDecodesBitExactly) {
  for (size_t n : kLengths) {
    const size_t rows = 2 * kernels::K8Sets(n).set_rows;
    const size_t row_bytes = kernels::row_bytes(DType::Q4_K, n);
    const std::vector<uint8_t> plain = random_rows(rows, n, static_cast<uint32_t>(n));
    std::vector<uint8_t> packed(plain.size()), back(plain.size());
    ASSERT_TRUE(
        kernels::repack_rows(DType::Q4_K, DType::Q4_K_R8S, plain.data(), packed.data(), rows, n));
    if (n % (256 * 8) != 0) {
      EXPECT_NE(packed, plain);
    }
    ASSERT_TRUE(
        kernels::repack_rows(DType::Q4_K_R8S, DType::Q4_K, packed.data(), back.data(), rows, n));
    ASSERT_EQ(back, plain) << "n " << n;
    for (size_t r = 0; r < rows; ++r) {
      std::vector<float> want(n), got(n, NAN);
      kernels::dequantize_row(DType::Q4_K, plain.data() + r * row_bytes, want.data(), n);
      kernels::dequantize_matrix_row(DType::Q4_K_R8S, packed.data(), row_bytes, r, got.data(), n);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
            << "n " << n << " row " << r << " element " << i;
      }
    }
  }
}

// The activation: q4_K_r8's q whole groups of x, then one group per tail group of a set, lane k
// of tail group h holding q8_K block 8q + (8h + k) % t of x, as q4_K_r8 lays out a lane.
TEST(Q4_KR8S, ActivationIsTheWholeGroupsThenTheTailPattern) {
  for (size_t n : kLengths) {
    const std::vector<float> x = random_floats(n, static_cast<uint32_t>(n), -3.0f, 3.0f);
    const size_t nb = n / 256, q = nb / 8, t = nb % 8, rows = kernels::K8Sets(n).set_rows;
    const size_t groups = q + rows * t / 8;
    ASSERT_EQ(kernels::K8Sets(n).act_groups, groups);
    std::vector<kernels::BlockQ8_K> q8(nb);
    kernels::quantize_activation(DType::Q4_K, x.data(), q8.data(), n);
    const size_t bytes = kernels::activation_bytes(DType::Q4_K_R8S, n);
    ASSERT_EQ(bytes, (groups * sizeof(kernels::ActGroupK8) + 63) / 64 * 64);
    std::vector<uint8_t> act(bytes, 0xA5);
    kernels::quantize_activation(DType::Q4_K_R8S, x.data(), act.data(), n);
    const auto* a = reinterpret_cast<const kernels::ActGroupK8*>(act.data());
    for (size_t g = 0; g < groups; ++g) {
      for (size_t k = 0; k < 8; ++k) {
        const size_t block = g < q ? 8 * g + k : 8 * q + (8 * (g - q) + k) % t;
        kernels::ActGroupK8 want{};
        kernels::set_activation_lane_q4_k_r8(q8[block], k, want);
        ASSERT_EQ(a[g].d[k], q8[block].d) << "n " << n << " group " << g << " lane " << k;
        for (size_t p = 0; p < 4; ++p) {
          ASSERT_EQ(a[g].sums[p][2 * k], want.sums[p][2 * k]);
          ASSERT_EQ(a[g].sums[p][2 * k + 1], want.sums[p][2 * k + 1]);
        }
        for (size_t j = 0; j < 8; ++j)
          for (size_t i = 0; i < 4; ++i)
            for (size_t h = 0; h < 2; ++h)
              ASSERT_EQ(std::memcmp(&a[g].q[j][i][h][4 * k], &want.q[j][i][h][4 * k], 4), 0);
      }
    }
  }
}

TEST(Q4_KR8S, MatvecMatchesNaiveDoubleScalarAndPlainOnEveryIsa) {
  expect_matvec_matches_naive_scalar_and_plain(DType::Q4_K, DType::Q4_K_R8S, kLengths);
}

TEST(Q4_KR8S, GemmQMatchesPerTokenMatvec) {
  const size_t lengths[] = {256 * 22, 256 * 12, 256 * 3, 256 * 13};
  expect_gemm_q_matches_matvec(DType::Q4_K, DType::Q4_K_R8S, lengths, GemmMatch::kBitExact);
}

TEST(Q4_KR8S, Avx512IsBitIdenticalToAvx2) {
  const size_t lengths[] = {256 * 22, 256 * 12, 256 * 3, 256 * 43};
  expect_avx512_bit_identical_to_avx2(DType::Q4_K, DType::Q4_K_R8S, lengths);
}

// Chosen for q4_K matrices whose rows end in a short q4_K_r8 group and whose row count fills
// the sets; q4_K_r8 elsewhere.
TEST(Q4_KR8S, PreferredForRowsWithAShortGroup) {
  for (Isa isa : available_isas()) {
    const kernels::FormatKernels& k = kernels::format_kernels(isa);
    const bool fast = has_avx2_kernels(isa);
    EXPECT_EQ(k.preferred_layout(DType::Q4_K, 2048, 5632), fast ? DType::Q4_K_R8S : DType::Q4_K);
    EXPECT_EQ(k.preferred_layout(DType::Q4_K, 3072, 3072), fast ? DType::Q4_K_R8S : DType::Q4_K);
    EXPECT_EQ(k.preferred_layout(DType::Q4_K, 2046, 5632), fast ? DType::Q4_K_R8 : DType::Q4_K);
    EXPECT_EQ(k.preferred_layout(DType::Q4_K, 5632, 2048), fast ? DType::Q4_K_R8 : DType::Q4_K);
    EXPECT_EQ(k.preferred_layout(DType::Q6_K, 2048, 5632), DType::Q6_K);
    EXPECT_NE(k.matvec_for(DType::Q4_K_R8S), nullptr);
    EXPECT_NE(k.gemm_q_for(DType::Q4_K_R8S), nullptr);
  }
}

}  // namespace
}  // namespace oxi::test::formats
