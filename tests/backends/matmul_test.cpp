// Backend::matmul against a naive double-precision product, for float and quantized weights,
// and bit-identical results across thread counts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/quant.h"
#include "lib/core/error.h"
#include "tests/common/test_data.h"

namespace oxi::backends {
namespace {

using kernels::DType;

// A weight matrix the test owns, with the exact float value of every stored weight.
struct TestWeights {
  DType dtype;
  size_t rows, cols, row_bytes;
  std::vector<uint8_t> bytes;
  std::vector<double> values;  // rows x cols, what the stored weights decode to
  WeightMatrix view() const { return {dtype, bytes.data(), rows, cols, row_bytes}; }
};

// IEEE half -> double, written out independently of kernels/formats/fp16.h.
double half_to_double(uint16_t h) {
  const int sign = (h >> 15) ? -1 : 1;
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(1024 + mant, exp - 25);
}

// Round to nearest even f16 for finite values in range (the test data stays within +-4).
uint16_t double_to_half(double v) {
  const uint16_t sign = v < 0 ? 0x8000 : 0;
  v = std::fabs(v);
  if (v < std::ldexp(1.0, -14))
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(v, 24)));
  int e = 0;
  std::frexp(v, &e);                                    // v = f * 2^e, f in [0.5, 1)
  double mant = std::nearbyint(std::ldexp(v, 11 - e));  // 1024..2048
  if (mant == 2048) {
    mant = 1024;
    ++e;
  }
  return sign | static_cast<uint16_t>(((e + 14) << 10) | (static_cast<int>(mant) - 1024));
}

TestWeights make_float_weights(DType dtype, size_t rows, size_t cols, uint32_t seed) {
  const std::vector<float> src = test::random_floats(rows * cols, seed);
  TestWeights w{dtype, rows, cols, 0, {}, std::vector<double>(rows * cols)};
  const size_t elem = dtype == DType::F32 ? 4 : 2;
  w.row_bytes = cols * elem + 8;  // padded rows: row_bytes is a stride, not the dense size
  w.bytes.assign(rows * w.row_bytes, 0xAB);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) {
      uint8_t* dst = w.bytes.data() + r * w.row_bytes + c * elem;
      const float v = src[r * cols + c];
      if (dtype == DType::F32) {
        std::memcpy(dst, &v, 4);
        w.values[r * cols + c] = v;
      } else if (dtype == DType::F16) {
        const uint16_t h = double_to_half(v);
        std::memcpy(dst, &h, 2);
        w.values[r * cols + c] = half_to_double(h);
      } else {  // BF16: the top half of the f32 bits (truncation is as good as any rounding here)
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        const uint16_t b = static_cast<uint16_t>(bits >> 16);
        std::memcpy(dst, &b, 2);
        const uint32_t back = static_cast<uint32_t>(b) << 16;
        float f;
        std::memcpy(&f, &back, 4);
        w.values[r * cols + c] = f;
      }
    }
  return w;
}

// Quantized weights from kernels::quantize_row; their exact values from dequantize_row (which
// the formats tests check bit-exact against the ggml rules).
// q4_K_r8s (rows in sets, no row encoder) is made as q4_K and repacked.
TestWeights make_quant_weights(DType dtype, size_t rows, size_t cols, uint32_t seed) {
  const DType source = dtype == DType::Q4_K_R8S ? DType::Q4_K : dtype;
  const std::vector<float> src = test::random_normal(rows * cols, seed);
  TestWeights w{dtype, rows, cols, kernels::row_bytes(dtype, cols), {}, {}};
  w.bytes.resize(rows * w.row_bytes);
  w.values.resize(rows * cols);
  std::vector<float> row(cols);
  for (size_t r = 0; r < rows; ++r) {
    kernels::quantize_row(source, src.data() + r * cols, w.bytes.data() + r * w.row_bytes, cols);
    kernels::dequantize_row(source, w.bytes.data() + r * w.row_bytes, row.data(), cols);
    for (size_t c = 0; c < cols; ++c) w.values[r * cols + c] = row[c];
  }
  if (source != dtype) {
    const std::vector<uint8_t> plain = w.bytes;
    EXPECT_TRUE(kernels::repack_rows(source, dtype, plain.data(), w.bytes.data(), rows, cols));
  }
  return w;
}

struct Reference {
  std::vector<double> y;      // m x rows
  std::vector<double> bound;  // allowed |error| of each element
};

