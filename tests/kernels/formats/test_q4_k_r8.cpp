// The repacked q4_K layout (kernels/formats/q4_k_r8.h): lossless repacking, decoding identical
// to q4_K, the activation layout, and its matvec / gemm_q against a naive double product, the
// scalar path and plain q4_K on every available instruction set. Row lengths leave blocks
// outside the 8-block groups (stored as plain q4_K at the row's end).
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <vector>

#include "kernels/formats/blocks.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/q4_k_r8.h"
#include "kernels/formats/quant.h"
#include "tests/common/test_data.h"
#include "tests/kernels/formats/reference.h"
#include "tests/kernels/formats/repacked_checks.h"

namespace oxi::test::formats {
namespace {

using kernels::DType;
using kernels::Isa;

// Groups and a tail (the 5632 of a TinyLlama FFN), a tail only, one group, two groups.
const size_t kLengths[] = {256 * 22, 256 * 3, 256 * 8, 256 * 16};

std::vector<uint8_t> repack(const std::vector<uint8_t>& q4_k, size_t n) {
  return repack_copy(DType::Q4_K, DType::Q4_K_R8, q4_k, n);
}

TEST(Q4_KR8, IsAnInternalTypeOfQ4_KSize) {
  EXPECT_EQ(kernels::name(DType::Q4_K_R8), "q4_K_r8");
  EXPECT_TRUE(kernels::info(DType::Q4_K_R8).quantized);
  for (size_t n : kLengths)
    EXPECT_EQ(kernels::row_bytes(DType::Q4_K_R8, n), kernels::row_bytes(DType::Q4_K, n));
  EXPECT_FALSE(kernels::dtype_info(static_cast<uint32_t>(DType::Q4_K_R8)).has_value());
  EXPECT_FALSE(kernels::parse_dtype("q4_K_r8").has_value());
  EXPECT_TRUE(kernels::weight_supported(DType::Q4_K_R8));
  EXPECT_EQ(kernels::activation_dtype(DType::Q4_K_R8), DType::Q8_K);
  EXPECT_FALSE(kernels::repack_row(DType::Q6_K, DType::Q4_K_R8, nullptr, nullptr, 256));
}

TEST(Q4_KR8, RepackIsLosslessAndDecodesBitExactly) {
  for (size_t n : kLengths) {
    for (uint32_t seed : {1u, 2u, 3u}) {
      const std::vector<uint8_t> plain = random_row(DType::Q4_K, n, seed * 7919 + n);
      const std::vector<uint8_t> packed = repack(plain, n);
      if (n >= 256 * 8) {
        EXPECT_NE(packed, plain);
      }
      std::vector<uint8_t> back(plain.size());
      ASSERT_TRUE(kernels::repack_row(DType::Q4_K_R8, DType::Q4_K, packed.data(), back.data(), n));
      ASSERT_EQ(back, plain) << "n " << n;
      std::vector<float> want(n), got(n);
      kernels::dequantize_row(DType::Q4_K, plain.data(), want.data(), n);
      ASSERT_NE(kernels::row_decoder(DType::Q4_K_R8), nullptr);
      kernels::dequantize_row(DType::Q4_K_R8, packed.data(), got.data(), n);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
            << "n " << n << " element " << i;
      }
    }
  }
}

TEST(Q4_KR8, EncoderIsQ4_KRepacked) {
  for (size_t n : kLengths) {
    const std::vector<float> x = random_normal(n, static_cast<uint32_t>(n));
    std::vector<uint8_t> plain(kernels::row_bytes(DType::Q4_K, n)), packed(plain.size());
    kernels::quantize_row(DType::Q4_K, x.data(), plain.data(), n);
    kernels::quantize_row(DType::Q4_K_R8, x.data(), packed.data(), n);
    EXPECT_EQ(packed, repack(plain, n)) << "n " << n;
  }
}

// The activation holds q8_K's own scales and integers, rearranged, and the 32-element sums.
TEST(Q4_KR8, ActivationIsQ8_KRearranged) {
  for (size_t n : kLengths) {
    const std::vector<float> x = random_floats(n, static_cast<uint32_t>(n), -3.0f, 3.0f);
    const size_t blocks = n / 256, groups = blocks / 8;
    std::vector<kernels::BlockQ8_K> q8(blocks);
    kernels::quantize_activation(DType::Q4_K, x.data(), q8.data(), n);
    const size_t bytes = kernels::activation_bytes(DType::Q4_K_R8, n);
    const size_t content = groups * sizeof(kernels::ActGroupK8) + (blocks % 8) * 292;
    ASSERT_EQ(bytes, (content + 63) / 64 * 64);  // padded to kActivationAlign
    std::vector<uint8_t> act(bytes);
    kernels::quantize_activation(DType::Q4_K_R8, x.data(), act.data(), n);
    const auto* a = reinterpret_cast<const kernels::ActGroupK8*>(act.data());
    for (size_t g = 0; g < groups; ++g) {
      for (size_t b = 0; b < 8; ++b) {
        const kernels::BlockQ8_K& want = q8[8 * g + b];
        ASSERT_EQ(a[g].d[b], want.d);
        for (size_t s = 0; s < 8; ++s) {
          int sum = 0;
          for (size_t e = 32 * s; e < 32 * s + 32; ++e) {
            sum += want.qs[e];
            const size_t i = (e % 32) / 8, half = (e % 8) / 4;
            ASSERT_EQ(a[g].q[s][i][half][4 * b + e % 4], want.qs[e]) << "block " << 8 * g + b;
          }
          ASSERT_EQ(a[g].sums[s / 2][2 * b + s % 2], sum);
        }
      }
    }
    EXPECT_EQ(std::memcmp(act.data() + groups * sizeof(kernels::ActGroupK8), q8.data() + groups * 8,
                          (blocks % 8) * 292),
              0);
  }
}

TEST(Q4_KR8, MatvecMatchesNaiveDoubleScalarAndPlainOnEveryIsa) {
  expect_matvec_matches_naive_scalar_and_plain(DType::Q4_K, DType::Q4_K_R8, kLengths);
}

TEST(Q4_KR8, GemmQMatchesPerTokenMatvec) {
  const size_t lengths[] = {256 * 22, 256 * 3};
  expect_gemm_q_matches_matvec(DType::Q4_K, DType::Q4_K_R8, lengths, GemmMatch::kUpToContraction);
}

// avx512's gemm tiles take each sub-block's low and high nibbles in the two halves of a 512-bit
// vector, folded to the 256-bit kernel's int32 lanes before the scales: the same bits (5 tokens:
// a 4-token tile and a 1-token one, which stays 256-bit).
TEST(Q4_KR8, Avx512IsBitIdenticalToAvx2) {
  const size_t lengths[] = {256 * 8, 256 * 22};
  expect_avx512_bit_identical_to_avx2(DType::Q4_K, DType::Q4_K_R8, lengths);
}

TEST(Q4_KR8, PreferredWhereAHandWrittenKernelExists) {
  for (Isa isa : available_isas()) {
    const kernels::FormatKernels& k = kernels::format_kernels(isa);
    EXPECT_EQ(k.fast_q4_k_r8, has_avx2_kernels(isa)) << kernels::isa_name(isa);
    EXPECT_EQ(k.preferred_layout(DType::Q4_K),
              has_avx2_kernels(isa) ? DType::Q4_K_R8 : DType::Q4_K);
    for (DType t : {DType::Q5_K, DType::Q6_K, DType::Q4_K_R8}) EXPECT_EQ(k.preferred_layout(t), t);
    EXPECT_NE(k.gemm_q_for(DType::Q4_K_R8), nullptr);
  }
}

}  // namespace
}  // namespace oxi::test::formats
