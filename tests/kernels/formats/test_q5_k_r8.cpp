// The repacked q5_K layout (kernels/formats/q5_k_r8.h): lossless repacking, decoding identical to
// q5_K, byte positions (q4_K_r8's rows of the low bits, each sub-block's fifth bits after its
// rows), and its
// matvec / gemm_q against a naive double product, the scalar path and plain q5_K on every
// available instruction set. Row lengths end in a short group (fewer than 8 blocks, masked loads
// and a spread mask) as well as in whole ones.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/formats/blocks.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/q4_k_r8.h"
#include "kernels/formats/q5_k_r8.h"
#include "kernels/formats/quant.h"
#include "tests/kernels/formats/reference.h"
#include "tests/kernels/formats/repacked_checks.h"

namespace oxi::test::formats {
namespace {

using kernels::DType;
using kernels::Isa;

const auto& kLengths = kK8RowLengths;

std::vector<uint8_t> repack(const std::vector<uint8_t>& plain, size_t n) {
  return repack_copy(DType::Q5_K, DType::Q5_K_R8, plain, n);
}

TEST(Q5_KR8, IsAnInternalTypeOfQ5_KSize) {
  expect_internal_layout_of(DType::Q5_K, DType::Q5_K_R8, "q5_K_r8", DType::Q8_K, kLengths);
  EXPECT_EQ(kernels::activation_bytes(DType::Q5_K_R8, 256 * 22),
            kernels::activation_bytes(DType::Q4_K_R8, 256 * 22));
  EXPECT_FALSE(kernels::repack_row(DType::Q4_K, DType::Q5_K_R8, nullptr, nullptr, 256));
}

TEST(Q5_KR8, RepackIsLosslessAndDecodesBitExactly) {
  expect_repack_lossless_and_bit_exact(DType::Q5_K, DType::Q5_K_R8, kLengths, 256 * 8);
}

TEST(Q5_KR8, EncoderIsQ5_KRepacked) {
  expect_encoder_is_plain_repacked(DType::Q5_K, DType::Q5_K_R8, kLengths);
}

// The layout of q5_k_r8.h, bit by bit, for a whole group and a short one: q4_K_r8's group of the
// blocks' q4_K part, its scale rows first, then each sub-block j's four quants rows followed by
// its four fields, where field i holds the fifth bit of element 32j + 8i + m of block b at bit
// 4b + m and of element 32j + 8i + 4 + m at bit 4nb + 4b + m.
TEST(Q5_KR8, GroupsAreQ4_KR8sWithEachSubBlocksFifthBits) {
  const size_t n = 256 * 11;  // a whole group, then 3 blocks
  const std::vector<uint8_t> plain = random_row(DType::Q5_K, n, 23);
  const std::vector<uint8_t> packed = repack(plain, n);
  ASSERT_EQ(packed.size(), plain.size());
  const auto* blocks = reinterpret_cast<const kernels::BlockQ5_K*>(plain.data());
  for (const auto& [first, nb] : {std::pair<size_t, size_t>{0, 8}, {8, 3}}) {
    const uint8_t* g = packed.data() + first * sizeof(kernels::BlockQ5_K);
    std::vector<kernels::BlockQ4_K> low(nb);
    for (size_t b = 0; b < nb; ++b) {
      const kernels::BlockQ5_K& s = blocks[first + b];
      low[b].d = s.d;
      low[b].dmin = s.dmin;
      std::memcpy(low[b].scales, s.scales, sizeof(s.scales));
      std::memcpy(low[b].qs, s.qs, sizeof(s.qs));
    }
    std::vector<uint8_t> q4(nb * sizeof(kernels::BlockQ4_K));
    kernels::pack_group_q4_k_r8(low.data(), nb, q4.data());
    const size_t row = 4 * nb;
    EXPECT_EQ(std::memcmp(g, q4.data(), 4 * row), 0) << "nb " << nb;
    size_t at = 4 * row;  // where the next row or field must be
    for (size_t j = 0; j < 8; ++j) {
      for (size_t i = 0; i < 4; ++i, at += row) {
        ASSERT_EQ(kernels::k5_quants_row(nb, j, i), at);
        EXPECT_EQ(std::memcmp(g + at, q4.data() + kernels::k8_qs_row(j, i) * row, row), 0)
            << "nb " << nb << " row " << j << ", " << i;
      }
      for (size_t i = 0; i < 4; ++i, at += nb) {
        ASSERT_EQ(kernels::k5_fifth_field(nb, j, i), at);
        const uint8_t* field = g + at;
        const auto bit = [&](size_t k) { return (field[k / 8] >> (k % 8)) & 1; };
        for (size_t b = 0; b < nb; ++b) {
          const kernels::BlockQ5_K& s = blocks[first + b];
          for (size_t m = 0; m < 4; ++m) {
            const size_t e = 32 * j + 8 * i + m;  // and e + 4
            ASSERT_EQ(bit(4 * b + m), (s.qh[e % 32] >> (e / 32)) & 1u);
            ASSERT_EQ(bit(4 * nb + 4 * b + m), (s.qh[(e + 4) % 32] >> ((e + 4) / 32)) & 1u);
          }
        }
      }
    }
    EXPECT_EQ(at, nb * sizeof(kernels::BlockQ5_K));
  }
}

TEST(Q5_KR8, MatvecMatchesNaiveDoubleScalarAndPlainOnEveryIsa) {
  expect_matvec_matches_naive_scalar_and_plain(DType::Q5_K, DType::Q5_K_R8, kLengths);
}

// The SIMD matvec finishes the rows of whole groups 8 at a time (q5_k_r8_tiles.h, hsum8).
TEST(Q5_KR8, MatvecRowsTogetherGiveTheBitsOfEachRowAlone) {
  expect_matvec_rows_together_give_each_rows_bits(DType::Q5_K, DType::Q5_K_R8);
}

TEST(Q5_KR8, GemmQMatchesPerTokenMatvec) {
  const size_t lengths[] = {256 * 22, 256 * 3, 256 * 13, 256 * 8};
  expect_gemm_q_matches_matvec(DType::Q5_K, DType::Q5_K_R8, lengths, GemmMatch::kBitExact);
}

// Every element at 31 (nibble 15, fifth bit set) or 16 (fifth bit alone) with sub-block scales
// and mins at 63, against activations of +-127: the sub-block dots reach 16 x 31 x 127 a lane,
// past int16 (AVX2 sums 4 maddubs of 2 x 31 x 127 in int16), and the scaled sums their largest
// magnitudes; also with the fifth bits in alternate positions (0x55 / 0xAA: each bit must reach
// its own byte). Rows of a whole group and 3 blocks, of 2 whole groups and 6 (TinyLlama's 5632),
// and of one block (a short group only).
TEST(Q5_KR8, ExtremeValuesMatchNaive) {
  for (size_t n : {size_t{256 * 11}, size_t{256 * 22}, size_t{256}})
    for (const auto& [nibbles, qh] :
         {std::pair<uint8_t, uint8_t>{0xFF, 0xFF}, {0x00, 0xFF}, {0xFF, 0x55}, {0x0F, 0xAA}}) {
      std::vector<kernels::BlockQ5_K> blocks(n / 256);
      for (auto& b : blocks) {
        b.d = 0x3C00;                                   // 1.0
        b.dmin = 0x3800;                                // 0.5
        std::memset(b.scales, 0xFF, sizeof(b.scales));  // every scale and min 63
        std::memset(b.qh, qh, sizeof(b.qh));
        std::memset(b.qs, nibbles, sizeof(b.qs));
      }
      std::vector<uint8_t> plain(blocks.size() * sizeof(kernels::BlockQ5_K));
      std::memcpy(plain.data(), blocks.data(), plain.size());
      expect_constant_activations_match_naive(DType::Q5_K, DType::Q5_K_R8, plain, n,
                                              "n " + std::to_string(n) + " qs " +
                                                  std::to_string(nibbles) + " qh " +
                                                  std::to_string(qh));
    }
}

// The AVX2 tile sums each sub-block's maddubs in int16 pairs of quants rows and scales them by
// madd; avx512 by VNNI dots and vpmulld: the same integers, met by the same f32 steps, so the same
// bits (5 tokens: gemm_q's passes and a 1-token one; whole groups, short ones, one block).
TEST(Q5_KR8, Avx512IsBitIdenticalToAvx2) {
  const size_t lengths[] = {256 * 8, 256 * 22, 256 * 13, 256 * 1, 256 * 3};
  expect_avx512_bit_identical_to_avx2(DType::Q5_K, DType::Q5_K_R8, lengths);
}

TEST(Q5_KR8, PreferredWhereAHandWrittenKernelExists) {
  expect_preferred_where(DType::Q5_K, DType::Q5_K_R8, &kernels::FormatKernels::fast_q5_k_r8,
                         [](Isa isa) { return isa == Isa::avx512; });
}

}  // namespace
}  // namespace oxi::test::formats
