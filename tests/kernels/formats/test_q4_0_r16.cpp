// The repacked q4_0 layout (kernels/formats/q4_0_r16.h): lossless repacking, decoding identical
// to q4_0, the activation layout, and its matvec / gemm_q against a naive double product, the
// scalar path and plain q4_0 on every available instruction set. Row lengths leave blocks
// outside the 16-block groups (stored as plain q4_0 at the row's end).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/formats/blocks.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/q4_0_r16.h"
#include "kernels/formats/quant.h"
#include "tests/common/test_data.h"
#include "tests/kernels/formats/reference.h"

namespace oxi::test::formats {
namespace {

using kernels::DType;
using kernels::Isa;

// Whole groups only, a tail only, groups and a tail, and one group.
const size_t kLengths[] = {32 * 17, 32 * 3, 32 * 16 * 5 + 32 * 7, 32 * 16};

std::vector<Isa> available_isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::scalar, Isa::sse42, Isa::avx2, Isa::neon}) {
    if (kernels::isa_available(isa)) out.push_back(isa);
  }
  return out;
}

std::vector<uint8_t> repack(const std::vector<uint8_t>& q4_0, size_t n) {
  std::vector<uint8_t> out(q4_0.size());
  EXPECT_TRUE(kernels::repack_row(DType::Q4_0, DType::Q4_0_R16, q4_0.data(), out.data(), n));
  return out;
}

TEST(Q4_0R16, IsAnInternalTypeOfQ4_0Size) {
  EXPECT_EQ(kernels::name(DType::Q4_0_R16), "q4_0_r16");
  EXPECT_TRUE(kernels::info(DType::Q4_0_R16).quantized);
  for (size_t n : kLengths)
    EXPECT_EQ(kernels::row_bytes(DType::Q4_0_R16, n), kernels::row_bytes(DType::Q4_0, n));
  // Never a file's type, never parsed from a user's string.
  EXPECT_FALSE(kernels::dtype_info(static_cast<uint32_t>(DType::Q4_0_R16)).has_value());
  EXPECT_FALSE(kernels::parse_dtype("q4_0_r16").has_value());
  EXPECT_TRUE(kernels::weight_supported(DType::Q4_0_R16));
  EXPECT_EQ(kernels::activation_dtype(DType::Q4_0_R16), DType::Q8_0);
  EXPECT_FALSE(kernels::repack_row(DType::Q8_0, DType::Q4_0_R16, nullptr, nullptr, 32));
}

TEST(Q4_0R16, RepackIsLosslessAndDecodesBitExactly) {
  for (size_t n : kLengths) {
    for (uint32_t seed : {1u, 2u, 3u}) {
      const std::vector<uint8_t> plain = random_row(DType::Q4_0, n, seed * 7919 + n);
      const std::vector<uint8_t> packed = repack(plain, n);
      if (n >= 32 * 16) {
        EXPECT_NE(packed, plain);
      }
      std::vector<uint8_t> back(plain.size());
      ASSERT_TRUE(kernels::repack_row(DType::Q4_0_R16, DType::Q4_0, packed.data(), back.data(), n));
      ASSERT_EQ(back, plain) << "n " << n;
      std::vector<float> want(n), got(n);
      kernels::dequantize_row(DType::Q4_0, plain.data(), want.data(), n);
      ASSERT_NE(kernels::row_decoder(DType::Q4_0_R16), nullptr);
      kernels::dequantize_row(DType::Q4_0_R16, packed.data(), got.data(), n);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
            << "n " << n << " element " << i;
      }
    }
  }
}

TEST(Q4_0R16, EncoderIsQ4_0Repacked) {
  for (size_t n : kLengths) {
    const std::vector<float> x = random_normal(n, static_cast<uint32_t>(n));
    std::vector<uint8_t> plain(kernels::row_bytes(DType::Q4_0, n)), packed(plain.size());
    kernels::quantize_row(DType::Q4_0, x.data(), plain.data(), n);
    kernels::quantize_row(DType::Q4_0_R16, x.data(), packed.data(), n);
    EXPECT_EQ(packed, repack(plain, n)) << "n " << n;
  }
}

