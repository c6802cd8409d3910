// kernels/formats against independent references: dtype table, f16/bf16 conversions,
// dequantization (bit-exact), quantization error, activation quantization, matvec (every ISA),
// and gemm_q against per-token matvec.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "kernels/formats/dtype.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/quant.h"
#include "kernels/formats/quantize_k.h"
#include "tests/common/test_data.h"
#include "tests/kernels/formats/reference.h"
#include "tests/kernels/formats/repacked_checks.h"

namespace oxi::test::formats {
namespace {

using kernels::available_isas;
using kernels::DType;
using kernels::Isa;

const std::vector<DType> kWeightTypes = {
    DType::F32,  DType::F16,    DType::BF16,   DType::Q4_0,  DType::Q4_1, DType::Q5_0,
    DType::Q5_1, DType::Q8_0,   DType::Q2_K,   DType::Q3_K,  DType::Q4_K, DType::Q5_K,
    DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS, DType::TQ1_0, DType::TQ2_0};

bool ternary(DType t) {
  return t == DType::TQ1_0 || t == DType::TQ2_0;
}

std::string type_name(const testing::TestParamInfo<DType>& p) {
  return std::string(kernels::name(p.param));
}

// ---- dtype table ----

TEST(DType, NamesAndSizesFollowGguf) {
  EXPECT_EQ(kernels::name(DType::Q4_K), "q4_K");
  EXPECT_EQ(kernels::name(DType::BF16), "bf16");
  EXPECT_EQ(kernels::row_bytes(DType::Q4_0, 64), 36u);
  EXPECT_EQ(kernels::row_bytes(DType::Q6_K, 512), 420u);
  EXPECT_EQ(kernels::row_bytes(DType::Q4_0, 33), 0u);
  EXPECT_EQ(kernels::row_bytes(DType::F16, 3), 6u);
  EXPECT_EQ(kernels::parse_dtype("Q8_0"), DType::Q8_0);
  EXPECT_EQ(kernels::parse_dtype("q5_k"), DType::Q5_K);
  EXPECT_FALSE(kernels::parse_dtype("q4_2").has_value());
  EXPECT_FALSE(kernels::dtype_info(4).has_value());  // q4_2: removed from GGUF
  ASSERT_TRUE(kernels::dtype_info(15).has_value());
  EXPECT_EQ(kernels::dtype_info(15)->block_bytes, 292u);
  EXPECT_EQ(kernels::parse_dtype("IQ4_XS"), DType::IQ4_XS);
  EXPECT_EQ(kernels::row_bytes(DType::IQ4_XS, 512), 272u);
  ASSERT_TRUE(kernels::dtype_info(20).has_value());
  EXPECT_EQ(kernels::dtype_info(20)->name, "iq4_nl");
  EXPECT_EQ(kernels::dtype_info(20)->block_bytes, 18u);
  EXPECT_FALSE(kernels::dtype_info(16).has_value());  // iq2_xxs: not supported
  EXPECT_EQ(kernels::parse_dtype("TQ1_0"), DType::TQ1_0);
  ASSERT_TRUE(kernels::dtype_info(35).has_value());
  EXPECT_EQ(kernels::dtype_info(35)->name, "tq2_0");
  EXPECT_EQ(kernels::row_bytes(DType::TQ1_0, 512), 108u);
  EXPECT_EQ(kernels::row_bytes(DType::TQ2_0, 512), 132u);
}

// ---- f16 / bf16 ----

TEST(Fp16, DecodesEveryHalfLikeTheSpec) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const double want = half_to_double(static_cast<uint16_t>(h));
    const float got = kernels::f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << h;
      continue;
    }
    ASSERT_EQ(static_cast<double>(got), want) << h;
    ASSERT_EQ(kernels::f32_to_f16(got), h) << h;  // every half survives the round trip
  }
}

