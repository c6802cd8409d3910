// The repacked q4_K layout (kernels/formats/q4_k_r8.h): lossless repacking, decoding identical
// to q4_K, the activation layout, and its matvec / gemm_q against a naive double product, the
// scalar path and plain q4_K on every available instruction set. Row lengths end in a short
// group (fewer than 8 blocks, read with masked loads) as well as in whole ones.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <utility>
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

const auto& kLengths = kK8RowLengths;

std::vector<uint8_t> repack(const std::vector<uint8_t>& q4_k, size_t n) {
  return repack_copy(DType::Q4_K, DType::Q4_K_R8, q4_k, n);
}

TEST(Q4_KR8, IsAnInternalTypeOfQ4_KSize) {
  expect_internal_layout_of(DType::Q4_K, DType::Q4_K_R8, "q4_K_r8", DType::Q8_K, kLengths);
  EXPECT_FALSE(kernels::repack_row(DType::Q6_K, DType::Q4_K_R8, nullptr, nullptr, 256));
}

TEST(Q4_KR8, RepackIsLosslessAndDecodesBitExactly) {
  expect_repack_lossless_and_bit_exact(DType::Q4_K, DType::Q4_K_R8, kLengths, 256 * 8);
}

TEST(Q4_KR8, EncoderIsQ4_KRepacked) {
  expect_encoder_is_plain_repacked(DType::Q4_K, DType::Q4_K_R8, kLengths);
}

// The activation holds q8_K's own scales and integers, rearranged, and the 32-element sums; a
// short last group's missing lanes are zero.
TEST(Q4_KR8, ActivationIsQ8_KRearranged) {
  for (size_t n : kLengths) {
    const std::vector<float> x = random_floats(n, static_cast<uint32_t>(n), -3.0f, 3.0f);
    const size_t blocks = n / 256, groups = (blocks + 7) / 8;
    std::vector<kernels::BlockQ8_K> q8(blocks);
    kernels::quantize_activation(DType::Q4_K, x.data(), q8.data(), n);
    const size_t bytes = kernels::activation_bytes(DType::Q4_K_R8, n);
    const size_t content = groups * sizeof(kernels::ActGroupK8);
    ASSERT_EQ(bytes, (content + 63) / 64 * 64);  // padded to kActivationAlign
    std::vector<uint8_t> act(bytes, 0xA5);
    kernels::quantize_activation(DType::Q4_K_R8, x.data(), act.data(), n);
    const auto* a = reinterpret_cast<const kernels::ActGroupK8*>(act.data());
    for (size_t g = 0; g < groups; ++g) {
      for (size_t b = 0; b < 8; ++b) {
        const bool present = 8 * g + b < blocks;
        const kernels::BlockQ8_K* want = present ? &q8[8 * g + b] : nullptr;
        ASSERT_EQ(a[g].d[b], present ? want->d : 0.0f);
        for (size_t s = 0; s < 8; ++s) {
          int sum = 0;
          for (size_t e = 32 * s; e < 32 * s + 32; ++e) {
            const int8_t q = present ? want->qs[e] : 0;
            sum += q;
            const size_t i = (e % 32) / 8, half = (e % 8) / 4;
            ASSERT_EQ(a[g].q[s][i][half][4 * b + e % 4], q) << "block " << 8 * g + b;
          }
          ASSERT_EQ(a[g].sums[s / 2][2 * b + s % 2], sum);
        }
      }
    }
  }
}

// The layout of q4_k_r8.h, byte by byte, for a short group: rows of 4 * nb bytes.
TEST(Q4_KR8, ShortGroupRowsAreFourBytesPerBlock) {
  const size_t n = 256 * 11;  // a whole group, then 3 blocks
  const std::vector<uint8_t> plain = random_row(DType::Q4_K, n, 17);
  const std::vector<uint8_t> packed = repack(plain, n);
  const auto* blocks = reinterpret_cast<const kernels::BlockQ4_K*>(plain.data());
  const uint8_t* g = packed.data() + 8 * sizeof(kernels::BlockQ4_K);
  const size_t row = 12;
  for (size_t b = 0; b < 3; ++b) {
    const kernels::BlockQ4_K& s = blocks[8 + b];
    uint32_t dm;
    std::memcpy(&dm, g + 4 * b, 4);
    EXPECT_EQ(dm, uint32_t{s.d} | uint32_t{s.dmin} << 16);
    // element e of the q4_K block: sub-block e / 32 is the low (even) or high (odd) nibbles of
    // qs[32 * (e / 64) ..]
    const auto nibble = [&](size_t e) {
      return (s.qs[32 * (e / 64) + e % 32] >> ((e / 32) % 2 ? 4 : 0)) & 0xF;
    };
    // element 32j + 8i + m (low nibble) and 32j + 8i + 4 + m (high) at row 4 + 4j + i
    for (size_t j = 0; j < 8; ++j) {
      for (size_t i = 0; i < 4; ++i) {
        for (size_t m = 0; m < 4; ++m) {
          const uint8_t byte = g[(4 + 4 * j + i) * row + 4 * b + m];
          ASSERT_EQ(byte & 0xF, nibble(32 * j + 8 * i + m));
          ASSERT_EQ(byte >> 4, nibble(32 * j + 8 * i + 4 + m));
        }
      }
    }
  }
  EXPECT_EQ(packed.size(), plain.size());
}

TEST(Q4_KR8, MatvecMatchesNaiveDoubleScalarAndPlainOnEveryIsa) {
  expect_matvec_matches_naive_scalar_and_plain(DType::Q4_K, DType::Q4_K_R8, kLengths);
}

// The SIMD matvec finishes the rows of whole groups 8 at a time (q4_k_r8_tiles.h, hsum8).
TEST(Q4_KR8, MatvecRowsTogetherGiveTheBitsOfEachRowAlone) {
  expect_matvec_rows_together_give_each_rows_bits(DType::Q4_K, DType::Q4_K_R8);
}

TEST(Q4_KR8, GemmQMatchesPerTokenMatvec) {
  const size_t lengths[] = {256 * 22, 256 * 3, 256 * 13};
  expect_gemm_q_matches_matvec(DType::Q4_K, DType::Q4_K_R8, lengths, GemmMatch::kUpToContraction);
}

// avx512's gemm tiles take each sub-block's low and high nibbles in the two halves of a 512-bit
// vector, folded to the 256-bit kernel's int32 lanes before the scales: the same bits (5 tokens:
// a 4-token tile and a 1-token one, which stays 256-bit).
TEST(Q4_KR8, Avx512IsBitIdenticalToAvx2) {
  const size_t lengths[] = {256 * 8, 256 * 22, 256 * 13};
  expect_avx512_bit_identical_to_avx2(DType::Q4_K, DType::Q4_K_R8, lengths);
}

TEST(Q4_KR8, PreferredWhereAHandWrittenKernelExists) {
  for (Isa isa : available_isas()) {
    const kernels::FormatKernels& k = kernels::format_kernels(isa);
    EXPECT_EQ(k.fast_q4_k_r8, has_avx2_kernels(isa)) << kernels::isa_name(isa);
    EXPECT_EQ(k.preferred_layout(DType::Q4_K),
              has_avx2_kernels(isa) ? DType::Q4_K_R8 : DType::Q4_K);
    // q5_K: its own layout (test_q5_k_r8.cpp)
    for (DType t : {DType::Q6_K, DType::Q4_K_R8}) EXPECT_EQ(k.preferred_layout(t), t);
    EXPECT_NE(k.gemm_q_for(DType::Q4_K_R8), nullptr);
  }
}

}  // namespace
}  // namespace oxi::test::formats
