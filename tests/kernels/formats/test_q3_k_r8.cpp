// The repacked q3_K layout (kernels/formats/q3_k_r8.h): lossless repacking, decoding identical to
// q3_K, byte positions of the group and of its activation, and its matvec / gemm_q against a
// naive double product, the scalar path and plain q3_K on every available instruction set. Row
// lengths end in a short group (fewer than 8 blocks, masked loads and a spread mask) as well as in
// whole ones.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/formats/blocks.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/q3_k_r8.h"
#include "kernels/formats/quant.h"
#include "tests/common/test_data.h"
#include "tests/kernels/formats/reference.h"
#include "tests/kernels/formats/repacked_checks.h"

namespace oxi::test::formats {
namespace {

using kernels::BlockQ3_K;
using kernels::DType;

const auto& kLengths = kK8RowLengths;

// Element e of a q3_K block as GGUF stores it: the low two bits at bits 2 (e % 128 / 32) of
// qs[32 (e / 128) + e % 32], the third at bit e / 32 of hmask[e % 32]; group g's 6-bit scale
// (biased by 32) with its low four bits in nibble g / 8 of scales[g % 8] and its top two at bits
// 2 (g / 4) of scales[8 + g % 4].
int low_bits(const BlockQ3_K& b, size_t e) {
  return (b.qs[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32))) & 3;
}
int high_bit(const BlockQ3_K& b, size_t e) {
  return (b.hmask[e % 32] >> (e / 32)) & 1;
}
int scale(const BlockQ3_K& b, size_t g) {
  return ((b.scales[g % 8] >> (4 * (g / 8))) & 0xF) | ((b.scales[8 + g % 4] >> (2 * (g / 4))) & 3)
                                                          << 4;
}

TEST(Q3_KR8, IsAnInternalTypeOfQ3_KSize) {
  expect_internal_layout_of(DType::Q3_K, DType::Q3_K_R8, "q3_K_r8", DType::Q8_K, kLengths);
  EXPECT_GE(kernels::activation_bytes(DType::Q3_K_R8, 256 * 22), 3 * sizeof(kernels::ActGroupK16));
  EXPECT_FALSE(kernels::repack_row(DType::Q4_K, DType::Q3_K_R8, nullptr, nullptr, 256));
}

TEST(Q3_KR8, RepackIsLosslessAndDecodesBitExactly) {
  expect_repack_lossless_and_bit_exact(DType::Q3_K, DType::Q3_K_R8, kLengths, 256 * 8);
}

TEST(Q3_KR8, EncoderIsQ3_KRepacked) {
  expect_encoder_is_plain_repacked(DType::Q3_K, DType::Q3_K_R8, kLengths);
}

// The layout of q3_k_r8.h, bit by bit, for a whole group and a short one: the blocks' d, the
// three scale rows, then per pair p two quants rows (row h, byte 4b + m, bits 2s: element
// 16 (2p + s % 2) + 4 (2h + s / 2) + m) and four fields (field c: bit 4b + m the third bit of
// element 32p + 4c + m, bit 4nb + 4b + m that of element 32p + 16 + 4c + m).
TEST(Q3_KR8, GroupsHoldScalesThenEachPairsQuantsRowsAndThirdBits) {
  const size_t n = 256 * 11;  // a whole group, then 3 blocks
  const std::vector<uint8_t> plain = random_row(DType::Q3_K, n, 29);
  const std::vector<uint8_t> packed = repack_copy(DType::Q3_K, DType::Q3_K_R8, plain, n);
  ASSERT_EQ(packed.size(), plain.size());
  const auto* blocks = reinterpret_cast<const BlockQ3_K*>(plain.data());
  for (const auto& [first, nb] : {std::pair<size_t, size_t>{0, 8}, {8, 3}}) {
    const uint8_t* g = packed.data() + first * sizeof(BlockQ3_K);
    const size_t row = 4 * nb;
    for (size_t b = 0; b < nb; ++b) {
      const BlockQ3_K& s = blocks[first + b];
      uint16_t d;
      std::memcpy(&d, g + 2 * b, 2);
      EXPECT_EQ(d, s.d);
      for (size_t m = 0; m < 4; ++m) {
        const uint8_t* at = g + 2 * nb + 4 * b + m;
        ASSERT_EQ(at[0], (scale(s, m) & 0xF) | (scale(s, m + 4) & 0xF) << 4) << b << " " << m;
        ASSERT_EQ(at[row], (scale(s, m + 8) & 0xF) | (scale(s, m + 12) & 0xF) << 4);
        ASSERT_EQ(at[2 * row], scale(s, m) >> 4 | (scale(s, m + 4) >> 4) << 2 |
                                   (scale(s, m + 8) >> 4) << 4 | (scale(s, m + 12) >> 4) << 6);
      }
    }
    size_t at = 2 * nb + 3 * row;  // where the next row or field must be
    for (size_t p = 0; p < 8; ++p) {
      for (size_t h = 0; h < 2; ++h, at += row) {
        ASSERT_EQ(kernels::k3_quants_row(nb, p, h), at);
        for (size_t b = 0; b < nb; ++b) {
          for (size_t m = 0; m < 4; ++m) {
            const uint8_t q = g[at + 4 * b + m];
            for (size_t s = 0; s < 4; ++s) {
              const size_t e = 16 * (2 * p + s % 2) + 4 * (2 * h + s / 2) + m;
              ASSERT_EQ((q >> (2 * s)) & 3, low_bits(blocks[first + b], e))
                  << "nb " << nb << " pair " << p << " row " << h << " block " << b;
            }
          }
        }
      }
      for (size_t c = 0; c < 4; ++c, at += nb) {
        ASSERT_EQ(kernels::k3_high_field(nb, p, c), at);
        const auto bit = [&](size_t k) { return (g[at + k / 8] >> (k % 8)) & 1; };
        for (size_t b = 0; b < nb; ++b) {
          for (size_t m = 0; m < 4; ++m) {
            ASSERT_EQ(bit(4 * b + m), high_bit(blocks[first + b], 32 * p + 4 * c + m));
            ASSERT_EQ(bit(4 * nb + 4 * b + m),
                      high_bit(blocks[first + b], 32 * p + 16 + 4 * c + m));
          }
        }
      }
    }
    EXPECT_EQ(at, nb * sizeof(BlockQ3_K));
  }
}

// The activation: q3_K's q8_K blocks (the same scales and integers), each block in its lane of
// its group: chunk c of pair p holds elements 32p + 4c .. + 3 (lower half) and 32p + 16 + 4c ..
// (upper), the sums of the 16-element groups times 4; a short group's other lanes zero.
TEST(Q3_KR8, ActivationIsQ8_KLaidOutByPairsAndChunks) {
  const size_t n = 256 * 11;
  const std::vector<float> x = random_normal(n, 5);
  std::vector<kernels::BlockQ8_K> q8(n / 256);
  kernels::quantize_activation(DType::Q3_K, x.data(), q8.data(), n);
  std::vector<uint8_t> act(kernels::activation_bytes(DType::Q3_K_R8, n));
  ASSERT_GE(act.size(), 2 * sizeof(kernels::ActGroupK16));
  kernels::quantize_activation(DType::Q3_K_R8, x.data(), act.data(), n);
  const auto* groups = reinterpret_cast<const kernels::ActGroupK16*>(act.data());
  for (size_t blk = 0; blk < 16; ++blk) {
    const kernels::ActGroupK16& a = groups[blk / 8];
    const size_t k = blk % 8;
    const bool present = blk < q8.size();
    EXPECT_EQ(a.d[k], present ? q8[blk].d : 0.0f) << blk;
    for (size_t p = 0; p < 8; ++p) {
      EXPECT_EQ(a.sums4[p][k], present ? 4 * q8[blk].bsums[2 * p] : 0) << blk << " " << p;
      EXPECT_EQ(a.sums4[p][8 + k], present ? 4 * q8[blk].bsums[2 * p + 1] : 0);
      for (size_t c = 0; c < 4; ++c) {
        for (size_t m = 0; m < 4; ++m) {
          ASSERT_EQ(a.q[p][c][4 * k + m], present ? q8[blk].qs[32 * p + 4 * c + m] : 0);
          ASSERT_EQ(a.q[p][c][32 + 4 * k + m], present ? q8[blk].qs[32 * p + 16 + 4 * c + m] : 0);
        }
      }
    }
  }
}

TEST(Q3_KR8, MatvecMatchesNaiveDoubleScalarAndPlainOnEveryIsa) {
  expect_matvec_matches_naive_scalar_and_plain(DType::Q3_K, DType::Q3_K_R8, kLengths);
}

// The SIMD matvec finishes the rows of whole groups 8 at a time (q3_k_r8_tiles.h, hsum8).
TEST(Q3_KR8, MatvecRowsTogetherGiveTheBitsOfEachRowAlone) {
  expect_matvec_rows_together_give_each_rows_bits(DType::Q3_K, DType::Q3_K_R8);
}

TEST(Q3_KR8, GemmQMatchesPerTokenMatvec) {
  const size_t lengths[] = {256 * 22, 256 * 3, 256 * 13, 256 * 8};
  expect_gemm_q_matches_matvec(DType::Q3_K, DType::Q3_K_R8, lengths, GemmMatch::kBitExact);
}

// Every level at +3 (low bits 3, third bit set) or -4 (neither), every scale at one end (63 ->
// +31, 0 -> -32), against activations of +-127: the pairs' dots reach 16 x 7 x 127 a lane and
// the scaled sums their largest magnitudes.
TEST(Q3_KR8, ExtremeValuesMatchNaive) {
  const size_t n = 256 * 11;
  for (const uint8_t bits : {uint8_t{0xFF}, uint8_t{0x00}}) {
    for (const uint8_t scales : {uint8_t{0xFF}, uint8_t{0x00}}) {
      std::vector<BlockQ3_K> blocks(n / 256);
      for (auto& b : blocks) {
        b.d = 0x3C00;  // 1.0
        std::memset(b.scales, scales, sizeof(b.scales));
        std::memset(b.hmask, bits, sizeof(b.hmask));
        std::memset(b.qs, bits, sizeof(b.qs));
      }
      std::vector<uint8_t> plain(blocks.size() * sizeof(BlockQ3_K));
      std::memcpy(plain.data(), blocks.data(), plain.size());
      expect_constant_activations_match_naive(DType::Q3_K, DType::Q3_K_R8, plain, n,
                                              std::string(bits ? "levels +3" : "levels -4") +
                                                  (scales ? ", scales +31" : ", scales -32"));
    }
  }
}

TEST(Q3_KR8, PreferredWhereAHandWrittenKernelExists) {
  expect_preferred_where(DType::Q3_K, DType::Q3_K_R8, &kernels::FormatKernels::fast_q3_k_r8,
                         has_avx2_kernels);
}

}  // namespace
}  // namespace oxi::test::formats