// Naive double product. The bound has two parts:
//  - float accumulation: 4 * K * 2^-24 * sum_k |x_k w_k| (the classic gamma_K bound, doubled);
//  - for quantized weights, the activation rounding: each activation block of B values is
//    stored as q * d with d = amax / 127 (an f16 d for q8_0 / q8_1 adds 127 * d * 2^-11), so
//    |x_k - q_k d| <= 0.6 d, and the product errs by at most 0.6 d * sum over the block |w_k|;
//  - q8_1 (for q4_1 / q5_1) also stores s = d * sum(q) as f16, which the weight's min m
//    multiplies: 2^-11 * sum|x| * |m|, and |m| <= max|w| of the block (its smallest value
//    quantizes to q = 0, so it decodes to m itself).
Reference reference(const TestWeights& w, const std::vector<float>& x, size_t m,
                    const std::vector<float>& bias) {
  const bool quantized = kernels::info(w.dtype).quantized;
  const DType act = kernels::activation_dtype(w.dtype);
  const size_t block = quantized ? kernels::info(act).block_elems : 1;
  Reference ref{std::vector<double>(m * w.rows), std::vector<double>(m * w.rows)};
  for (size_t i = 0; i < m; ++i)
    for (size_t n = 0; n < w.rows; ++n) {
      double sum = bias.empty() ? 0.0 : bias[n],
             magnitude = bias.empty() ? 0.0 : std::fabs(bias[n]);
      double quant_error = 0.0;
      for (size_t k0 = 0; k0 < w.cols; k0 += block) {
        double amax = 0.0, w_abs = 0.0, w_max = 0.0, x_abs = 0.0;
        for (size_t k = k0; k < std::min(w.cols, k0 + block); ++k) {
          const double xv = x[i * w.cols + k], wv = w.values[n * w.cols + k];
          sum += xv * wv;
          magnitude += std::fabs(xv * wv);
          amax = std::max(amax, std::fabs(xv));
          w_abs += std::fabs(wv);
          w_max = std::max(w_max, std::fabs(wv));
          x_abs += std::fabs(xv);
        }
        if (quantized) quant_error += 0.6 * amax / 127.0 * w_abs;
        if (act == DType::Q8_1) quant_error += 0x1p-11 * 1.01 * x_abs * w_max;
      }
      ref.y[i * w.rows + n] = sum;
      ref.bound[i * w.rows + n] = 4.0 * w.cols * 0x1p-24 * magnitude + quant_error + 1e-6;
    }
  return ref;
}

void expect_matches(Backend& backend, const TestWeights& w, size_t m, bool with_bias,
                    uint32_t seed) {
  const std::vector<float> x = test::random_floats(m * w.cols, seed);
  const std::vector<float> bias =
      with_bias ? test::random_floats(w.rows, seed + 1) : std::vector<float>{};
  std::vector<float> y(m * w.rows, NAN);
  backend.matmul(w.view(), x, m, y, with_bias ? bias.data() : nullptr);
  const Reference ref = reference(w, x, m, bias);
  size_t failures = 0;
  for (size_t i = 0; i < y.size() && failures < 5; ++i) {
    const double err = std::fabs(y[i] - ref.y[i]);
    if (!(err <= ref.bound[i])) {
      ++failures;
      ADD_FAILURE() << kernels::name(w.dtype) << " m=" << m << " N=" << w.rows << " K=" << w.cols
                    << " element " << i << ": got " << y[i] << ", want " << ref.y[i] << " (error "
                    << err << " > bound " << ref.bound[i] << ")";
    }
  }
}

TEST(CpuMatmul, FloatWeightsMatchNaiveDouble) {
  const auto backend = make_cpu_backend(2);
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    SCOPED_TRACE(std::string(kernels::name(dtype)));
    const TestWeights w = make_float_weights(dtype, 257, 131, 11);  // odd N and K
    for (size_t m : {1, 3, 37}) {
      expect_matches(*backend, w, m, false, 100 + static_cast<uint32_t>(m));
      expect_matches(*backend, w, m, true, 200 + static_cast<uint32_t>(m));
    }
  }
}

TEST(CpuMatmul, FloatWeightsAcrossTiles) {
  // More tokens and rows than one GEMM tile holds, so tile edges are exercised.
  const auto backend = make_cpu_backend(2);
  const TestWeights w = make_float_weights(DType::F16, 301, 67, 12);
  expect_matches(*backend, w, 150, true, 300);
}

