// The shared matvec / gemm_q checks of the repacked layouts; see repacked_checks.h.
#include "tests/kernels/formats/repacked_checks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/formats/q4_0_r16.h"
#include "kernels/formats/quant.h"
#include "tests/common/test_data.h"
#include "tests/kernels/formats/reference.h"

namespace oxi::test::formats {

using kernels::DType;
using kernels::Isa;

void expect_internal_layout_of(DType plain, DType packed, std::string_view name, DType activation,
                               std::span<const size_t> lengths) {
  EXPECT_EQ(kernels::name(packed), name);
  EXPECT_TRUE(kernels::info(packed).quantized);
  for (size_t n : lengths) EXPECT_EQ(kernels::row_bytes(packed, n), kernels::row_bytes(plain, n));
  EXPECT_FALSE(kernels::dtype_info(static_cast<uint32_t>(packed)).has_value());
  EXPECT_FALSE(kernels::parse_dtype(name).has_value());
  EXPECT_TRUE(kernels::weight_supported(packed));
  EXPECT_EQ(kernels::activation_dtype(packed), activation);
}

std::vector<uint8_t> repack_copy(DType plain, DType packed, const std::vector<uint8_t>& row,
                                 size_t n) {
  std::vector<uint8_t> out(row.size());
  EXPECT_TRUE(kernels::repack_row(plain, packed, row.data(), out.data(), n));
  return out;
}

void expect_repack_lossless_and_bit_exact(DType plain, DType packed,
                                          std::span<const size_t> lengths, size_t whole_group) {
  for (size_t n : lengths) {
    for (uint32_t seed : {1u, 2u, 3u}) {
      const std::vector<uint8_t> row = random_row(plain, n, seed * 7919 + static_cast<uint32_t>(n));
      const std::vector<uint8_t> repacked = repack_copy(plain, packed, row, n);
      if (n >= whole_group) {
        EXPECT_NE(repacked, row);
      }
      std::vector<uint8_t> back(row.size());
      ASSERT_TRUE(kernels::repack_row(packed, plain, repacked.data(), back.data(), n));
      ASSERT_EQ(back, row) << kernels::name(packed) << " n " << n;
      std::vector<float> want(n), got(n);
      kernels::dequantize_row(plain, row.data(), want.data(), n);
      ASSERT_NE(kernels::row_decoder(packed), nullptr);
      kernels::dequantize_row(packed, repacked.data(), got.data(), n);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
            << kernels::name(packed) << " n " << n << " element " << i;
      }
    }
  }
}

void expect_encoder_is_plain_repacked(DType plain, DType packed, std::span<const size_t> lengths) {
  for (size_t n : lengths) {
    const std::vector<float> x = random_normal(n, static_cast<uint32_t>(n));
    std::vector<uint8_t> row(kernels::row_bytes(plain, n)), encoded(row.size());
    kernels::quantize_row(plain, x.data(), row.data(), n);
    kernels::quantize_row(packed, x.data(), encoded.data(), n);
    EXPECT_EQ(encoded, repack_copy(plain, packed, row, n)) << kernels::name(packed) << " n " << n;
  }
}

namespace {

struct Matrix {
  size_t rows, n, row_bytes;
  std::vector<uint8_t> plain, packed;
  std::vector<std::vector<float>> deq;  // reference-dequantized rows
};

// `sets` x row_granule(packed, n) rows (q4_K_r8s repacks whole sets of rows).
Matrix make_matrix(DType plain, DType packed, size_t sets, size_t n, uint32_t seed) {
  const size_t rows = sets * kernels::row_granule(packed, n);
  Matrix m{rows, n, kernels::row_bytes(plain, n), {}, {}, {}};
  for (size_t r = 0; r < rows; ++r) {
    const std::vector<uint8_t> row = random_row(plain, n, seed * 1000 + r);
    m.plain.insert(m.plain.end(), row.begin(), row.end());
    m.deq.push_back(reference_dequantize(plain, row.data(), n));
  }
  m.packed = m.plain;
  if (packed != plain) {
    EXPECT_TRUE(kernels::repack_rows(plain, packed, m.plain.data(), m.packed.data(), rows, n));
  }
  return m;
}

// Naive double dot with the unquantized x; the bound covers the activation rounding (half a step
// of amax / 127 per value, plus the scale's own rounding) and f32 accumulation.
struct Expected {
  double value, bound, magnitude;
};

Expected expected_dot(const Matrix& m, size_t block, size_t r, const std::vector<float>& x) {
  double dot = 0, mag = 0, act_err = 0;
  for (size_t b = 0; b < m.n / block; ++b) {
    double amax = 0, wabs = 0;
    for (size_t i = block * b; i < block * b + block; ++i) {
      dot += double(m.deq[r][i]) * x[i];
      mag += std::fabs(double(m.deq[r][i]) * x[i]);
      amax = std::max(amax, std::fabs(double(x[i])));
      wabs += std::fabs(double(m.deq[r][i]));
    }
    act_err += wabs * (amax / 127 * 0.5 + amax * 1e-3);
  }
  return {dot, act_err + 2e-5 * mag + 1e-30, mag};
}

}  // namespace