// The nearest half, ties to even mantissa, by comparing against the neighbours in double.
void expect_nearest_half(float v, uint16_t got, bool bf16) {
  auto dec = [bf16](uint16_t x) { return bf16 ? bf16_to_double(x) : half_to_double(x); };
  const double err = std::fabs(dec(got) - v);
  for (int delta : {-1, 1}) {
    const auto nb = static_cast<uint16_t>(got + delta);
    if (std::isnan(dec(nb)) || ((nb ^ got) & 0x8000)) continue;
    const double e = std::fabs(dec(nb) - v);
    ASSERT_LE(err, e) << v;
    if (err == e) {
      ASSERT_EQ(got & 1, 0) << "tie must go to even: " << v;
    }
  }
}

TEST(Fp16, RoundsToNearestEven) {
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    // Values across the half range, subnormals included, and exact ties.
    const float v = std::ldexp(std::uniform_real_distribution<float>(-2, 2)(rng),
                               static_cast<int>(rng() % 40) - 26);
    expect_nearest_half(v, kernels::f32_to_f16(v), false);
    expect_nearest_half(v, kernels::f32_to_bf16(v), true);
  }
  EXPECT_EQ(kernels::f32_to_f16(65520.0f), 0x7c00);  // halfway to 65536 rounds to inf
  EXPECT_EQ(kernels::f32_to_f16(65519.0f), 0x7bff);
  EXPECT_EQ(kernels::f32_to_f16(1.0f + 0x1p-11f), 0x3c00);  // tie: to even
  EXPECT_EQ(kernels::f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_TRUE(std::isnan(kernels::f16_to_f32(kernels::f32_to_f16(NAN))));
  EXPECT_TRUE(std::isnan(kernels::bf16_to_f32(kernels::f32_to_bf16(NAN))));
}

// ---- dequantization ----

class Formats : public testing::TestWithParam<DType> {};

size_t block_elems(DType t) {
  return kernels::info(t).block_elems;
}

TEST_P(Formats, DequantizeIsBitExact) {
  const DType t = GetParam();
  for (size_t blocks : {1u, 3u, 17u}) {
    const size_t n = blocks * (block_elems(t) == 1 ? 37 : block_elems(t));
    const std::vector<uint8_t> raw = random_row(t, n, static_cast<uint32_t>(n));
    const std::vector<float> want = reference_dequantize(t, raw.data(), n);
    std::vector<float> got(n);
    kernels::dequantize_row(t, raw.data(), got.data(), n);
    ASSERT_NE(kernels::row_decoder(t), nullptr);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
          << "element " << i << ": " << got[i] << " vs " << want[i];
    }
  }
}

// RMS error of quantize -> dequantize, relative to the RMS of the data.
double relative_rms_bound(DType t) {
  switch (t) {
    case DType::F32:
      return 0;
    case DType::F16:
      return 1e-3;
    case DType::BF16:
      return 5e-3;
    case DType::Q8_0:
      return 0.01;
    case DType::Q6_K:
      return 0.03;
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q5_K:
      return 0.06;
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q4_K:
    case DType::IQ4_NL:
    case DType::IQ4_XS:
      return 0.12;
    case DType::Q3_K:
      return 0.25;
    case DType::Q2_K:
      return 0.5;
    case DType::TQ1_0:  // of ternary weights (quantization_input): the f16 rounding of the scale
    case DType::TQ2_0:
      return 1e-3;
    default:
      return 0;
  }
}

// A trained ternary layer's weights: s * {-1, 0, 1}, s per 256-value block, each block holding
// at least one -s or s.
std::vector<float> ternary_weights(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> x(n);
  for (size_t b = 0; b < n / 256; ++b) {
    const float s = std::uniform_real_distribution<float>(0.01f, 2.0f)(rng);
    for (size_t i = 0; i < 256; ++i)
      x[256 * b + i] = s * static_cast<float>(static_cast<int>(rng() % 3) - 1);
    x[256 * b + rng() % 256] = -s;
  }
  return x;
}

