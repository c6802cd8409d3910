// The repacked q5_1 layout (kernels/formats/q5_1_r16.h: q5_0_r16's groups with the mins beside
// the scales, against q8_1 activations in the same places): lossless repacking, decoding
// identical to q5_1, the activation, and its matvec / gemm_q against a naive double product, the
// scalar path and plain q5_1 on every available instruction set.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/formats/blocks.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/q5_1_r16.h"
#include "kernels/formats/quant.h"
#include "tests/common/test_data.h"
#include "tests/kernels/formats/reference.h"
#include "tests/kernels/formats/repacked_checks.h"

namespace oxi::test::formats {
namespace {

using kernels::DType;
using kernels::Isa;

// Whole groups, short groups of 1, 3, 5, 7, 9 and 12 blocks (Whisper tiny's 384-wide rows are
// 12 blocks).
const size_t kLengths[] = {32 * 17, 32 * 3, 32 * 16 * 5 + 32 * 7,
                           32 * 16, 384,    32 * 16 * 2 + 32 * 9};

TEST(Q5_1R16, IsAnInternalTypeOfQ5_1Size) {
  expect_internal_layout_of(DType::Q5_1, DType::Q5_1_R16, "q5_1_r16", DType::Q8_1, kLengths);
  EXPECT_FALSE(kernels::repack_row(DType::Q5_0, DType::Q5_1_R16, nullptr, nullptr, 32));
}

TEST(Q5_1R16, RepackIsLosslessAndDecodesBitExactly) {
  expect_repack_lossless_and_bit_exact(DType::Q5_1, DType::Q5_1_R16, kLengths, 32 * 16);
}

TEST(Q5_1R16, EncoderIsQ5_1Repacked) {
  expect_encoder_is_plain_repacked(DType::Q5_1, DType::Q5_1_R16, kLengths);
}

// Plain q5_1's q8_1 blocks, rearranged: the scale and s as f32, the values in q4_0_r16's places.
TEST(Q5_1R16, ActivationIsQ8_1Rearranged) {
  for (size_t n : kLengths) {
    const std::vector<float> x = random_floats(n, static_cast<uint32_t>(n), -3.0f, 3.0f);
    std::vector<uint8_t> got(kernels::activation_bytes(DType::Q5_1_R16, n), 0xAB);
    std::vector<kernels::BlockQ8_1> plain(n / 32);
    ASSERT_EQ(kernels::activation_bytes(DType::Q5_1, n), plain.size() * sizeof plain[0]);
    kernels::quantize_activation(DType::Q5_1_R16, x.data(), got.data(), n);
    kernels::quantize_activation(DType::Q5_1, x.data(), plain.data(), n);
    const auto* a = reinterpret_cast<const kernels::ActGroupQ8_1R16*>(got.data());
    for (size_t i = 0; i < plain.size(); ++i) {
      const kernels::ActGroupQ8_1R16& g = a[i / 16];
      const size_t b = i % 16;
      ASSERT_EQ(g.d[b], kernels::f16_to_f32(plain[i].d)) << i;
      ASSERT_EQ(g.s[b], kernels::f16_to_f32(plain[i].s)) << i;
      for (size_t k = 0; k < 4; ++k) {
        ASSERT_EQ(std::memcmp(&g.q[k][0][4 * b], &plain[i].qs[4 * k], 4), 0) << i;
        ASSERT_EQ(std::memcmp(&g.q[k][1][4 * b], &plain[i].qs[16 + 4 * k], 4), 0) << i;
      }
    }
    // a short group's lanes past its blocks are zero: they add nothing
    if (plain.size() % 16 != 0) {
      const kernels::ActGroupQ8_1R16& last = a[plain.size() / 16];
      for (size_t b = plain.size() % 16; b < 16; ++b) {
        EXPECT_EQ(last.d[b], 0.0f);
        EXPECT_EQ(last.s[b], 0.0f);
      }
    }
  }
}

TEST(Q5_1R16, MatvecMatchesNaiveDoubleScalarAndPlainOnEveryIsa) {
  expect_matvec_matches_naive_scalar_and_plain(DType::Q5_1, DType::Q5_1_R16, kLengths);
}

TEST(Q5_1R16, GemmQMatchesPerTokenMatvec) {
  const size_t lengths[] = {32 * 16 * 5 + 32 * 7, 32 * 3, 384};
  expect_gemm_q_matches_matvec(DType::Q5_1, DType::Q5_1_R16, lengths, GemmMatch::kUpToContraction);
}

TEST(Q5_1R16, Avx512IsBitIdenticalToAvx2) {
  const size_t lengths[] = {32 * 16 * 4, 32 * 16 * 11, 32 * 16 * 5 + 32 * 7, 32 * 3, 384};
  expect_avx512_bit_identical_to_avx2(DType::Q5_1, DType::Q5_1_R16, lengths);
}

// Values 0 and 31 and mixed fifth-bit patterns, with a min, against activations of -127 and +127
// everywhere.
TEST(Q5_1R16, ExtremeValuesAndActivations) {
  expect_uniform_rows_match_naive<kernels::BlockQ5_1>(DType::Q5_1, DType::Q5_1_R16);
}

TEST(Q5_1R16, PreferredWhereAHandWrittenKernelExists) {
  expect_preferred_where(DType::Q5_1, DType::Q5_1_R16, &kernels::FormatKernels::fast_q5_1_r16,
                         has_avx2_kernels);
}

}  // namespace
}  // namespace oxi::test::formats