void expect_matvec_matches_naive_scalar_and_plain(DType plain, DType packed,
                                                  std::span<const size_t> lengths) {
  const size_t block = kernels::info(plain).block_elems;
  for (size_t n : lengths) {
    for (size_t sets : {1u, 3u, 7u, 33u}) {
      const Matrix m = make_matrix(plain, packed, sets, n, static_cast<uint32_t>(sets + n));
      const size_t rows = m.rows;
      const std::vector<float> x = random_floats(n, static_cast<uint32_t>(sets), -2.0f, 2.0f);
      std::vector<uint8_t> act(kernels::activation_bytes(packed, n));
      std::vector<uint8_t> act_plain(kernels::activation_bytes(plain, n));
      kernels::quantize_activation(packed, x.data(), act.data(), n);
      kernels::quantize_activation(plain, x.data(), act_plain.data(), n);
      // The scalar table holds the reference tile.
      std::vector<float> y_scalar(rows);
      ASSERT_NE(kernels::format_kernels(Isa::scalar).matvec_for(packed), nullptr);
      kernels::format_kernels(Isa::scalar)
          .matvec_for(packed)(m.packed.data(), m.row_bytes, rows, n, act.data(), y_scalar.data());
      for (Isa isa : available_isas()) {
        const kernels::FormatKernels& k = kernels::format_kernels(isa);
        ASSERT_NE(k.matvec_for(packed), nullptr);
        std::vector<float> y(rows, NAN), y_plain(rows, NAN);
        k.matvec_for(packed)(m.packed.data(), m.row_bytes, rows, n, act.data(), y.data());
        k.matvec_for(plain)(m.plain.data(), m.row_bytes, rows, n, act_plain.data(), y_plain.data());
        for (size_t r = 0; r < rows; ++r) {
          const Expected e = expected_dot(m, block, r, x);
          const std::string where = std::string(kernels::name(packed)) + " on " +
                                    std::string(kernels::isa_name(isa)) + " row " +
                                    std::to_string(r) + " of " + std::to_string(rows) + ", n " +
                                    std::to_string(n);
          ASSERT_NEAR(y[r], e.value, e.bound) << where;
          // Same integers as scalar and as the plain type: only the f32 summation order differs.
          ASSERT_NEAR(y[r], y_scalar[r], 1e-5 * e.magnitude + 1e-30) << where << " vs scalar";
          ASSERT_NEAR(y[r], y_plain[r], 1e-5 * e.magnitude + 1e-30) << where << " vs plain";
        }
      }
    }
  }
}