// What the round trip test quantizes: Gaussian weights with a few outliers, like real layers,
// and ternary ones for the formats made for them.
std::vector<float> quantization_input(DType t, size_t n, uint32_t seed) {
  if (ternary(t)) return ternary_weights(n, seed);
  std::vector<float> x = random_normal(n, seed, 0.5f);
  x[5] = 4.0f;
  x[n - 3] = -3.0f;
  return x;
}

TEST_P(Formats, QuantizeRoundTripErrorIsBounded) {
  const DType t = GetParam();
  const size_t n = 16 * std::max<size_t>(block_elems(t), 32);
  for (uint32_t seed : {1u, 2u}) {
    const std::vector<float> x = quantization_input(t, n, seed);
    std::vector<uint8_t> raw(kernels::row_bytes(t, n));
    kernels::quantize_row(t, x.data(), raw.data(), n);
    const std::vector<float> y = reference_dequantize(t, raw.data(), n);
    double err = 0, ref = 0;
    for (size_t i = 0; i < n; ++i) {
      err += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
      ref += double(x[i]) * x[i];
    }
    EXPECT_LE(std::sqrt(err / ref), relative_rms_bound(t)) << kernels::name(t);
  }
  // All zeros stays all zeros.
  std::vector<float> zeros(n, 0.0f), y(n, 1.0f);
  std::vector<uint8_t> raw(kernels::row_bytes(t, n));
  kernels::quantize_row(t, zeros.data(), raw.data(), n);
  kernels::dequantize_row(t, raw.data(), y.data(), n);
  for (float v : y) ASSERT_EQ(v, 0.0f);
}

// importance_row_encoder (an imatrix's column importance): over many rows, the importance-
// weighted squared error of the weighted encoding is below the plain encoding's when a few
// columns matter far more; with every column alike it stays near the plain error; the blocks
// decode as the format says (the reference decoder). Types without one return nullptr.
TEST(ImportanceEncoders, WeighTheImportantColumns) {
  const size_t n = 512, rows = 48;
  std::vector<float> important(n, 1.0f), alike(n, 3.0f);
  for (size_t j = 0; j < n; j += 7) important[j] = 60.0f;
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K,
                  DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS}) {
    const kernels::ImportanceRowEncoder encode = kernels::importance_row_encoder(t);
    ASSERT_NE(encode, nullptr) << kernels::name(t);
    double plain_err = 0, weighted_err = 0, alike_err = 0;
    std::vector<uint8_t> raw(kernels::row_bytes(t, n));
    for (uint32_t r = 0; r < rows; ++r) {
      const std::vector<float> x = random_normal(n, 100 + r);
      const auto error = [&](const std::vector<float>& imp, bool weighted) {
        if (weighted)
          encode(x.data(), imp.data(), raw.data(), n);
        else
          kernels::quantize_row(t, x.data(), raw.data(), n);
        const std::vector<float> y = reference_dequantize(t, raw.data(), n);
        double e = 0;
        for (size_t j = 0; j < n; ++j) e += important[j] * (double(y[j]) - x[j]) * (y[j] - x[j]);
        return e;
      };
      plain_err += error(important, false);
      weighted_err += error(important, true);
      alike_err += error(alike, true);
    }
    EXPECT_LT(weighted_err, 0.95 * plain_err) << kernels::name(t);
    EXPECT_LT(alike_err, 1.5 * plain_err) << kernels::name(t);
    std::cout << "[ measure ] " << kernels::name(t)
              << " important-column error, weighted / plain = " << weighted_err / plain_err << "\n";
  }
  for (DType t : {DType::Q8_0, DType::F16, DType::F32, DType::TQ2_0})
    EXPECT_EQ(kernels::importance_row_encoder(t), nullptr) << kernels::name(t);
  // No importance: the K-quants' plain encoders, bit for bit.
  const std::vector<float> x = random_normal(n, 9);
  std::vector<uint8_t> a(kernels::row_bytes(DType::Q4_K, n)), b(a.size());
  kernels::quantize_row_q4_K(x.data(), nullptr, a.data(), n);
  kernels::quantize_row(DType::Q4_K, x.data(), b.data(), n);
  EXPECT_EQ(a, b);
}

