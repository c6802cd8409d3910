// The repacked q5_0 layout (kernels/formats/q5_0_r16.h: q4_0_r16's groups with each block's
// fifth bits beside its scale): lossless repacking, decoding identical to q5_0, the activation's
// zero, and its matvec / gemm_q against a naive double product, the scalar path and plain q5_0
// on every available instruction set.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/formats/blocks.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/q5_0_r16.h"
#include "kernels/formats/quant.h"
#include "tests/common/test_data.h"
#include "tests/kernels/formats/reference.h"
#include "tests/kernels/formats/repacked_checks.h"

namespace oxi::test::formats {
namespace {

using kernels::DType;
using kernels::Isa;

// As test_q4_0_r16.cpp's: whole groups, short groups of 1, 3, 5, 7, 9 and 12 blocks (Qwen2.5-0.5B's
// 896-wide rows, which llama.cpp's K-quant files hold in q5_0).
const size_t kLengths[] = {32 * 17, 32 * 3, 32 * 16 * 5 + 32 * 7,
                           32 * 16, 896,    32 * 16 * 2 + 32 * 9};

TEST(Q5_0R16, IsAnInternalTypeOfQ5_0Size) {
  expect_internal_layout_of(DType::Q5_0, DType::Q5_0_R16, "q5_0_r16", DType::Q8_0, kLengths);
  EXPECT_FALSE(kernels::repack_row(DType::Q4_0, DType::Q5_0_R16, nullptr, nullptr, 32));
}

// Every fifth bit lands where the layout says: chunk k's byte of a block holds elements
// 4k .. 4k + 3 in bits 0-3 and 16 + 4k .. in bits 4-7.
TEST(Q5_0R16, FifthBitBytes) {
  for (size_t e = 0; e < 32; ++e) {
    const uint32_t qh = uint32_t{1} << e;
    uint8_t fifth[4];
    for (size_t k = 0; k < 4; ++k) fifth[k] = kernels::q5_r16_fifth_byte(qh, k);
    const size_t k = e % 16 / 4, bit = e % 4 + (e >= 16 ? 4 : 0);
    for (size_t kk = 0; kk < 4; ++kk) EXPECT_EQ(fifth[kk], kk == k ? 1u << bit : 0u) << e;
    EXPECT_EQ(kernels::q5_0_qh_of(fifth), qh) << e;
  }
}

TEST(Q5_0R16, RepackIsLosslessAndDecodesBitExactly) {
  expect_repack_lossless_and_bit_exact(DType::Q5_0, DType::Q5_0_R16, kLengths, 32 * 16);
}

TEST(Q5_0R16, EncoderIsQ5_0Repacked) {
  expect_encoder_is_plain_repacked(DType::Q5_0, DType::Q5_0_R16, kLengths);
}

// q4_0_r16's activation (the same q8_0 values in the same places) with 16 * sum(q) as the zero.
TEST(Q5_0R16, ActivationIsQ4_0R16sWithZero16) {
  expect_activation_is_q4_0_r16s(DType::Q5_0_R16, 16, kLengths);
}

TEST(Q5_0R16, MatvecMatchesNaiveDoubleScalarAndPlainOnEveryIsa) {
  expect_matvec_matches_naive_scalar_and_plain(DType::Q5_0, DType::Q5_0_R16, kLengths);
}

TEST(Q5_0R16, GemmQMatchesPerTokenMatvec) {
  const size_t lengths[] = {32 * 16 * 5 + 32 * 7, 32 * 3, 896};
  expect_gemm_q_matches_matvec(DType::Q5_0, DType::Q5_0_R16, lengths, GemmMatch::kUpToContraction);
}

// avx512's one-token pass (mask registers and byte adds) against the 256-bit pass (compares and
// ors): the same integers, then the same float steps, so the same bits.
TEST(Q5_0R16, Avx512IsBitIdenticalToAvx2) {
  const size_t lengths[] = {32 * 16 * 4, 32 * 16 * 11, 32 * 16 * 5 + 32 * 7, 32 * 3, 896};
  expect_avx512_bit_identical_to_avx2(DType::Q5_0, DType::Q5_0_R16, lengths);
}

// Values 0 and 31 (all fifth bits clear / set) and mixed patterns against activations of -127 and
// +127 everywhere: the extremes of both paths' ranges (two maddubs pairs of 2 x 31 x 127 summed in
// int16 on AVX2).
TEST(Q5_0R16, ExtremeValuesAndActivations) {
  expect_uniform_rows_match_naive<kernels::BlockQ5_0>(DType::Q5_0, DType::Q5_0_R16);
}

TEST(Q5_0R16, PreferredWhereAHandWrittenKernelExists) {
  expect_preferred_where(DType::Q5_0, DType::Q5_0_R16, &kernels::FormatKernels::fast_q5_0_r16,
                         has_avx2_kernels);
}

}  // namespace
}  // namespace oxi::test::formats
