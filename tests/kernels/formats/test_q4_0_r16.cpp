// The repacked q4_0 layout (kernels/formats/q4_0_r16.h): lossless repacking, decoding identical
// to q4_0, the activation layout, and its matvec / gemm_q against a naive double product, the
// scalar path and plain q4_0 on every available instruction set. Row lengths leave blocks
// outside the 16-block groups (a short group at the row's end).
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <vector>

#include "kernels/formats/blocks.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/q4_0_r16.h"
#include "kernels/formats/quant.h"
#include "tests/common/test_data.h"
#include "tests/kernels/formats/reference.h"
#include "tests/kernels/formats/repacked_checks.h"

namespace oxi::test::formats {
namespace {

using kernels::DType;
using kernels::Isa;

// A group and a short group of 1, a short group only, groups and a short group of 7, one
// group, Qwen2.5-0.5B's rows (1 + 12 blocks) and a short group of 9 (blocks 8-15 used).
const size_t kLengths[] = {32 * 17, 32 * 3, 32 * 16 * 5 + 32 * 7,
                           32 * 16, 896,    32 * 16 * 2 + 32 * 9};

std::vector<uint8_t> repack(const std::vector<uint8_t>& q4_0, size_t n) {
  return repack_copy(DType::Q4_0, DType::Q4_0_R16, q4_0, n);
}

TEST(Q4_0R16, IsAnInternalTypeOfQ4_0Size) {
  expect_internal_layout_of(DType::Q4_0, DType::Q4_0_R16, "q4_0_r16", DType::Q8_0, kLengths);
  EXPECT_FALSE(kernels::repack_row(DType::Q8_0, DType::Q4_0_R16, nullptr, nullptr, 32));
}

TEST(Q4_0R16, RepackIsLosslessAndDecodesBitExactly) {
  expect_repack_lossless_and_bit_exact(DType::Q4_0, DType::Q4_0_R16, kLengths, 32 * 16);
}

TEST(Q4_0R16, EncoderIsQ4_0Repacked) {
  expect_encoder_is_plain_repacked(DType::Q4_0, DType::Q4_0_R16, kLengths);
}

// The activation holds q8_0's own scales and integers, rearranged, and 8 * sum(q) per block;
// the short group's lanes past its blocks are zero.
TEST(Q4_0R16, ActivationIsQ8_0Rearranged) {
  for (size_t n : kLengths) {
    const std::vector<float> x = random_floats(n, static_cast<uint32_t>(n), -3.0f, 3.0f);
    const size_t blocks = n / 32, groups = (blocks + 15) / 16;
    std::vector<kernels::BlockQ8_0> q8(blocks);
    kernels::quantize_activation(DType::Q8_0, x.data(), q8.data(), n);
    const size_t bytes = kernels::activation_bytes(DType::Q4_0_R16, n);
    ASSERT_EQ(bytes, groups * sizeof(kernels::ActGroupR16));  // 640: whole 64-byte lines
    std::vector<uint8_t> act(bytes, 0xAB);
    kernels::quantize_activation(DType::Q4_0_R16, x.data(), act.data(), n);
    const auto* a = reinterpret_cast<const kernels::ActGroupR16*>(act.data());
    for (size_t g = 0; g < groups; ++g) {
      for (size_t b = 0; b < 16; ++b) {
        if (16 * g + b >= blocks) {
          ASSERT_EQ(a[g].d[b], 0.0f);
          ASSERT_EQ(a[g].zero[b], 0);
          for (size_t k = 0; k < 4; ++k)
            for (size_t j = 0; j < 4; ++j)
              ASSERT_TRUE(a[g].q[k][0][4 * b + j] == 0 && a[g].q[k][1][4 * b + j] == 0);
          continue;
        }
        const kernels::BlockQ8_0& want = q8[16 * g + b];
        ASSERT_EQ(a[g].d[b], kernels::f16_to_f32(want.d));
        int sum = 0;
        for (size_t j = 0; j < 32; ++j) {
          sum += want.qs[j];
          const size_t k = (j % 16) / 4, half = j / 16;
          ASSERT_EQ(a[g].q[k][half][4 * b + j % 4], want.qs[j]) << "block " << 16 * g + b;
        }
        ASSERT_EQ(a[g].zero[b], 8 * sum);
      }
    }
  }
}

// A row's short group: the m blocks' scales, then chunk k of every block (4 bytes each).
TEST(Q4_0R16, ShortGroupIsTheGroupLayoutForItsBlocks) {
  const size_t n = 32 * 16 + 32 * 5, m = 5;
  const std::vector<uint8_t> plain = random_row(DType::Q4_0, n, 77);
  const std::vector<uint8_t> packed = repack(plain, n);
  const auto* blocks = reinterpret_cast<const kernels::BlockQ4_0*>(plain.data()) + 16;
  const uint8_t* g = packed.data() + sizeof(kernels::WeightGroupR16);
  for (size_t b = 0; b < m; ++b) {
    EXPECT_EQ(std::memcmp(g + 2 * b, &blocks[b].d, 2), 0) << "scale " << b;
    for (size_t k = 0; k < 4; ++k)
      EXPECT_EQ(std::memcmp(g + 2 * m + 4 * m * k + 4 * b, &blocks[b].qs[4 * k], 4), 0)
          << "block " << b << " chunk " << k;
  }
}

TEST(Q4_0R16, MatvecMatchesNaiveDoubleScalarAndPlainOnEveryIsa) {
  expect_matvec_matches_naive_scalar_and_plain(DType::Q4_0, DType::Q4_0_R16, kLengths);
}

TEST(Q4_0R16, GemmQMatchesPerTokenMatvec) {
  const size_t lengths[] = {32 * 16 * 5 + 32 * 7, 32 * 3, 896};
  expect_gemm_q_matches_matvec(DType::Q4_0, DType::Q4_0_R16, lengths, GemmMatch::kUpToContraction);
}

// avx512 sums a half-group's nibbles with VNNI dot products where avx2 uses maddubs / madd: the
// same integers, then the same float steps, so the same bits.
TEST(Q4_0R16, Avx512IsBitIdenticalToAvx2) {
  const size_t lengths[] = {32 * 16 * 4, 32 * 16 * 11, 32 * 16 * 5 + 32 * 7, 32 * 3, 896};
  expect_avx512_bit_identical_to_avx2(DType::Q4_0, DType::Q4_0_R16, lengths);
}

TEST(Q4_0R16, PreferredWhereAHandWrittenKernelExists) {
  for (Isa isa : available_isas()) {
    const kernels::FormatKernels& k = kernels::format_kernels(isa);
    EXPECT_EQ(k.fast_q4_0_r16, has_avx2_kernels(isa)) << kernels::isa_name(isa);
    EXPECT_EQ(k.preferred_layout(DType::Q4_0),
              has_avx2_kernels(isa) ? DType::Q4_0_R16 : DType::Q4_0);
    for (DType t : {DType::Q6_K, DType::F16, DType::Q4_0_R16})
      EXPECT_EQ(k.preferred_layout(t), t);
    EXPECT_NE(k.gemm_q_for(DType::Q4_0_R16), nullptr);
  }
}

}  // namespace
}  // namespace oxi::test::formats