// ---- activations ----

TEST_P(Formats, ActivationQuantizationIsWithinHalfAStep) {
  const DType t = GetParam();
  const DType a = kernels::activation_dtype(t);
  const size_t n = 4 * std::max<size_t>(block_elems(t), 32) + (block_elems(t) == 1 ? 5 : 0);
  const std::vector<float> x = random_floats(n, 11, -3.0f, 3.0f);
  const size_t bytes = kernels::activation_bytes(t, n);
  ASSERT_EQ(bytes, kernels::row_bytes(a, n));
  std::vector<uint8_t> act(bytes);
  kernels::quantize_activation(t, x.data(), act.data(), n);
  if (a == DType::F32) {
    EXPECT_EQ(std::memcmp(act.data(), x.data(), bytes), 0);
    return;
  }
  std::vector<float> y(n);
  kernels::dequantize_row(a, act.data(), y.data(), n);
  const size_t be = block_elems(a), bb = kernels::info(a).block_bytes;
  for (size_t b = 0; b < n / be; ++b) {
    double amax = 0;
    for (size_t i = b * be; i < (b + 1) * be; ++i) amax = std::max(amax, std::fabs(double(x[i])));
    const uint8_t* blk = act.data() + b * bb;
    const auto* qs = reinterpret_cast<const int8_t*>(blk + (a == DType::Q8_K   ? 4
                                                            : a == DType::Q8_1 ? 4
                                                                               : 2));
    long sum = 0;
    for (size_t i = 0; i < be; ++i) {
      // Half a step of amax / 127, plus the f16 rounding of the scale.
      ASSERT_LE(std::fabs(double(y[b * be + i]) - x[b * be + i]), amax / 127 * 0.5 + amax * 1e-3);
      sum += qs[i];
    }
    if (a == DType::Q8_1) {
      const double d = half_to_double(static_cast<uint16_t>(blk[0] | blk[1] << 8));
      const double s = half_to_double(static_cast<uint16_t>(blk[2] | blk[3] << 8));
      EXPECT_NEAR(s, d * sum, std::fabs(d * sum) * 2e-3 + 1e-6);
    }
    if (a == DType::Q8_K) {
      for (size_t g = 0; g < 16; ++g) {
        int16_t bs;
        std::memcpy(&bs, blk + 4 + 256 + 2 * g, 2);
        int want = 0;
        for (size_t l = 0; l < 16; ++l) want += qs[16 * g + l];
        ASSERT_EQ(bs, want);
      }
    }
  }
}

// ---- matvec and gemm_q ----

struct Problem {
  DType t;
  size_t rows, n;
  std::vector<uint8_t> w;               // rows x row_bytes
  std::vector<std::vector<float>> deq;  // reference dequantized rows
  size_t row_bytes;
};

Problem make_problem(DType t, size_t rows, size_t n, uint32_t seed) {
  Problem p{t, rows, n, {}, {}, kernels::row_bytes(t, n)};
  for (size_t r = 0; r < rows; ++r) {
    // Random blocks cover every bit pattern (q8_0 -128, subnormal scales...).
    const std::vector<uint8_t> row = random_row(t, n, seed * 1000 + static_cast<uint32_t>(r));
    p.w.insert(p.w.end(), row.begin(), row.end());
    p.deq.push_back(reference_dequantize(t, row.data(), n));
  }
  return p;
}

// Naive double dot of the dequantized row with the unquantized x, and the bound on what the
// activation quantization may change: each x moves by at most half its block's step
// (amax / 127, or amax / 127 with f16 scale rounding), plus f32 accumulation rounding.
struct Expected {
  double value, bound, magnitude;
};

