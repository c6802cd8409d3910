// The repacked q4_1 layout (kernels/formats/q4_1_r16.h: q4_0_r16's groups with the mins beside
// the scales, against q5_1_r16's q8_1 activation): lossless repacking, decoding identical to
// q4_1, the activation, and its matvec / gemm_q against a naive double product, the scalar path
// and plain q4_1 on every available instruction set.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/formats/blocks.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/q4_1_r16.h"
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

TEST(Q4_1R16, IsAnInternalTypeOfQ4_1Size) {
  expect_internal_layout_of(DType::Q4_1, DType::Q4_1_R16, "q4_1_r16", DType::Q8_1, kLengths);
  EXPECT_FALSE(kernels::repack_row(DType::Q5_0, DType::Q4_1_R16, nullptr, nullptr, 32));
}

TEST(Q4_1R16, RepackIsLosslessAndDecodesBitExactly) {
  expect_repack_lossless_and_bit_exact(DType::Q4_1, DType::Q4_1_R16, kLengths, 32 * 16);
}

TEST(Q4_1R16, EncoderIsQ4_1Repacked) {
  expect_encoder_is_plain_repacked(DType::Q4_1, DType::Q4_1_R16, kLengths);
}

// The activation is q5_1_r16's (whose test checks it against plain q5_1's q8_1 blocks), and plain
// q4_1 takes the same q8_1 blocks as plain q5_1.
TEST(Q4_1R16, ActivationIsQ5_1R16s) {
  for (size_t n : kLengths) {
    const std::vector<float> x = random_floats(n, static_cast<uint32_t>(n), -3.0f, 3.0f);
    ASSERT_EQ(kernels::activation_dtype(DType::Q4_1_R16), DType::Q8_1);
    ASSERT_EQ(kernels::activation_bytes(DType::Q4_1_R16, n),
              kernels::activation_bytes(DType::Q5_1_R16, n));
    std::vector<uint8_t> got(kernels::activation_bytes(DType::Q4_1_R16, n), 0xAB);
    std::vector<uint8_t> want(got.size(), 0xCD);
    kernels::quantize_activation(DType::Q4_1_R16, x.data(), got.data(), n);
    kernels::quantize_activation(DType::Q5_1_R16, x.data(), want.data(), n);
    EXPECT_EQ(got, want) << n;
  }
}

TEST(Q4_1R16, MatvecMatchesNaiveDoubleScalarAndPlainOnEveryIsa) {
  expect_matvec_matches_naive_scalar_and_plain(DType::Q4_1, DType::Q4_1_R16, kLengths);
}

TEST(Q4_1R16, GemmQMatchesPerTokenMatvec) {
  const size_t lengths[] = {32 * 16 * 5 + 32 * 7, 32 * 3, 384};
  expect_gemm_q_matches_matvec(DType::Q4_1, DType::Q4_1_R16, lengths, GemmMatch::kUpToContraction);
}

TEST(Q4_1R16, Avx512IsBitIdenticalToAvx2) {
  const size_t lengths[] = {32 * 16 * 4, 32 * 16 * 11, 32 * 16 * 5 + 32 * 7, 32 * 3, 384};
  expect_avx512_bit_identical_to_avx2(DType::Q4_1, DType::Q4_1_R16, lengths);
}

// Nibbles 0 and 15 and mixed patterns, with a min, against activations of -127 and +127
// everywhere.
TEST(Q4_1R16, ExtremeValuesAndActivations) {
  expect_uniform_rows_match_naive<kernels::BlockQ4_1>(DType::Q4_1, DType::Q4_1_R16);
}

TEST(Q4_1R16, PreferredWhereAHandWrittenKernelExists) {
  expect_preferred_where(DType::Q4_1, DType::Q4_1_R16, &kernels::FormatKernels::fast_q4_1_r16,
                         has_avx2_kernels);
}

}  // namespace
}  // namespace oxi::test::formats
