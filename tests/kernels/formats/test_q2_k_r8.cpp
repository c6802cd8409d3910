// The repacked q2_K layout (kernels/formats/q2_k_r8.h): lossless repacking, decoding identical to
// q2_K, byte positions of the group (its activation is q3_K_r8's: test_q3_k_r8.cpp), and its
// matvec / gemm_q against a naive double product, the scalar path and plain q2_K on every
// available instruction set. Row lengths end in a short group (fewer than 8 blocks, masked loads)
// as well as in whole ones.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/formats/blocks.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/q2_k_r8.h"
#include "kernels/formats/quant.h"
#include "tests/kernels/formats/reference.h"
#include "tests/kernels/formats/repacked_checks.h"

namespace oxi::test::formats {
namespace {

using kernels::BlockQ2_K;
using kernels::DType;

const auto& kLengths = kK8RowLengths;

// Element e's two bits in a q2_K block as GGUF stores it: bits 2 (e % 128 / 32) of
// qs[32 (e / 128) + e % 32].
int level(const BlockQ2_K& b, size_t e) {
  return (b.qs[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32))) & 3;
}

TEST(Q2_KR8, IsAnInternalTypeOfQ2_KSize) {
  expect_internal_layout_of(DType::Q2_K, DType::Q2_K_R8, "q2_K_r8", DType::Q8_K, kLengths);
  EXPECT_EQ(kernels::activation_bytes(DType::Q2_K_R8, 256 * 22),
            kernels::activation_bytes(DType::Q3_K_R8, 256 * 22));
  EXPECT_FALSE(kernels::repack_row(DType::Q3_K, DType::Q2_K_R8, nullptr, nullptr, 256));
}

TEST(Q2_KR8, RepackIsLosslessAndDecodesBitExactly) {
  expect_repack_lossless_and_bit_exact(DType::Q2_K, DType::Q2_K_R8, kLengths, 256 * 8);
}

TEST(Q2_KR8, EncoderIsQ2_KRepacked) {
  expect_encoder_is_plain_repacked(DType::Q2_K, DType::Q2_K_R8, kLengths);
}

// The layout of q2_k_r8.h, bit by bit, for a whole group and a short one: row 0 d | dmin << 16,
// rows 1-4 the blocks' scale bytes (row 1 + q, byte 4b + m: scales[4q + m]), then per pair p two
// quants rows (row h, byte 4b + m, bits 2s: element 16 (2p + s % 2) + 4 (2h + s / 2) + m).
TEST(Q2_KR8, GroupsHoldScalesThenEachPairsQuantsRows) {
  const size_t n = 256 * 11;  // a whole group, then 3 blocks
  const std::vector<uint8_t> plain = random_row(DType::Q2_K, n, 31);
  const std::vector<uint8_t> packed = repack_copy(DType::Q2_K, DType::Q2_K_R8, plain, n);
  ASSERT_EQ(packed.size(), plain.size());
  const auto* blocks = reinterpret_cast<const BlockQ2_K*>(plain.data());
  for (const auto& [first, nb] : {std::pair<size_t, size_t>{0, 8}, {8, 3}}) {
    const uint8_t* g = packed.data() + first * sizeof(BlockQ2_K);
    const size_t row = 4 * nb;
    for (size_t b = 0; b < nb; ++b) {
      const BlockQ2_K& s = blocks[first + b];
      uint32_t dm;
      std::memcpy(&dm, g + 4 * b, 4);
      EXPECT_EQ(dm, uint32_t{s.d} | uint32_t{s.dmin} << 16);
      for (size_t q = 0; q < 4; ++q)
        for (size_t m = 0; m < 4; ++m) ASSERT_EQ(g[(1 + q) * row + 4 * b + m], s.scales[4 * q + m]);
    }
    size_t at = 5 * row;
    for (size_t p = 0; p < 8; ++p) {
      for (size_t h = 0; h < 2; ++h, at += row) {
        ASSERT_EQ(kernels::k2_quants_row(nb, p, h), at);
        for (size_t b = 0; b < nb; ++b) {
          for (size_t m = 0; m < 4; ++m) {
            for (size_t s = 0; s < 4; ++s) {
              const size_t e = 16 * (2 * p + s % 2) + 4 * (2 * h + s / 2) + m;
              ASSERT_EQ((g[at + 4 * b + m] >> (2 * s)) & 3, level(blocks[first + b], e))
                  << "nb " << nb << " pair " << p << " row " << h << " block " << b;
            }
          }
        }
      }
    }
    EXPECT_EQ(at, nb * sizeof(BlockQ2_K));
  }
}

TEST(Q2_KR8, MatvecMatchesNaiveDoubleScalarAndPlainOnEveryIsa) {
  expect_matvec_matches_naive_scalar_and_plain(DType::Q2_K, DType::Q2_K_R8, kLengths);
}

// The SIMD matvec finishes the rows of whole groups 8 at a time (k16_r8_tiles.h, hsum8).
TEST(Q2_KR8, MatvecRowsTogetherGiveTheBitsOfEachRowAlone) {
  expect_matvec_rows_together_give_each_rows_bits(DType::Q2_K, DType::Q2_K_R8);
}

TEST(Q2_KR8, GemmQMatchesPerTokenMatvec) {
  const size_t lengths[] = {256 * 22, 256 * 3, 256 * 13, 256 * 8};
  expect_gemm_q_matches_matvec(DType::Q2_K, DType::Q2_K_R8, lengths, GemmMatch::kBitExact);
}

// Every level at 3 or 0 with every scale and min at 15 (or scales 15 and mins 0), against
// activations of +-127: the pairs' dots reach 16 x 3 x 127 a lane, the mins' sums their largest.
TEST(Q2_KR8, ExtremeValuesMatchNaive) {
  const size_t n = 256 * 11;
  for (const uint8_t bits : {uint8_t{0xFF}, uint8_t{0x00}}) {
    for (const uint8_t scales : {uint8_t{0xFF}, uint8_t{0x0F}}) {
      std::vector<BlockQ2_K> blocks(n / 256);
      for (auto& b : blocks) {
        b.d = 0x3C00;     // 1.0
        b.dmin = 0x3800;  // 0.5
        std::memset(b.scales, scales, sizeof(b.scales));
        std::memset(b.qs, bits, sizeof(b.qs));
      }
      std::vector<uint8_t> plain(blocks.size() * sizeof(BlockQ2_K));
      std::memcpy(plain.data(), blocks.data(), plain.size());
      expect_constant_activations_match_naive(DType::Q2_K, DType::Q2_K_R8, plain, n,
                                              std::string(bits ? "levels 3" : "levels 0") +
                                                  (scales == 0xFF ? ", mins 15" : ", mins 0"));
    }
  }
}

TEST(Q2_KR8, PreferredWhereAHandWrittenKernelExists) {
  expect_preferred_where(DType::Q2_K, DType::Q2_K_R8, &kernels::FormatKernels::fast_q2_k_r8,
                         has_avx2_kernels);
}

}  // namespace
}  // namespace oxi::test::formats
