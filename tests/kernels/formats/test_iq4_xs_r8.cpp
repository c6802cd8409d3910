// The repacked iq4_xs layout (kernels/formats/iq4_xs_r8.h): lossless repacking, decoding
// identical to iq4_xs, byte positions, and its matvec / gemm_q against a naive double product,
// the scalar path and plain iq4_xs on every available instruction set. Row lengths end in a
// short group (fewer than 8 blocks, read with masked loads) as well as in whole ones.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/formats/blocks.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/iq4_xs_r8.h"
#include "kernels/formats/quant.h"
#include "tests/common/test_data.h"
#include "tests/kernels/formats/reference.h"
#include "tests/kernels/formats/repacked_checks.h"

namespace oxi::test::formats {
namespace {

using kernels::DType;
using kernels::Isa;

const auto& kLengths = kK8RowLengths;

std::vector<uint8_t> repack(const std::vector<uint8_t>& plain, size_t n) {
  return repack_copy(DType::IQ4_XS, DType::IQ4_XS_R8, plain, n);
}

TEST(IQ4_XSR8, IsAnInternalTypeOfIQ4_XSSize) {
  expect_internal_layout_of(DType::IQ4_XS, DType::IQ4_XS_R8, "iq4_xs_r8", DType::Q8_K, kLengths);
  EXPECT_EQ(kernels::activation_bytes(DType::IQ4_XS_R8, 256 * 22),
            kernels::activation_bytes(DType::Q4_K_R8, 256 * 22));
  EXPECT_FALSE(kernels::repack_row(DType::Q4_K, DType::IQ4_XS_R8, nullptr, nullptr, 256));
}

TEST(IQ4_XSR8, RepackIsLosslessAndDecodesBitExactly) {
  expect_repack_lossless_and_bit_exact(DType::IQ4_XS, DType::IQ4_XS_R8, kLengths, 256 * 8);
}

TEST(IQ4_XSR8, EncoderIsIQ4_XSRepacked) {
  expect_encoder_is_plain_repacked(DType::IQ4_XS, DType::IQ4_XS_R8, kLengths);
}

// The layout of iq4_xs_r8.h, byte by byte, for a whole group (rows of 32 bytes) and a short
// one (rows of 4 * nb bytes).
TEST(IQ4_XSR8, RowsAreFourBytesPerBlock) {
  const size_t n = 256 * 11;  // a whole group, then 3 blocks
  const std::vector<uint8_t> plain = random_row(DType::IQ4_XS, n, 17);
  const std::vector<uint8_t> packed = repack(plain, n);
  const auto* blocks = reinterpret_cast<const kernels::BlockIQ4_XS*>(plain.data());
  for (const auto& [first, nb] : {std::pair<size_t, size_t>{0, 8}, {8, 3}}) {
    const uint8_t* g = packed.data() + first * sizeof(kernels::BlockIQ4_XS);
    const size_t row = 4 * nb;
    for (size_t b = 0; b < nb; ++b) {
      const kernels::BlockIQ4_XS& s = blocks[first + b];
      uint32_t dh;
      std::memcpy(&dh, g + 4 * b, 4);
      EXPECT_EQ(dh, uint32_t{s.d} | uint32_t{s.scales_h} << 16);
      EXPECT_EQ(std::memcmp(g + row + 4 * b, s.scales_l, 4), 0);
      // element e: sub-block e / 32's byte e % 16, low nibble for its first 16 elements
      const auto index = [&](size_t e) {
        return (s.qs[16 * (e / 32) + e % 16] >> (e % 32 < 16 ? 0 : 4)) & 0xF;
      };
      for (size_t j = 0; j < 8; ++j) {
        for (size_t i = 0; i < 4; ++i) {
          for (size_t m = 0; m < 4; ++m) {
            const uint8_t byte = g[(2 + 4 * j + i) * row + 4 * b + m];
            ASSERT_EQ(byte & 0xF, index(32 * j + 8 * i + m));
            ASSERT_EQ(byte >> 4, index(32 * j + 8 * i + 4 + m));
          }
        }
      }
    }
  }
  EXPECT_EQ(packed.size(), plain.size());
}

TEST(IQ4_XSR8, MatvecMatchesNaiveDoubleScalarAndPlainOnEveryIsa) {
  expect_matvec_matches_naive_scalar_and_plain(DType::IQ4_XS, DType::IQ4_XS_R8, kLengths);
}

TEST(IQ4_XSR8, GemmQMatchesPerTokenMatvec) {
  const size_t lengths[] = {256 * 22, 256 * 3, 256 * 13};
  expect_gemm_q_matches_matvec(DType::IQ4_XS, DType::IQ4_XS_R8, lengths, GemmMatch::kBitExact);
}

// Scales at their extremes (ls 0 and 63: s = -32 and 31) and levels at theirs (-127 and 113)
// against activations at +-127: the integer sums reach their largest magnitudes.
TEST(IQ4_XSR8, ExtremeScalesAndLevelsMatchThePlainType) {
  const size_t n = 256 * 11;
  for (uint8_t index : {uint8_t{0}, uint8_t{15}}) {
    for (uint16_t ls : {uint16_t{0}, uint16_t{63}}) {
      std::vector<kernels::BlockIQ4_XS> blocks(n / 256);
      for (auto& b : blocks) {
        b.d = 0x3C00;  // 1.0
        b.scales_h = 0;
        for (int j = 0; j < 8; ++j) b.scales_h |= static_cast<uint16_t>((ls >> 4) << (2 * j));
        std::memset(b.scales_l, (ls & 0xF) | (ls & 0xF) << 4, 4);
        std::memset(b.qs, index | index << 4, sizeof(b.qs));
      }
      std::vector<uint8_t> plain(n / 256 * sizeof(kernels::BlockIQ4_XS));
      std::memcpy(plain.data(), blocks.data(), plain.size());
      const std::vector<uint8_t> packed = repack(plain, n);
      std::vector<float> x(n);
      for (size_t i = 0; i < n; ++i) x[i] = i % 3 == 0 ? -1.0f : 1.0f;
      for (Isa isa : available_isas()) {
        const kernels::FormatKernels& k = kernels::format_kernels(isa);
        std::vector<uint8_t> act_plain(kernels::activation_bytes(DType::IQ4_XS, n));
        std::vector<uint8_t> act_packed(kernels::activation_bytes(DType::IQ4_XS_R8, n));
        kernels::quantize_activation(DType::IQ4_XS, x.data(), act_plain.data(), n);
        kernels::quantize_activation(DType::IQ4_XS_R8, x.data(), act_packed.data(), n);
        float want = 0, got = 0;
        k.matvec_for(DType::IQ4_XS)(plain.data(), plain.size(), 1, n, act_plain.data(), &want);
        k.matvec_for(DType::IQ4_XS_R8)(packed.data(), packed.size(), 1, n, act_packed.data(), &got);
        EXPECT_NEAR(got, want, 1e-5 * std::abs(want)) << kernels::isa_name(isa);
      }
    }
  }
}

// avx512 sums the levels + 128 with VNNI and subtracts 128 * sum(q), AVX2 the levels with the
// sign trick: the same integer per block, then the same f32 steps, so the same bits.
TEST(IQ4_XSR8, Avx512IsBitIdenticalToAvx2) {
  const size_t lengths[] = {256 * 8, 256 * 22, 256 * 13};
  expect_avx512_bit_identical_to_avx2(DType::IQ4_XS, DType::IQ4_XS_R8, lengths);
}

TEST(IQ4_XSR8, PreferredWhereAHandWrittenKernelExists) {
  expect_preferred_where(DType::IQ4_XS, DType::IQ4_XS_R8, &kernels::FormatKernels::fast_iq4_xs_r8,
                         has_avx2_kernels);
}

}  // namespace
}  // namespace oxi::test::formats
