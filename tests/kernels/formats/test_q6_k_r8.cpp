// The repacked q6_K layout (kernels/formats/q6_k_r8.h): lossless repacking, decoding identical
// to q6_K, byte positions, and its matvec / gemm_q against a naive double product, the scalar
// path and plain q6_K on every available instruction set. Row lengths end in a short group
// (fewer than 8 blocks, read with masked loads) as well as in whole ones.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/formats/blocks.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/q6_k_r8.h"
#include "kernels/formats/quant.h"
#include "tests/kernels/formats/reference.h"
#include "tests/kernels/formats/repacked_checks.h"

namespace oxi::test::formats {
namespace {

using kernels::DType;
using kernels::Isa;

// Groups and a short one (the 5632 of a TinyLlama FFN), a short group only, one group, two
// groups, and every short size from 1 to 7 blocks after a whole group.
const size_t kLengths[] = {256 * 22, 256 * 3,  256 * 8,  256 * 16, 256 * 9, 256 * 10,
                           256 * 12, 256 * 13, 256 * 14, 256 * 15, 256 * 1};

std::vector<uint8_t> repack(const std::vector<uint8_t>& plain, size_t n) {
  return repack_copy(DType::Q6_K, DType::Q6_K_R8, plain, n);
}

TEST(Q6_KR8, IsAnInternalTypeOfQ6_KSize) {
  EXPECT_EQ(kernels::name(DType::Q6_K_R8), "q6_K_r8");
  EXPECT_TRUE(kernels::info(DType::Q6_K_R8).quantized);
  for (size_t n : kLengths)
    EXPECT_EQ(kernels::row_bytes(DType::Q6_K_R8, n), kernels::row_bytes(DType::Q6_K, n));
  EXPECT_FALSE(kernels::dtype_info(static_cast<uint32_t>(DType::Q6_K_R8)).has_value());
  EXPECT_FALSE(kernels::parse_dtype("q6_K_r8").has_value());
  EXPECT_TRUE(kernels::weight_supported(DType::Q6_K_R8));
  EXPECT_EQ(kernels::activation_dtype(DType::Q6_K_R8), DType::Q8_K);
  EXPECT_EQ(kernels::activation_bytes(DType::Q6_K_R8, 256 * 22),
            3 * sizeof(kernels::ActGroupQ6K8));
  EXPECT_FALSE(kernels::repack_row(DType::Q4_K, DType::Q6_K_R8, nullptr, nullptr, 256));
}

TEST(Q6_KR8, RepackIsLosslessAndDecodesBitExactly) {
  expect_repack_lossless_and_bit_exact(DType::Q6_K, DType::Q6_K_R8, kLengths, 256 * 8);
}

TEST(Q6_KR8, EncoderIsQ6_KRepacked) {
  expect_encoder_is_plain_repacked(DType::Q6_K, DType::Q6_K_R8, kLengths);
}

// The layout of q6_k_r8.h, byte by byte, for a whole group (rows of 32 bytes) and a short one
// (rows of 4 * nb bytes), each element's six bits read from the q6_K block as ggml's
// dequantize_row_q6_K reads them.
TEST(Q6_KR8, RowsAreFourBytesPerBlock) {
  const size_t n = 256 * 11;  // a whole group, then 3 blocks
  const std::vector<uint8_t> plain = random_row(DType::Q6_K, n, 17);
  const std::vector<uint8_t> packed = repack(plain, n);
  const auto* blocks = reinterpret_cast<const kernels::BlockQ6_K*>(plain.data());
  for (const auto& [first, nb] : {std::pair<size_t, size_t>{0, 8}, {8, 3}}) {
    const uint8_t* g = packed.data() + first * sizeof(kernels::BlockQ6_K);
    const size_t row = 4 * nb;
    for (size_t b = 0; b < nb; ++b) {
      const kernels::BlockQ6_K& s = blocks[first + b];
      // ggml: in each half of 128, element l < 32 of quarter k takes ql[l + 32 (k % 2)]'s nibble
      // k / 2 and bits 2k, 2k + 1 of qh[l]
      const auto level = [&](size_t e) {
        const size_t half = e / 128, k = e % 128 / 32, l = e % 32;
        const int low = (s.ql[64 * half + l + 32 * (k % 2)] >> (4 * (k / 2))) & 0xF;
        const int high = (s.qh[32 * half + l] >> (2 * k)) & 3;
        return low | high << 4;
      };
      for (size_t sub = 0; sub < 16; ++sub) {
        for (size_t k = 0; k < 4; ++k) {
          for (size_t m = 0; m < 4; ++m) {
            const int want = level(16 * sub + 4 * k + m);
            // six rows per pair of sub-blocks after the 4 scale rows: ql, ql, ql, ql, qh, qh
            const size_t pair_row = 4 + 6 * (sub / 2);
            const uint8_t ql = g[(pair_row + 2 * (sub % 2) + k / 2) * row + 4 * b + m];
            const uint8_t qh = g[(pair_row + 4 + sub % 2) * row + 4 * b + m];
            ASSERT_EQ((ql >> (4 * (k % 2))) & 0xF, want & 0xF) << sub << " " << k << " " << m;
            ASSERT_EQ((qh >> (2 * k)) & 3, want >> 4) << sub << " " << k << " " << m;
          }
        }
      }
      for (size_t r = 0; r < 4; ++r)
        EXPECT_EQ(std::memcmp(g + r * row + 4 * b, s.scales + 4 * r, 4), 0);
      uint16_t d;
      std::memcpy(&d, g + 52 * row + 2 * b, 2);
      EXPECT_EQ(d, s.d);
    }
  }
  EXPECT_EQ(packed.size(), plain.size());
}

TEST(Q6_KR8, MatvecMatchesNaiveDoubleScalarAndPlainOnEveryIsa) {
  expect_matvec_matches_naive_scalar_and_plain(DType::Q6_K, DType::Q6_K_R8, kLengths);
}

TEST(Q6_KR8, GemmQMatchesPerTokenMatvec) {
  const size_t lengths[] = {256 * 22, 256 * 3, 256 * 13};
  expect_gemm_q_matches_matvec(DType::Q6_K, DType::Q6_K_R8, lengths, GemmMatch::kBitExact);
}

// Levels at their extremes (0 and 63: -32 and 31) and scales at theirs (-128 and 127) against
// activations at +-127: the integer sums and the offset reach their largest magnitudes.
TEST(Q6_KR8, ExtremeScalesAndLevelsMatchThePlainType) {
  const size_t n = 256 * 11;
  for (uint8_t level : {uint8_t{0}, uint8_t{63}}) {
    for (int8_t scale : {int8_t{-128}, int8_t{127}}) {
      std::vector<kernels::BlockQ6_K> blocks(n / 256);
      for (auto& b : blocks) {
        b.d = 0x3C00;  // 1.0
        std::memset(b.scales, static_cast<uint8_t>(scale), sizeof(b.scales));
        std::memset(b.ql, (level & 0xF) | (level & 0xF) << 4, sizeof(b.ql));
        std::memset(b.qh, (level >> 4) * 0x55, sizeof(b.qh));
      }
      std::vector<uint8_t> plain(n / 256 * sizeof(kernels::BlockQ6_K));
      std::memcpy(plain.data(), blocks.data(), plain.size());
      const std::vector<uint8_t> packed = repack(plain, n);
      std::vector<float> x(n);
      for (size_t i = 0; i < n; ++i) x[i] = i % 3 == 0 ? -1.0f : 1.0f;
      for (Isa isa : available_isas()) {
        const kernels::FormatKernels& k = kernels::format_kernels(isa);
        std::vector<uint8_t> act_plain(kernels::activation_bytes(DType::Q6_K, n));
        std::vector<uint8_t> act_packed(kernels::activation_bytes(DType::Q6_K_R8, n));
        kernels::quantize_activation(DType::Q6_K, x.data(), act_plain.data(), n);
        kernels::quantize_activation(DType::Q6_K_R8, x.data(), act_packed.data(), n);
        float want = 0, got = 0;
        k.matvec_for(DType::Q6_K)(plain.data(), plain.size(), 1, n, act_plain.data(), &want);
        k.matvec_for(DType::Q6_K_R8)(packed.data(), packed.size(), 1, n, act_packed.data(), &got);
        EXPECT_NEAR(got, want, 1e-5 * std::abs(want)) << kernels::isa_name(isa);
        EXPECT_NE(want, 0.0f);
      }
    }
  }
}

// avx512 keeps each block's sum in two int32 lanes (one per half) and folds them once a group,
// AVX2 in one: the same integer per block, then the same f32 steps, so the same bits.
TEST(Q6_KR8, Avx512IsBitIdenticalToAvx2) {
  const size_t lengths[] = {256 * 8, 256 * 22, 256 * 13};
  expect_avx512_bit_identical_to_avx2(DType::Q6_K, DType::Q6_K_R8, lengths);
}

TEST(Q6_KR8, PreferredWhereAHandWrittenKernelExists) {
  for (Isa isa : available_isas()) {
    const kernels::FormatKernels& k = kernels::format_kernels(isa);
    const bool fast = has_avx2_kernels(isa);
    EXPECT_EQ(k.fast_q6_k_r8, fast) << kernels::isa_name(isa);
    EXPECT_EQ(k.preferred_layout(DType::Q6_K), fast ? DType::Q6_K_R8 : DType::Q6_K);
    EXPECT_EQ(k.preferred_layout(DType::Q6_K, 2048, 5632), fast ? DType::Q6_K_R8 : DType::Q6_K);
    EXPECT_EQ(k.preferred_layout(DType::Q6_K_R8), DType::Q6_K_R8);
    EXPECT_NE(k.gemm_q_for(DType::Q6_K_R8), nullptr);
  }
}

}  // namespace
}  // namespace oxi::test::formats