TEST(CpuMatmul, QuantizedWeightsMatchNaiveDouble) {
  const auto backend = make_cpu_backend(2);
  for (DType dtype : {DType::Q4_0, DType::Q4_1, DType::Q8_0, DType::Q4_K, DType::Q6_K,
                      DType::IQ4_NL, DType::IQ4_XS, DType::TQ1_0, DType::TQ2_0}) {
    SCOPED_TRACE(std::string(kernels::name(dtype)));
    const size_t cols = kernels::info(dtype).block_elems == 256 ? 512 : 96;
    const TestWeights w = make_quant_weights(dtype, 67, cols, 21);  // odd N
    for (size_t m : {1, 37})
      expect_matches(*backend, w, m, m == 37, 400 + static_cast<uint32_t>(m));
  }
}

// Weights repacked (Q4_0 -> Q4_0_R16, IQ4_NL -> IQ4_NL_R16, Q5_0 / Q5_1 -> Q5_0_R16 / Q5_1_R16,
// Q4_1 -> Q4_1_R16, Q8_0 -> Q8_0_R16, Q4_K -> Q4_K_R8 / Q4_K_R8S: the layouts decode uses on AVX2;
// Q2_K -> Q2_K_R8, Q3_K -> Q3_K_R8; Q5_K -> Q5_K_R8 on avx512;
// q4_K_r8s in sets of up to 8 rows, so 72 rows there, else 67): the naive double bound as for the
// plain type, and the plain matmul's result within 1e-5 of the products' magnitude (same integers,
// another f32 summation order), for one token (matvec) and several (gemm_q).
void expect_repacked_matches_plain(DType plain_type, DType packed_type) {
  const auto backend = make_cpu_backend(2);
  // whole groups and a tail, a tail only, groups and a longer tail (16 blocks a group; 8 of 256
  // for q4_K_r8)
  const std::vector<size_t> widths =
      kernels::info(plain_type).block_elems == 256
          ? std::vector<size_t>{256 * 9, 256 * 3, 256 * 22}
          : std::vector<size_t>{32 * 17, 32 * 3, 32 * 16 * 5 + 32 * 7};
  for (size_t cols : widths) {
    SCOPED_TRACE("K=" + std::to_string(cols));
    const size_t rows = kernels::row_granule(packed_type, cols) > 1 ? 72 : 67;
    const TestWeights plain = make_quant_weights(plain_type, rows, cols, 23);
    TestWeights packed = plain;
    packed.dtype = packed_type;
    ASSERT_TRUE(kernels::repack_rows(plain_type, packed_type, plain.bytes.data(),
                                     packed.bytes.data(), rows, cols));
    for (size_t m : {1, 3, 37}) {
      expect_matches(*backend, packed, m, m == 37, 500 + static_cast<uint32_t>(m));
      const std::vector<float> x = test::random_floats(m * cols, 600 + static_cast<uint32_t>(m));
      std::vector<float> y_plain(m * plain.rows), y_packed(m * plain.rows);
      backend->matmul(plain.view(), x, m, y_plain);
      backend->matmul(packed.view(), x, m, y_packed);
      for (size_t i = 0; i < m; ++i)
        for (size_t n = 0; n < plain.rows; ++n) {
          double magnitude = 0;
          for (size_t k = 0; k < cols; ++k)
            magnitude += std::fabs(x[i * cols + k] * plain.values[n * cols + k]);
          ASSERT_NEAR(y_packed[i * plain.rows + n], y_plain[i * plain.rows + n], 1e-5 * magnitude)
              << "m=" << m << " token " << i << " row " << n;
        }
    }
  }
}

TEST(CpuMatmul, RepackedQ4_0MatchesPlainQ4_0) {
  expect_repacked_matches_plain(DType::Q4_0, DType::Q4_0_R16);
}

TEST(CpuMatmul, RepackedIQ4_NLMatchesPlainIQ4_NL) {
  expect_repacked_matches_plain(DType::IQ4_NL, DType::IQ4_NL_R16);
}

TEST(CpuMatmul, RepackedQ5_0MatchesPlainQ5_0) {
  expect_repacked_matches_plain(DType::Q5_0, DType::Q5_0_R16);
}

TEST(CpuMatmul, RepackedQ5_1MatchesPlainQ5_1) {
  expect_repacked_matches_plain(DType::Q5_1, DType::Q5_1_R16);
}

TEST(CpuMatmul, RepackedQ4_1MatchesPlainQ4_1) {
  expect_repacked_matches_plain(DType::Q4_1, DType::Q4_1_R16);
}

TEST(CpuMatmul, RepackedQ8_0MatchesPlainQ8_0) {
  expect_repacked_matches_plain(DType::Q8_0, DType::Q8_0_R16);
}

TEST(CpuMatmul, RepackedQ5_KMatchesPlainQ5_K) {
  expect_repacked_matches_plain(DType::Q5_K, DType::Q5_K_R8);
}

