// The repacked iq4_nl layout (kernels/formats/iq4_nl_r16.h, q4_0_r16's groups over iq4_nl
// blocks): lossless repacking, decoding identical to iq4_nl, the activation's zero, and its
// matvec / gemm_q against a naive double product, the scalar path and plain iq4_nl on every
// available instruction set (avx2 through the sign trick, avx512 through level + 128 with VNNI).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernels/formats/blocks.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/iq4_nl_r16.h"
#include "kernels/formats/quant.h"
#include "tests/common/test_data.h"
#include "tests/kernels/formats/reference.h"
#include "tests/kernels/formats/repacked_checks.h"

namespace oxi::test::formats {
namespace {

using kernels::DType;
using kernels::Isa;

// As test_q4_0_r16.cpp's: whole groups, short groups of 1, 3, 5, 7, 9 and 12 blocks (Qwen2.5-0.5B's
// 896-wide rows).
const size_t kLengths[] = {32 * 17, 32 * 3, 32 * 16 * 5 + 32 * 7,
                           32 * 16, 896,    32 * 16 * 2 + 32 * 9};

TEST(IQ4_NLR16, IsAnInternalTypeOfIQ4_NLSize) {
  expect_internal_layout_of(DType::IQ4_NL, DType::IQ4_NL_R16, "iq4_nl_r16", DType::Q8_0, kLengths);
  EXPECT_FALSE(kernels::repack_row(DType::Q4_0, DType::IQ4_NL_R16, nullptr, nullptr, 32));
}

TEST(IQ4_NLR16, RepackIsLosslessAndDecodesBitExactly) {
  expect_repack_lossless_and_bit_exact(DType::IQ4_NL, DType::IQ4_NL_R16, kLengths, 32 * 16);
}

TEST(IQ4_NLR16, EncoderIsIQ4_NLRepacked) {
  expect_encoder_is_plain_repacked(DType::IQ4_NL, DType::IQ4_NL_R16, kLengths);
}

// q4_0_r16's activation (the same q8_0 values in the same places) with 128 * sum(q) as the zero.
TEST(IQ4_NLR16, ActivationIsQ4_0R16sWithZero128) {
  expect_activation_is_q4_0_r16s(DType::IQ4_NL_R16, 128, kLengths);
}

TEST(IQ4_NLR16, MatvecMatchesNaiveDoubleScalarAndPlainOnEveryIsa) {
  expect_matvec_matches_naive_scalar_and_plain(DType::IQ4_NL, DType::IQ4_NL_R16, kLengths);
}

TEST(IQ4_NLR16, GemmQMatchesPerTokenMatvec) {
  const size_t lengths[] = {32 * 16 * 5 + 32 * 7, 32 * 3, 896};
  expect_gemm_q_matches_matvec(DType::IQ4_NL, DType::IQ4_NL_R16, lengths,
                               GemmMatch::kUpToContraction);
}

// avx512's one-token pass and VNNI sums meet level + 128 where avx2 meets the signed levels:
// the same integers, then the same float steps, so the same bits.
TEST(IQ4_NLR16, Avx512IsBitIdenticalToAvx2) {
  const size_t lengths[] = {32 * 16 * 4, 32 * 16 * 11, 32 * 16 * 5 + 32 * 7, 32 * 3, 896};
  expect_avx512_bit_identical_to_avx2(DType::IQ4_NL, DType::IQ4_NL_R16, lengths);
}

// The most negative level against activations of -127 everywhere, and the largest against +127:
// the extremes of both paths' ranges (maddubs pairs of 2 x 127 x 127; level + 128 = 241).
TEST(IQ4_NLR16, ExtremeLevelsAndActivations) {
  const size_t n = 32 * 16 + 32 * 3;
  for (uint8_t nibbles : {uint8_t{0x00}, uint8_t{0xFF}, uint8_t{0x0F}}) {
    std::vector<uint8_t> row(n / 32 * sizeof(kernels::BlockIQ4_NL));
    for (size_t i = 0; i < n / 32; ++i) {
      kernels::BlockIQ4_NL b;
      b.d = 0x3C00;  // 1.0
      std::memset(b.qs, nibbles, sizeof b.qs);
      std::memcpy(row.data() + i * sizeof b, &b, sizeof b);
    }
    expect_constant_activations_match_naive(DType::IQ4_NL, DType::IQ4_NL_R16, row, n,
                                            "nibbles " + std::to_string(nibbles));
  }
}

TEST(IQ4_NLR16, PreferredWhereAHandWrittenKernelExists) {
  expect_preferred_where(DType::IQ4_NL, DType::IQ4_NL_R16, &kernels::FormatKernels::fast_iq4_nl_r16,
                         has_avx2_kernels);
}

}  // namespace
}  // namespace oxi::test::formats