// The activation holds q8_0's own scales and integers, rearranged, and 8 * sum(q) per block.
TEST(Q4_0R16, ActivationIsQ8_0Rearranged) {
  for (size_t n : kLengths) {
    const std::vector<float> x = random_floats(n, static_cast<uint32_t>(n), -3.0f, 3.0f);
    const size_t blocks = n / 32, groups = blocks / 16;
    std::vector<kernels::BlockQ8_0> q8(blocks);
    kernels::quantize_activation(DType::Q8_0, x.data(), q8.data(), n);
    const size_t bytes = kernels::activation_bytes(DType::Q4_0_R16, n);
    ASSERT_EQ(bytes, groups * sizeof(kernels::ActGroupR16) + (blocks % 16) * 34);
    std::vector<uint8_t> act(bytes);
    kernels::quantize_activation(DType::Q4_0_R16, x.data(), act.data(), n);
    const auto* a = reinterpret_cast<const kernels::ActGroupR16*>(act.data());
    for (size_t g = 0; g < groups; ++g) {
      for (size_t b = 0; b < 16; ++b) {
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
    EXPECT_EQ(std::memcmp(act.data() + groups * sizeof(kernels::ActGroupR16),
                          q8.data() + groups * 16, (blocks % 16) * 34),
              0);
  }
}

struct Matrix {
  size_t rows, n, row_bytes;
  std::vector<uint8_t> plain, packed;
  std::vector<std::vector<float>> deq;  // reference-dequantized rows
};

Matrix make_matrix(size_t rows, size_t n, uint32_t seed) {
  Matrix m{rows, n, kernels::row_bytes(DType::Q4_0, n), {}, {}, {}};
  for (size_t r = 0; r < rows; ++r) {
    const std::vector<uint8_t> row = random_row(DType::Q4_0, n, seed * 1000 + r);
    const std::vector<uint8_t> p = repack(row, n);
    m.plain.insert(m.plain.end(), row.begin(), row.end());
    m.packed.insert(m.packed.end(), p.begin(), p.end());
    m.deq.push_back(reference_dequantize(DType::Q4_0, row.data(), n));
  }
  return m;
}

// Naive double dot with the unquantized x; the bound covers the q8_0 activation rounding (half
// a step of amax / 127 plus the f16 scale) and f32 accumulation.
struct Expected {
  double value, bound, magnitude;
};

Expected expected_dot(const Matrix& m, size_t r, const std::vector<float>& x) {
  double dot = 0, mag = 0, act_err = 0;
  for (size_t b = 0; b < m.n / 32; ++b) {
    double amax = 0, wabs = 0;
    for (size_t i = 32 * b; i < 32 * b + 32; ++i) {
      dot += double(m.deq[r][i]) * x[i];
      mag += std::fabs(double(m.deq[r][i]) * x[i]);
      amax = std::max(amax, std::fabs(double(x[i])));
      wabs += std::fabs(double(m.deq[r][i]));
    }
    act_err += wabs * (amax / 127 * 0.5 + amax * 1e-3);
  }
  return {dot, act_err + 2e-5 * mag + 1e-30, mag};
}

TEST(Q4_0R16, MatvecMatchesNaiveDoubleScalarAndPlainOnEveryIsa) {
  for (size_t n : kLengths) {
    for (size_t rows : {1u, 3u, 7u, 33u}) {
      const Matrix m = make_matrix(rows, n, static_cast<uint32_t>(rows + n));
      const std::vector<float> x = random_floats(n, static_cast<uint32_t>(rows), -2.0f, 2.0f);
      std::vector<uint8_t> act(kernels::activation_bytes(DType::Q4_0_R16, n));
      std::vector<uint8_t> act_plain(kernels::activation_bytes(DType::Q4_0, n));
      kernels::quantize_activation(DType::Q4_0_R16, x.data(), act.data(), n);
      kernels::quantize_activation(DType::Q4_0, x.data(), act_plain.data(), n);
      std::vector<float> y_scalar(rows);
      kernels::format_kernels(Isa::scalar)
          .matvec_for(DType::Q4_0_R16)(m.packed.data(), m.row_bytes, rows, n, act.data(),
                                       y_scalar.data());
      for (Isa isa : available_isas()) {
        const kernels::FormatKernels& k = kernels::format_kernels(isa);
        ASSERT_NE(k.matvec_for(DType::Q4_0_R16), nullptr);
        std::vector<float> y(rows, NAN), y_plain(rows, NAN);
        k.matvec_for(DType::Q4_0_R16)(m.packed.data(), m.row_bytes, rows, n, act.data(), y.data());
        k.matvec_for(DType::Q4_0)(m.plain.data(), m.row_bytes, rows, n, act_plain.data(),
                                  y_plain.data());
        for (size_t r = 0; r < rows; ++r) {
          const Expected e = expected_dot(m, r, x);
          const std::string where = std::string(kernels::isa_name(isa)) + " row " +
                                    std::to_string(r) + " of " + std::to_string(rows) + ", n " +
                                    std::to_string(n);
          ASSERT_NEAR(y[r], e.value, e.bound) << where;
          // Same integers as scalar and as plain q4_0: only the f32 summation order differs.
          ASSERT_NEAR(y[r], y_scalar[r], 1e-5 * e.magnitude + 1e-30) << where << " vs scalar";
          ASSERT_NEAR(y[r], y_plain[r], 1e-5 * e.magnitude + 1e-30) << where << " vs plain";
        }
      }
    }
  }
}

TEST(Q4_0R16, GemmQMatchesPerTokenMatvec) {
  for (size_t n : {size_t{32 * 16 * 5 + 32 * 7}, size_t{32 * 3}}) {
    const size_t ab = kernels::activation_bytes(DType::Q4_0_R16, n);
    for (size_t rows : {1u, 7u, 33u}) {
      const Matrix m = make_matrix(rows, n, static_cast<uint32_t>(rows + 7));
      for (size_t tokens : {1u, 3u, 5u, 9u}) {
        std::vector<uint8_t> acts(tokens * ab);
        for (size_t t = 0; t < tokens; ++t) {
          const std::vector<float> x = random_floats(n, static_cast<uint32_t>(31 * t + rows));
          kernels::quantize_activation(DType::Q4_0_R16, x.data(), acts.data() + t * ab, n);
        }
        for (Isa isa : available_isas()) {
          const kernels::FormatKernels& k = kernels::format_kernels(isa);
          const size_t y_stride = rows + 2;
          std::vector<float> y(tokens * y_stride, -7.0f);
          k.gemm_q_for(DType::Q4_0_R16)(m.packed.data(), m.row_bytes, rows, n, acts.data(), ab,
                                        tokens, y.data(), y_stride);
          for (size_t t = 0; t < tokens; ++t) {
            std::vector<float> want(rows);
            k.matvec_for(DType::Q4_0_R16)(m.packed.data(), m.row_bytes, rows, n,
                                          acts.data() + t * ab, want.data());
            for (size_t r = 0; r < rows; ++r) {
              // Each (token, row) sum takes the same steps in both: equal up to contraction.
              ASSERT_NEAR(y[t * y_stride + r], want[r], 1e-6 * std::fabs(want[r]) + 1e-30)
                  << kernels::isa_name(isa) << " token " << t << " row " << r << " n " << n;
            }
            EXPECT_EQ(y[t * y_stride + rows], -7.0f);  // padding untouched
          }
        }
      }
    }
  }
}

TEST(Q4_0R16, PreferredWhereAHandWrittenKernelExists) {
  for (Isa isa : available_isas()) {
    const kernels::FormatKernels& k = kernels::format_kernels(isa);
    EXPECT_EQ(k.fast_q4_0_r16, isa == Isa::avx2) << kernels::isa_name(isa);
    EXPECT_EQ(k.preferred_layout(DType::Q4_0), isa == Isa::avx2 ? DType::Q4_0_R16 : DType::Q4_0);
    for (DType t : {DType::Q5_0, DType::Q6_K, DType::F16, DType::Q4_0_R16})
      EXPECT_EQ(k.preferred_layout(t), t);
    EXPECT_NE(k.gemm_q_for(DType::Q4_0_R16), nullptr);
  }
}

}  // namespace
}  // namespace oxi::test::formats