void expect_gemm_q_matches_matvec(DType plain, DType packed, std::span<const size_t> lengths,
                                  GemmMatch match) {
  for (size_t n : lengths) {
    const size_t ab = kernels::activation_bytes(packed, n);
    for (size_t sets : {1u, 7u, 33u}) {
      const Matrix m = make_matrix(plain, packed, sets, n, static_cast<uint32_t>(sets + 7));
      const size_t rows = m.rows;
      for (size_t tokens : {1u, 2u, 3u, 5u, 9u}) {
        std::vector<uint8_t> acts(tokens * ab);
        for (size_t t = 0; t < tokens; ++t) {
          const std::vector<float> x = random_floats(n, static_cast<uint32_t>(31 * t + sets));
          kernels::quantize_activation(packed, x.data(), acts.data() + t * ab, n);
        }
        for (Isa isa : available_isas()) {
          const kernels::FormatKernels& k = kernels::format_kernels(isa);
          ASSERT_NE(k.gemm_q_for(packed), nullptr);
          const size_t y_stride = rows + 2;
          std::vector<float> y(tokens * y_stride, -7.0f);
          k.gemm_q_for(packed)(m.packed.data(), m.row_bytes, rows, n, acts.data(), ab, tokens,
                               y.data(), y_stride);
          for (size_t t = 0; t < tokens; ++t) {
            std::vector<float> want(rows);
            k.matvec_for(packed)(m.packed.data(), m.row_bytes, rows, n, acts.data() + t * ab,
                                 want.data());
            for (size_t r = 0; r < rows; ++r) {
              const float got = y[t * y_stride + r];
              // Each (token, row) sum takes the same steps in both.
              if (match == GemmMatch::kBitExact) {
                ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want[r]))
                    << kernels::name(packed) << " on " << kernels::isa_name(isa) << " token " << t
                    << " row " << r << " n " << n << ": " << got << " vs " << want[r];
              } else {
                // Equal up to contraction.
                ASSERT_NEAR(got, want[r], 1e-6 * std::fabs(want[r]) + 1e-30)
                    << kernels::name(packed) << " on " << kernels::isa_name(isa) << " token " << t
                    << " row " << r << " n " << n;
              }
            }
            EXPECT_EQ(y[t * y_stride + rows], -7.0f);  // padding untouched
          }
        }
      }
    }
  }
}

void expect_avx512_bit_identical_to_avx2(DType plain, DType packed,
                                         std::span<const size_t> lengths) {
  expect_isa_bit_identical(plain, packed, lengths, Isa::avx2, Isa::avx512);
}

void expect_isa_bit_identical(DType plain, DType packed, std::span<const size_t> lengths,
                              Isa reference, Isa isa) {
  const std::vector<Isa> isas = available_isas();
  const auto have = [&](Isa i) { return std::find(isas.begin(), isas.end(), i) != isas.end(); };
  if (!have(reference) || !have(isa))
    GTEST_SKIP() << "needs " << kernels::isa_name(reference) << " and " << kernels::isa_name(isa);
  constexpr size_t kSets = 9, kTokens = 5;
  for (size_t n : lengths) {
    const Matrix m = make_matrix(plain, packed, kSets, n, static_cast<uint32_t>(n + 77));
    const size_t kRows = m.rows;
    const size_t ab = kernels::activation_bytes(packed, n);
    std::vector<uint8_t> acts(kTokens * ab);
    for (size_t t = 0; t < kTokens; ++t) {
      const std::vector<float> x = random_floats(n, static_cast<uint32_t>(5 + t), -3.0f, 3.0f);
      kernels::quantize_activation(packed, x.data(), acts.data() + t * ab, n);
    }
    // gemm_q's outputs, then each token's matvec
    std::vector<float> y[2];
    for (int i = 0; i < 2; ++i) {
      const kernels::FormatKernels& k = kernels::format_kernels(i == 0 ? reference : isa);
      y[i].assign(2 * kTokens * kRows, NAN);
      k.gemm_q_for(packed)(m.packed.data(), m.row_bytes, kRows, n, acts.data(), ab, kTokens,
                           y[i].data(), kRows);
      for (size_t t = 0; t < kTokens; ++t)
        k.matvec_for(packed)(m.packed.data(), m.row_bytes, kRows, n, acts.data() + t * ab,
                             y[i].data() + (kTokens + t) * kRows);
    }
    for (size_t j = 0; j < y[0].size(); ++j)
      ASSERT_EQ(std::bit_cast<uint32_t>(y[0][j]), std::bit_cast<uint32_t>(y[1][j]))
          << kernels::name(packed) << " n " << n << " value " << j << ": "
          << kernels::isa_name(reference) << " " << y[0][j] << ", " << kernels::isa_name(isa) << " "
          << y[1][j];
  }
}

void expect_constant_activations_match_naive(kernels::DType plain, kernels::DType packed,
                                             const std::vector<uint8_t>& plain_row, size_t n,
                                             std::string_view what) {
  const std::vector<uint8_t> row = repack_copy(plain, packed, plain_row, n);
  const std::vector<float> w = reference_dequantize(plain, plain_row.data(), n);
  for (float sign : {1.0f, -1.0f}) {
    const std::vector<float> x(n, sign);
    std::vector<uint8_t> act(kernels::activation_bytes(packed, n));
    kernels::quantize_activation(packed, x.data(), act.data(), n);
    double want = 0;
    for (size_t i = 0; i < n; ++i) want += double(w[i]) * sign;
    for (kernels::Isa isa : available_isas()) {
      float y = NAN;
      kernels::format_kernels(isa).matvec_for(packed)(row.data(), row.size(), 1, n, act.data(), &y);
      EXPECT_NEAR(y, want, 1e-4 * std::fabs(want) + 1e-3)
          << kernels::isa_name(isa) << " " << what << " sign " << sign;
    }
  }
}