TEST(CpuMatmul, RepackedQ3_KMatchesPlainQ3_K) {
  expect_repacked_matches_plain(DType::Q3_K, DType::Q3_K_R8);
}

TEST(CpuMatmul, RepackedQ2_KMatchesPlainQ2_K) {
  expect_repacked_matches_plain(DType::Q2_K, DType::Q2_K_R8);
}

TEST(CpuMatmul, RepackedQ4_KMatchesPlainQ4_K) {
  expect_repacked_matches_plain(DType::Q4_K, DType::Q4_K_R8);
  expect_repacked_matches_plain(DType::Q4_K, DType::Q4_K_R8S);
}

// q4_K_r8s takes whole sets of rows: a count that does not fill them is an error, not a product
// of the rows it happens to cover.
// A few tokens (decode steps of conversations batched together, llm::EvalBatcher) on the r16
// layouts, whichever path takes them (the one-token matvec token after token up to 3, the gemm
// tiles beyond): each token's outputs are the bits it gets alone, so batched conversations get
// exactly their own logits.
TEST(CpuMatmul, FewTokensOnR16LayoutsGiveEachTokensOwnBits) {
  const auto backend = make_cpu_backend(2);
  const std::vector<std::pair<DType, DType>> layouts = {
      {DType::Q4_0, DType::Q4_0_R16},     {DType::Q8_0, DType::Q8_0_R16},
      {DType::IQ4_NL, DType::IQ4_NL_R16}, {DType::Q5_0, DType::Q5_0_R16},
      {DType::Q5_1, DType::Q5_1_R16},     {DType::Q4_1, DType::Q4_1_R16}};
  for (const auto& [plain_type, packed_type] : layouts) {
    SCOPED_TRACE(std::string(kernels::name(packed_type)));
    const size_t rows = 67, cols = 32 * 16 * 5 + 32 * 7;
    const TestWeights plain = make_quant_weights(plain_type, rows, cols, 29);
    TestWeights packed = plain;
    packed.dtype = packed_type;
    ASSERT_TRUE(kernels::repack_rows(plain_type, packed_type, plain.bytes.data(),
                                     packed.bytes.data(), rows, cols));
    for (size_t m : {2, 3, 4, 5}) {
      const std::vector<float> x = test::random_floats(m * cols, 700 + static_cast<uint32_t>(m));
      std::vector<float> y(m * rows);
      backend->matmul(packed.view(), x, m, y);
      for (size_t t = 0; t < m; ++t) {
        std::vector<float> alone(rows);
        backend->matmul(packed.view(), std::span(x).subspan(t * cols, cols), 1, alone);
        ASSERT_EQ(std::memcmp(alone.data(), y.data() + t * rows, rows * sizeof(float)), 0)
            << "m=" << m << " token " << t;
      }
    }
  }
}

TEST(CpuMatmul, RowSetsMustBeWhole) {
  const auto backend = make_cpu_backend(2);
  TestWeights w = make_quant_weights(DType::Q4_K_R8S, 8, 256 * 9, 5);
  w.rows = 7;
  const std::vector<float> x(w.cols, 1.0f);
  std::vector<float> y(8);
  EXPECT_THROW(backend->matmul(w.view(), x, 1, y), Error);
}