Expected expected_dot(const Problem& p, size_t r, const std::vector<float>& x) {
  const DType a = kernels::activation_dtype(p.t);
  const size_t be = a == DType::F32 ? 1 : block_elems(a);
  double dot = 0, mag = 0, act_err = 0;
  for (size_t b = 0; b < p.n / be; ++b) {
    double amax = 0, wabs = 0;
    for (size_t i = b * be; i < (b + 1) * be; ++i) {
      dot += double(p.deq[r][i]) * x[i];
      mag += std::fabs(double(p.deq[r][i]) * x[i]);
      amax = std::max(amax, std::fabs(double(x[i])));
      wabs += std::fabs(double(p.deq[r][i]));
    }
    if (a != DType::F32) act_err += wabs * (amax / 127 * 0.5 + amax * 1e-3);
  }
  // Formats with a min use s = d * sum(q) rounded to f16: covered by the 1e-3 relative term.
  return {dot, act_err + 2e-5 * mag + 1e-30, mag};
}

size_t test_n(DType t, int variant) {
  const size_t be = block_elems(t);
  if (be == 1) return variant == 0 ? 37 : 301;
  return variant == 0 ? be : (be == 32 ? 7 * be : 3 * be);
}

TEST_P(Formats, MatvecMatchesNaiveDoubleOnEveryIsa) {
  const DType t = GetParam();
  for (int variant = 0; variant < 2; ++variant) {
    const size_t n = test_n(t, variant);
    for (size_t rows : {1u, 3u, 7u, 33u}) {
      const Problem p = make_problem(t, rows, n, static_cast<uint32_t>(rows + 100 * variant));
      const std::vector<float> x = random_floats(n, static_cast<uint32_t>(rows), -2.0f, 2.0f);
      std::vector<uint8_t> act(kernels::activation_bytes(t, n));
      kernels::quantize_activation(t, x.data(), act.data(), n);
      std::vector<float> y_scalar(rows);
      kernels::format_kernels(Isa::scalar)
          .matvec_for(t)(p.w.data(), p.row_bytes, rows, n, act.data(), y_scalar.data());
      for (Isa isa : available_isas()) {
        const auto fn = kernels::format_kernels(isa).matvec_for(t);
        ASSERT_NE(fn, nullptr);
        std::vector<float> y(rows, NAN);
        fn(p.w.data(), p.row_bytes, rows, n, act.data(), y.data());
        for (size_t r = 0; r < rows; ++r) {
          const Expected e = expected_dot(p, r, x);
          ASSERT_NEAR(y[r], e.value, e.bound)
              << kernels::isa_name(isa) << " row " << r << " of " << rows << ", n " << n;
          // Same integers, only the f32 summation order may differ from the scalar path.
          ASSERT_NEAR(y[r], y_scalar[r], 1e-5 * e.magnitude + 1e-30)
              << kernels::isa_name(isa) << " vs scalar, row " << r;
        }
      }
    }
  }
}