void expect_activation_is_q4_0_r16s(kernels::DType packed, int zero_per_q,
                                    std::span<const size_t> lengths) {
  for (size_t n : lengths) {
    const std::vector<float> x = random_floats(n, static_cast<uint32_t>(n), -3.0f, 3.0f);
    const size_t bytes = kernels::activation_bytes(packed, n);
    ASSERT_EQ(bytes, kernels::activation_bytes(kernels::DType::Q4_0_R16, n));
    std::vector<uint8_t> got(bytes, 0xAB), q4(bytes, 0xCD);
    kernels::quantize_activation(packed, x.data(), got.data(), n);
    kernels::quantize_activation(kernels::DType::Q4_0_R16, x.data(), q4.data(), n);
    const auto* a = reinterpret_cast<const kernels::ActGroupR16*>(got.data());
    const auto* b = reinterpret_cast<const kernels::ActGroupR16*>(q4.data());
    for (size_t g = 0; g < bytes / sizeof(kernels::ActGroupR16); ++g) {
      ASSERT_EQ(std::memcmp(a[g].d, b[g].d, sizeof a[g].d), 0);
      ASSERT_EQ(std::memcmp(a[g].q, b[g].q, sizeof a[g].q), 0);
      for (size_t i = 0; i < 16; ++i)
        ASSERT_EQ(a[g].zero[i], b[g].zero[i] / 8 * zero_per_q) << g << " " << i;
    }
  }
}

void expect_matvec_rows_together_give_each_rows_bits(DType plain, DType packed) {
  for (const auto& [n, rows] : {std::pair<size_t, size_t>{256 * 8, 24},
                                {256 * 8, 19},
                                {256 * 16, 16},
                                {256 * 16, 19},
                                {256 * 22, 16},
                                {256 * 22, 19}}) {
    const size_t row_bytes = kernels::row_bytes(plain, n);
    std::vector<uint8_t> w;
    for (size_t r = 0; r < rows; ++r) {
      const std::vector<uint8_t> row = repack_copy(plain, packed, random_row(plain, n, 500 + r), n);
      w.insert(w.end(), row.begin(), row.end());
    }
    const std::vector<float> x = random_floats(n, 77, -2.0f, 2.0f);
    std::vector<uint8_t> act(kernels::activation_bytes(packed, n));
    kernels::quantize_activation(packed, x.data(), act.data(), n);
    for (Isa isa : available_isas()) {
      const kernels::MatvecFn matvec = kernels::format_kernels(isa).matvec_for(packed);
      std::vector<float> together(rows, NAN);
      matvec(w.data(), row_bytes, rows, n, act.data(), together.data());
      for (size_t r = 0; r < rows; ++r) {
        float alone = NAN;
        matvec(w.data() + r * row_bytes, row_bytes, 1, n, act.data(), &alone);
        ASSERT_EQ(std::bit_cast<uint32_t>(together[r]), std::bit_cast<uint32_t>(alone))
            << kernels::isa_name(isa) << " n " << n << " row " << r << ": " << together[r] << " vs "
            << alone;
      }
    }
  }
}

void expect_preferred_where(DType plain, DType packed, bool kernels::FormatKernels::*fast,
                            bool (*hand_written)(Isa)) {
  for (Isa isa : available_isas()) {
    const kernels::FormatKernels& k = kernels::format_kernels(isa);
    const bool yes = hand_written(isa);
    EXPECT_EQ(k.*fast, yes) << kernels::isa_name(isa);
    EXPECT_EQ(k.preferred_layout(plain), yes ? packed : plain) << kernels::isa_name(isa);
    EXPECT_EQ(k.preferred_layout(plain, 2048, 5632), yes ? packed : plain)
        << kernels::isa_name(isa);
    EXPECT_EQ(k.preferred_layout(packed), packed) << kernels::isa_name(isa);
    EXPECT_NE(k.gemm_q_for(packed), nullptr) << kernels::isa_name(isa);
  }
}

}  // namespace oxi::test::formats