// Every path, run with 1, 2 and 3 threads: the results must agree bit for bit.
TEST(CpuMatmul, BitIdenticalAcrossThreadCounts) {
  struct Case {
    DType dtype;
    size_t rows, cols, m;
  };
  const Case cases[] = {
      {DType::F32, 515, 131, 1},        {DType::F16, 515, 131, 3},
      {DType::F16, 300, 131, 150},      {DType::Q4_0, 301, 128, 1},
      {DType::Q4_0, 301, 128, 70},      {DType::Q4_K, 131, 256, 37},
      {DType::Q4_0_R16, 301, 608, 1},   {DType::Q4_0_R16, 301, 512, 70},  // groups (+ a tail)
      {DType::Q8_0_R16, 301, 608, 1},   {DType::Q8_0_R16, 301, 512, 70},
      {DType::IQ4_NL_R16, 301, 608, 1}, {DType::IQ4_NL_R16, 301, 512, 70},
      {DType::Q5_0_R16, 301, 608, 1},   {DType::Q5_0_R16, 301, 512, 70},
      {DType::Q5_1_R16, 301, 608, 1},   {DType::Q5_1_R16, 301, 512, 70},
      {DType::Q4_1_R16, 301, 608, 1},   {DType::Q4_1_R16, 301, 512, 70},
      {DType::Q4_K_R8, 131, 2304, 1},   {DType::Q4_K_R8, 131, 2048, 37},
      {DType::Q5_K_R8, 136, 2304, 1},   {DType::Q5_K_R8, 136, 2048, 1},  // (8-row batches)
      {DType::Q5_K_R8, 131, 2048, 37},
      {DType::Q3_K_R8, 136, 2304, 1},   {DType::Q3_K_R8, 136, 2048, 1},  // (8-row batches)
      {DType::Q3_K_R8, 131, 2048, 37},
      {DType::Q2_K_R8, 136, 2048, 1},   {DType::Q2_K_R8, 131, 2304, 37},
      {DType::Q4_K_R8S, 132, 5632, 1},  {DType::Q4_K_R8S, 136, 2304, 37},  // sets of 4 / 8 rows
  };
  std::vector<std::unique_ptr<Backend>> backends;
  for (int threads : {1, 2, 3}) backends.push_back(make_cpu_backend(threads));
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(kernels::name(c.dtype)) + " m=" + std::to_string(c.m));
    const TestWeights w = kernels::info(c.dtype).quantized
                              ? make_quant_weights(c.dtype, c.rows, c.cols, 31)
                              : make_float_weights(c.dtype, c.rows, c.cols, 31);
    const std::vector<float> x = test::random_floats(c.m * c.cols, 32);
    const std::vector<float> bias = test::random_floats(c.rows, 33);
    std::vector<std::vector<float>> results;
    for (auto& backend : backends) {
      std::vector<float> y(c.m * c.rows);
      backend->matmul(w.view(), x, c.m, y, bias.data());
      results.push_back(std::move(y));
    }
    for (size_t i = 1; i < results.size(); ++i)
      EXPECT_EQ(0, std::memcmp(results[0].data(), results[i].data(), results[0].size() * 4))
          << "threads 1 vs " << backends[i]->threads();
  }
}

// matmul_shared_input (the q/k/v and gate/up projections of a decode step) against one matmul
// per product, bit for bit: products of one weight type share their prepared input, others
// (a float matrix, another quantized type) get their own; with biases; one token (one parallel
// region over all products' rows) and several (one product at a time); 1 to 3 threads.
TEST(CpuMatmul, SharedInputProductsEqualSeparateMatmuls) {
  const size_t cols = 512;
  const TestWeights ws[] = {
      make_quant_weights(DType::Q4_K, 67, cols, 41), make_quant_weights(DType::Q6_K, 33, cols, 42),
      make_quant_weights(DType::Q4_K, 301, cols, 43), make_float_weights(DType::F16, 20, cols, 44),
      make_quant_weights(DType::Q8_0, 5, cols, 45)};
  const std::vector<float> bias = test::random_floats(301, 46);
  for (int threads : {1, 2, 3}) {
    const auto backend = make_cpu_backend(threads);
    for (size_t m : {1, 3}) {
      SCOPED_TRACE("threads " + std::to_string(threads) + " m=" + std::to_string(m));
      const std::vector<float> x = test::random_floats(m * cols, 47 + static_cast<uint32_t>(m));
      std::vector<WeightMatrix> views;
      std::vector<std::vector<float>> shared, separate;
      for (const TestWeights& w : ws) {
        views.push_back(w.view());
        shared.emplace_back(m * w.rows, -1.0f);
        separate.emplace_back(m * w.rows, -2.0f);
      }
      std::vector<Backend::SharedInputProduct> products;
      for (size_t i = 0; i < views.size(); ++i) {
        const float* b = i % 2 == 0 ? bias.data() : nullptr;
        products.push_back({&views[i], shared[i], b});
        backend->matmul(views[i], x, m, separate[i], b);
      }
      backend->matmul_shared_input(x, m, products);
      for (size_t i = 0; i < views.size(); ++i)
        EXPECT_EQ(shared[i], separate[i]) << "product " << i << " " << kernels::name(ws[i].dtype);
    }
  }
}

TEST(CpuMatmul, RejectsBadShapes) {
  const auto backend = make_cpu_backend(1);
  const TestWeights w = make_float_weights(DType::F32, 4, 8, 1);
  std::vector<float> x(2 * 8), y(2 * 4);
  EXPECT_THROW(backend->matmul(w.view(), std::span(x).first(15), 2, y), Error);
  EXPECT_THROW(backend->matmul(w.view(), x, 2, std::span(y).first(7)), Error);
  WeightMatrix q{DType::Q4_0, w.bytes.data(), 4, 33, 18 * 2};  // 33 is not a multiple of 32
  EXPECT_THROW(backend->matmul(q, x, 1, y), Error);
}

}  // namespace
}  // namespace oxi::backends