TEST_P(Formats, GemmQMatchesPerTokenMatvec) {
  const DType t = GetParam();
  const size_t n = test_n(t, 1);
  const size_t ab = kernels::activation_bytes(t, n);
  for (size_t rows : {1u, 3u, 7u, 33u}) {
    const Problem p = make_problem(t, rows, n, static_cast<uint32_t>(rows + 7));
    // 37 and 70: formats with tiles of 32 tokens (QuantTile), a chunk of 64 and what is left
    for (size_t tokens : {1u, 3u, 5u, 9u, 37u, 70u}) {
      std::vector<uint8_t> acts(tokens * ab);
      for (size_t tk = 0; tk < tokens; ++tk) {
        const std::vector<float> x = random_floats(n, static_cast<uint32_t>(31 * tk + rows));
        kernels::quantize_activation(t, x.data(), acts.data() + tk * ab, n);
      }
      for (Isa isa : available_isas()) {
        const kernels::FormatKernels& k = kernels::format_kernels(isa);
        const size_t y_stride = rows + 2;
        std::vector<float> y(tokens * y_stride, -7.0f);
        k.gemm_q_for(t)(p.w.data(), p.row_bytes, rows, n, acts.data(), ab, tokens, y.data(),
                        y_stride);
        for (size_t tk = 0; tk < tokens; ++tk) {
          std::vector<float> want(rows);
          k.matvec_for(t)(p.w.data(), p.row_bytes, rows, n, acts.data() + tk * ab, want.data());
          for (size_t r = 0; r < rows; ++r) {
            ASSERT_NEAR(y[tk * y_stride + r], want[r], 1e-5 * std::fabs(want[r]) + 1e-30)
                << kernels::isa_name(isa) << " token " << tk << " row " << r;
          }
          EXPECT_EQ(y[tk * y_stride + rows], -7.0f);  // padding untouched
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, Formats, testing::ValuesIn(kWeightTypes), type_name);

// Ternary weights come back exactly as the trit times the f16 scale, and tq1_0's bytes take all
// 243 values of five trits (the base-3 fractions a reader decodes) in a large enough row.
TEST(Ternary, TernaryWeightsRoundTripExactly) {
  const size_t n = 256 * 64;
  const std::vector<float> x = ternary_weights(n, 9);
  for (DType t : {DType::TQ1_0, DType::TQ2_0}) {
    std::vector<uint8_t> raw(kernels::row_bytes(t, n));
    kernels::quantize_row(t, x.data(), raw.data(), n);
    const std::vector<float> y = reference_dequantize(t, raw.data(), n);
    for (size_t b = 0; b < n / 256; ++b) {
      double s = 0;
      for (size_t i = 0; i < 256; ++i) s = std::max(s, std::fabs(double(x[256 * b + i])));
      const float d = kernels::f16_to_f32(kernels::f32_to_f16(static_cast<float>(s)));
      for (size_t i = 256 * b; i < 256 * (b + 1); ++i) {
        const float want = x[i] == 0 ? 0.0f : std::copysign(d, x[i]);
        ASSERT_EQ(y[i], want) << kernels::name(t) << " element " << i;
      }
    }
    if (t == DType::TQ1_0) {
      std::vector<bool> seen(256);
      for (size_t b = 0; b < n / 256; ++b)
        for (size_t m = 0; m < 48; ++m) seen[raw[54 * b + m]] = true;
      EXPECT_EQ(std::count(seen.begin(), seen.end(), true), 243);
    }
  }
}

// Every instruction set adds the same integer per block with the same f32 step (traits_scalar.h):
// on each, gemm_q gives matvec's bits; avx2 and avx512 (both fusing the step into an FMA) give
// the same bits as each other.
TEST(Ternary, GemmQAndTheSimdSetsGiveTheSameBits) {
  for (DType t : {DType::TQ1_0, DType::TQ2_0}) {
    const size_t n = 5 * 256, rows = 7, tokens = 3;
    const Problem p = make_problem(t, rows, n, 41);
    const size_t ab = kernels::activation_bytes(t, n);
    std::vector<uint8_t> acts(tokens * ab);
    for (size_t tk = 0; tk < tokens; ++tk) {
      const std::vector<float> x = random_floats(n, static_cast<uint32_t>(50 + tk), -3.0f, 3.0f);
      kernels::quantize_activation(t, x.data(), acts.data() + tk * ab, n);
    }
    for (Isa isa : available_isas()) {
      const kernels::FormatKernels& k = kernels::format_kernels(isa);
      std::vector<float> gemm(tokens * rows, NAN), matvec(tokens * rows, NAN);
      k.gemm_q_for(t)(p.w.data(), p.row_bytes, rows, n, acts.data(), ab, tokens, gemm.data(), rows);
      for (size_t tk = 0; tk < tokens; ++tk)
        k.matvec_for(t)(p.w.data(), p.row_bytes, rows, n, acts.data() + tk * ab,
                        matvec.data() + tk * rows);
      for (size_t j = 0; j < gemm.size(); ++j)
        ASSERT_EQ(std::bit_cast<uint32_t>(gemm[j]), std::bit_cast<uint32_t>(matvec[j]))
            << kernels::name(t) << " " << kernels::isa_name(isa) << " value " << j;
    }
    const size_t lengths[] = {256, 3 * 256};
    expect_avx512_bit_identical_to_avx2(t, t, lengths);
  }
}

// q6_K's avx512 trait takes two 32-element chunks per 64-byte vector and folds its int32 lanes
// to the 256-bit trait's before the f32 part: each lane the same integer, so the same floats.
TEST(Q6K, Avx512IsBitIdenticalToAvx2) {
  const size_t lengths[] = {256, 5 * 256};
  expect_avx512_bit_identical_to_avx2(DType::Q6_K, DType::Q6_K, lengths);
}

// iq4_xs's avx512 trait holds two groups per 64-byte vector and folds its int32 lanes to the
// 256-bit trait's before the f32 part, as q6_K's does.
TEST(IQ4XS, Avx512IsBitIdenticalToAvx2) {
  const size_t lengths[] = {256, 7 * 256};
  expect_avx512_bit_identical_to_avx2(DType::IQ4_XS, DType::IQ4_XS, lengths);
}

// q2_K's and q3_K's avx512 step takes two 32-element chunks per 64-byte vector and folds its
// int32 lanes to the 256-bit step's before the f32 part, as q6_K's does.
TEST(Q2KQ3K, Avx512IsBitIdenticalToAvx2) {
  const size_t lengths[] = {256, 9 * 256};
  expect_avx512_bit_identical_to_avx2(DType::Q2_K, DType::Q2_K, lengths);
  expect_avx512_bit_identical_to_avx2(DType::Q3_K, DType::Q3_K, lengths);
}

// The NEON traits reduce each block's integer sum to one int32 and take the reference's f32 step
// (traits_neon.h), so their products are the reference's bit for bit: rows of one block, of a
// few and of many, whole tokens in gemm_q and one at a time.
TEST(Neon, PlainFormatsAreBitIdenticalToScalar) {
  std::vector<Isa> neon_sets;
  for (Isa isa : available_isas())
    if (isa == Isa::neon || isa == Isa::neon_dotprod) neon_sets.push_back(isa);
  if (neon_sets.empty()) GTEST_SKIP() << "needs neon";
  for (Isa isa : neon_sets) {
    for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                    DType::IQ4_NL, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K,
                    DType::Q6_K, DType::IQ4_XS, DType::TQ1_0, DType::TQ2_0}) {
      const size_t block = kernels::info(t).block_elems;
      const size_t lengths[] = {block, 7 * block, 64 * block};
      expect_isa_bit_identical(t, t, lengths, Isa::scalar, isa);
    }
  }
}

// Every instruction set's activation quantizer `encoder` writes the bytes `reference` writes
// for x as `dtype` blocks.
void expect_every_isa_writes(kernels::RowEncoder kernels::FormatKernels::*encoder,
                             kernels::RowEncoder reference, DType dtype,
                             const std::vector<float>& x) {
  const size_t n = x.size(), bytes = kernels::row_bytes(dtype, n);
  std::vector<uint8_t> want(bytes);
  reference(x.data(), want.data(), n);
  for (Isa isa : available_isas()) {
    std::vector<uint8_t> got(bytes, 0xAA);
    const kernels::RowEncoder quantize = kernels::format_kernels(isa).*encoder;
    ASSERT_NE(quantize, nullptr) << kernels::isa_name(isa);
    quantize(x.data(), got.data(), n);
    EXPECT_EQ(got, want) << kernels::isa_name(isa);
  }
}

// Every instruction set's q8_0 and q8_1 activation quantizers write the reference's bytes:
// blocks of random values at scales from 1e-38 (subnormal f16 scales) to 1e30, an all-zero
// block, and blocks whose scaled values sit exactly on .5 (round half to even, as
// std::nearbyint).
TEST(ActivationQuantization, Q8_0AndQ8_1AreBitIdenticalToTheReferenceOnEveryIsa) {
  std::vector<float> x;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int e = -38; e <= 30; e += 2) {
    for (int j = 0; j < 32; ++j) x.push_back(u(rng) * std::pow(10.0f, static_cast<float>(e)));
  }
  x.insert(x.end(), 32, 0.0f);
  for (float sign : {1.0f, -1.0f}) {  // amax 127 gives d = 1: the values are the rounding inputs
    for (int j = 0; j < 32; ++j) x.push_back(j == 0 ? 127.0f * sign : sign * (j - 16 + 0.5f));
  }
  expect_every_isa_writes(&kernels::FormatKernels::quantize_q8_0, kernels::quantize_row_q8_0,
                          DType::Q8_0, x);
  // q8_1 (q4_1 / q5_1's activation) is q8_0 with the scaled sum of each block's quants.
  expect_every_isa_writes(&kernels::FormatKernels::quantize_q8_1, kernels::quantize_row_q8_1,
                          DType::Q8_1, x);
}

// The same for the q8_K quantizer of the K-quant formats, whose scale maps the value of largest
// magnitude to -127: random blocks from 1e-30 to 1e30, blocks whose scale overflows to inf
// (maximum 1e-39; the reference's lrintf gives LONG_MIN, clamped to -127), an all-zero block,
// ties of magnitude of both signs (the first value's sign is kept), a NaN among finite values
// (skipped when finding the maximum), and values scaled exactly onto .5 (half to even).
TEST(ActivationQuantization, Q8_KIsBitIdenticalToTheReferenceOnEveryIsa) {
  std::vector<float> x;
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int e = -30; e <= 30; e += 6) {
    for (int j = 0; j < 256; ++j) x.push_back(u(rng) * std::pow(10.0f, static_cast<float>(e)));
  }
  for (int j = 0; j < 256; ++j) x.push_back(u(rng) * 1e-39f);
  x.insert(x.end(), 256, 0.0f);
  for (float sign : {1.0f, -1.0f}) {
    for (int j = 0; j < 256; ++j) x.push_back(u(rng));
    x[x.size() - 200] = 3.0f * sign;  // a tie: the first of +-3 decides the sign of the scale
    x[x.size() - 100] = -3.0f * sign;
  }
  for (int j = 0; j < 256; ++j) x.push_back(j == 7 ? std::nanf("") : u(rng));
  // vmax -127 gives iscale 1 (127: -1): the values are the rounding inputs
  for (float sign : {1.0f, -1.0f}) {
    for (int j = 0; j < 256; ++j)
      x.push_back(j == 0 ? -127.0f * sign : sign * ((j % 64) - 32 + 0.5f));
  }
  expect_every_isa_writes(&kernels::FormatKernels::quantize_q8_K, kernels::quantize_row_q8_K,
                          DType::Q8_K, x);
}

TEST(Dispatch, TablesCoverEveryWeightType) {
  for (Isa isa : available_isas()) {
    const kernels::FormatKernels& k = kernels::format_kernels(isa);
    EXPECT_EQ(k.isa, isa);
    for (DType t : kWeightTypes) {
      EXPECT_TRUE(kernels::weight_supported(t));
      EXPECT_NE(k.matvec_for(t), nullptr) << kernels::name(t);
      EXPECT_NE(k.gemm_q_for(t), nullptr) << kernels::name(t);
    }
    EXPECT_EQ(k.matvec_for(DType::Q8_K), nullptr);
  }
  EXPECT_FALSE(kernels::weight_supported(DType::Q8_K));
  EXPECT_FALSE(kernels::weight_supported(DType::I32));
  EXPECT_EQ(kernels::format_kernels().isa, kernels::selected_isa());
}

}  // namespace
}  // namespace oxi::test::formats
