// The repacked q8_0 layout (kernels/formats/q8_0_r16.h): lossless repacking, decoding identical
// to q8_0, the activation layout, and its matvec / gemm_q against a naive double product, the
// scalar path and plain q8_0 on every available instruction set. Row lengths leave blocks
// outside the 16-block groups (a short group at the row's end). Random rows hold every
// byte value, so weights of -128 (the edge of the sign trick) are exercised.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <vector>

#include "kernels/formats/blocks.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/q8_0_r16.h"
#include "kernels/formats/quant.h"
#include "tests/common/test_data.h"
#include "tests/kernels/formats/reference.h"
#include "tests/kernels/formats/repacked_checks.h"

namespace oxi::test::formats {
namespace {

using kernels::DType;
using kernels::Isa;

// Short groups of 1 and 1 after two groups, a short group only (5), groups and a short group of
// 7, one group, Qwen2.5-0.5B's rows (1 + 12 blocks) and a short group of 9 (blocks 8-15 used).
const size_t kLengths[] = {32 * 17, 32 * 33, 32 * 5,          32 * 16 * 5 + 32 * 7,
                           32 * 16, 896,     32 * 16 + 32 * 9};

std::vector<uint8_t> repack(const std::vector<uint8_t>& q8_0, size_t n) {
  return repack_copy(DType::Q8_0, DType::Q8_0_R16, q8_0, n);
}

TEST(Q8_0R16, IsAnInternalTypeOfQ8_0Size) {
  expect_internal_layout_of(DType::Q8_0, DType::Q8_0_R16, "q8_0_r16", DType::Q8_0, kLengths);
  EXPECT_LT(static_cast<size_t>(DType::Q8_0_R16), kernels::kDTypeSlots);
  EXPECT_FALSE(kernels::repack_row(DType::Q4_0, DType::Q8_0_R16, nullptr, nullptr, 32));
  EXPECT_FALSE(kernels::repack_row(DType::Q8_0_R16, DType::Q4_0, nullptr, nullptr, 32));
}

TEST(Q8_0R16, RepackIsLosslessAndDecodesBitExactly) {
  expect_repack_lossless_and_bit_exact(DType::Q8_0, DType::Q8_0_R16, kLengths, 32 * 16);
}

// The layout itself: block b's scale in d[b], its bytes 4k..4k+3 at qs[k][4b..4b+3]; the short
// group of m blocks the same with m for 16 (d[m], then qs[k][4m]).
TEST(Q8_0R16, GroupLayout) {
  const size_t m = 3, n = 32 * 16 * 2 + 32 * m;
  const std::vector<uint8_t> plain = random_row(DType::Q8_0, n, 5);
  const std::vector<uint8_t> packed = repack(plain, n);
  const auto* blocks = reinterpret_cast<const kernels::BlockQ8_0*>(plain.data());
  const auto* g = reinterpret_cast<const kernels::WeightGroupQ8R16*>(packed.data());
  for (size_t i = 0; i < 32; ++i) {
    const kernels::BlockQ8_0& b = blocks[i];
    ASSERT_EQ(g[i / 16].d[i % 16], b.d) << "block " << i;
    for (size_t j = 0; j < 32; ++j)
      ASSERT_EQ(g[i / 16].qs[j / 4][4 * (i % 16) + j % 4], b.qs[j]) << "block " << i;
  }
  const uint8_t* short_group = packed.data() + 2 * sizeof(kernels::WeightGroupQ8R16);
  for (size_t i = 0; i < m; ++i) {
    const kernels::BlockQ8_0& b = blocks[32 + i];
    EXPECT_EQ(std::memcmp(short_group + 2 * i, &b.d, 2), 0) << "short block " << i;
    for (size_t k = 0; k < 8; ++k)
      EXPECT_EQ(std::memcmp(short_group + 2 * m + 4 * m * k + 4 * i, &b.qs[4 * k], 4), 0)
          << "short block " << i << " chunk " << k;
  }
}

TEST(Q8_0R16, EncoderIsQ8_0Repacked) {
  expect_encoder_is_plain_repacked(DType::Q8_0, DType::Q8_0_R16, kLengths);
}

// The activation holds q8_0's own scales and integers, rearranged as the weights are, and 128 x
// each block's sum of integers; the short group's lanes past its blocks are zero.
TEST(Q8_0R16, ActivationIsQ8_0Rearranged) {
  for (size_t n : kLengths) {
    const std::vector<float> x = random_floats(n, static_cast<uint32_t>(n), -3.0f, 3.0f);
    const size_t blocks = n / 32, groups = (blocks + 15) / 16;
    std::vector<kernels::BlockQ8_0> q8(blocks);
    kernels::quantize_activation(DType::Q8_0, x.data(), q8.data(), n);
    const size_t bytes = kernels::activation_bytes(DType::Q8_0_R16, n);
    ASSERT_EQ(bytes, groups * sizeof(kernels::ActGroupQ8R16));  // 640: whole 64-byte lines
    std::vector<uint8_t> act(bytes, 0xAB);
    kernels::quantize_activation(DType::Q8_0_R16, x.data(), act.data(), n);
    const auto* a = reinterpret_cast<const kernels::ActGroupQ8R16*>(act.data());
    for (size_t g = 0; g < groups; ++g) {
      for (size_t b = 0; b < 16; ++b) {
        if (16 * g + b >= blocks) {
          ASSERT_EQ(a[g].d[b], 0.0f);
          ASSERT_EQ(a[g].sum128[b], 0);
          for (size_t j = 0; j < 32; ++j) ASSERT_EQ(a[g].q[j / 4][4 * b + j % 4], 0);
          continue;
        }
        const kernels::BlockQ8_0& want = q8[16 * g + b];
        ASSERT_EQ(a[g].d[b], kernels::f16_to_f32(want.d));
        int32_t sum = 0;
        for (size_t j = 0; j < 32; ++j) {
          ASSERT_EQ(a[g].q[j / 4][4 * b + j % 4], want.qs[j]) << "block " << 16 * g + b;
          sum += want.qs[j];
        }
        ASSERT_EQ(a[g].sum128[b], 128 * sum) << "block " << 16 * g + b;
      }
    }
  }
}

TEST(Q8_0R16, MatvecMatchesNaiveDoubleScalarAndPlainOnEveryIsa) {
  expect_matvec_matches_naive_scalar_and_plain(DType::Q8_0, DType::Q8_0_R16, kLengths);
}

TEST(Q8_0R16, GemmQEqualsPerTokenMatvec) {
  const size_t lengths[] = {32 * 16 * 5 + 32 * 7, 32 * 33, 32 * 5, 896};
  expect_gemm_q_matches_matvec(DType::Q8_0, DType::Q8_0_R16, lengths, GemmMatch::kBitExact);
}

TEST(Q8_0R16, PreferredWhereAHandWrittenKernelExists) {
  for (Isa isa : available_isas()) {
    const kernels::FormatKernels& k = kernels::format_kernels(isa);
    EXPECT_EQ(k.fast_q8_0_r16, has_avx2_kernels(isa)) << kernels::isa_name(isa);
    EXPECT_EQ(k.preferred_layout(DType::Q8_0),
              has_avx2_kernels(isa) ? DType::Q8_0_R16 : DType::Q8_0);
    for (DType t : {DType::Q6_K, DType::F16, DType::Q8_0_R16, DType::Q4_0_R16})
      EXPECT_EQ(k.preferred_layout(t), t);
    EXPECT_NE(k.gemm_q_for(DType::Q8_0_R16), nullptr);
  }
}

}  // namespace
}  // namespace oxi::test::formats
