#include "kernels/math/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/math/math_kernels.h"
#include "tests/common/test_data.h"
#include "tests/kernels/math/math_test_util.h"

namespace oxi::kernels {
namespace {

// IEEE half -> float, written independently of any kernel (subnormals included).
float half_to_float(uint16_t h) {
  const int sign = (h >> 15) & 1;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  double v;
  if (exponent == 0) {
    v = std::ldexp(mantissa, -24);
  } else if (exponent == 31) {
    v = mantissa ? NAN : INFINITY;
  } else {
    v = std::ldexp(1024 + mantissa, exponent - 25);
  }
  return static_cast<float>(sign ? -v : v);
}

void decode_f16_row(const void* src, float* dst, size_t n) noexcept {
  const auto* h = static_cast<const uint16_t*>(src);
  for (size_t i = 0; i < n; ++i) dst[i] = half_to_float(h[i]);
}

// A toy block format (like Q8_0 with a float scale): 32 int8 values times one scale, to check
// that GEMM hands the decoder whole blocks at the right byte offsets.
constexpr size_t kToyBlock = 32;
constexpr size_t kToyBlockBytes = sizeof(float) + kToyBlock;

void decode_toy_row(const void* src, float* dst, size_t n) noexcept {
  const auto* p = static_cast<const uint8_t*>(src);
  for (size_t b = 0; b < n / kToyBlock; ++b, p += kToyBlockBytes) {
    float scale;
    std::memcpy(&scale, p, sizeof scale);
    for (size_t i = 0; i < kToyBlock; ++i) {
      dst[b * kToyBlock + i] = scale * static_cast<int8_t>(p[sizeof(float) + i]);
    }
  }
}

// A weight matrix in some row format, with its exact f32 values for the reference.
struct Weights {
  std::vector<uint8_t> bytes;
  size_t row_bytes = 0;
  RowDecoder decode = nullptr;
  std::vector<float> values;  // n x k
};

Weights make_f32(size_t n, size_t k, uint32_t seed) {
  Weights w;
  w.values = test::random_floats(n * k, seed);
  w.row_bytes = k * sizeof(float);
  w.bytes.resize(n * w.row_bytes);
  std::memcpy(w.bytes.data(), w.values.data(), w.bytes.size());
  w.decode = &decode_f32_row;
  return w;
}

Weights make_f16(size_t n, size_t k, uint32_t seed) {
  // Random normal halves with magnitudes in [2^-10, 2): every pattern decodes exactly.
  std::mt19937 rng(seed);
  Weights w;
  w.row_bytes = k * 2;
  w.bytes.resize(n * w.row_bytes);
  w.values.resize(n * k);
  auto* h = reinterpret_cast<uint16_t*>(w.bytes.data());
  for (size_t i = 0; i < n * k; ++i) {
    const uint16_t bits =
        static_cast<uint16_t>(((rng() & 1) << 15) | ((5 + rng() % 11) << 10) | (rng() & 0x3ff));
    std::memcpy(h + i, &bits, 2);
    w.values[i] = half_to_float(bits);
  }
  w.decode = &decode_f16_row;
  return w;
}

Weights make_toy(size_t n, size_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  Weights w;
  w.row_bytes = k / kToyBlock * kToyBlockBytes;
  w.bytes.resize(n * w.row_bytes);
  w.values.resize(n * k);
  for (size_t j = 0; j < n; ++j) {
    for (size_t b = 0; b < k / kToyBlock; ++b) {
      uint8_t* p = w.bytes.data() + j * w.row_bytes + b * kToyBlockBytes;
      const float scale = 0.001f * static_cast<float>(1 + rng() % 100);
      std::memcpy(p, &scale, sizeof scale);
      for (size_t i = 0; i < kToyBlock; ++i) {
        const auto q = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
        p[sizeof(float) + i] = static_cast<uint8_t>(q);
        w.values[j * k + b * kToyBlock + i] = scale * q;
      }
    }
  }
  w.decode = &decode_toy_row;
  return w;
}

struct Case {
  size_t m, k, n, n_begin, n_end, ldx, ldy;
  bool bias;
};

void check_gemm(const MathKernels& mk, const Case& c, const Weights& w, uint32_t seed) {
  SCOPED_TRACE(testing::Message() << isa_name(mk.isa) << " m=" << c.m << " k=" << c.k
                                  << " n=" << c.n << " cols=[" << c.n_begin << "," << c.n_end
                                  << ") bias=" << c.bias);
  const std::vector<float> x = test::random_floats(c.m * c.ldx, seed);
  const std::vector<float> bias = test::random_floats(c.n, seed + 1);
  constexpr float kSentinel = 12345.0f;
  std::vector<float> y(c.m * c.ldy, kSentinel);
  std::vector<float> scratch(gemm_scratch_floats(c.m, c.k, c.n_end - c.n_begin));
  mk.gemm_f32(x.data(), c.ldx, c.m, c.k, w.bytes.data(), w.row_bytes, w.decode, c.n_begin, c.n_end,
              c.bias ? bias.data() : nullptr, y.data(), c.ldy, scratch);
  for (size_t i = 0; i < c.m; ++i) {
    for (size_t j = 0; j < c.ldy; ++j) {
      const float got = y[i * c.ldy + j];
      if (j < c.n_begin || j >= c.n_end) {
        ASSERT_EQ(got, kSentinel) << "wrote outside its columns at " << i << "," << j;
        continue;
      }
      double want = c.bias ? bias[j] : 0.0, magnitude = std::abs(want);
      for (size_t kk = 0; kk < c.k; ++kk) {
        const double p = static_cast<double>(x[i * c.ldx + kk]) * w.values[j * c.k + kk];
        want += p;
        magnitude += std::abs(p);
      }
      ASSERT_NEAR(got, want, 1e-5 * magnitude + 1e-30) << "at " << i << "," << j;
    }
  }
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {1, 1, 1, 0, 1, 1, 1, false},
      {1, 64, 33, 0, 33, 64, 33, true},
      {7, 13, 5, 0, 5, 13, 5, true},
      {6, 16, 16, 0, 16, 16, 16, false},
      {13, 300, 37, 0, 37, 301, 40, true},
      {73, 257, 530, 0, 530, 257, 530, true},    // crosses the Mc, Kc and Nc blocks
      {5, 600, 1100, 3, 1050, 610, 1100, true},  // a column range, padded strides
      {80, 520, 70, 17, 70, 520, 70, false},
  };
  return all;
}

TEST(Gemm, F32WeightsEveryIsa) {
  uint32_t seed = 1;
  for (Isa isa : test_util::available_isas()) {
    for (const Case& c : cases())
      check_gemm(math_kernels(isa), c, make_f32(c.n, c.k, seed), seed), ++seed;
  }
}

TEST(Gemm, F16WeightsEveryIsa) {
  uint32_t seed = 100;
  for (Isa isa : test_util::available_isas()) {
    for (const Case& c : cases())
      check_gemm(math_kernels(isa), c, make_f16(c.n, c.k, seed), seed), ++seed;
  }
}

TEST(Gemm, BlockFormatDecodedAtBlockOffsets) {
  uint32_t seed = 200;
  for (Isa isa : test_util::available_isas()) {
    for (const Case& c : {Case{9, 32 * 17, 45, 0, 45, 32 * 17, 45, true},
                          Case{70, 32 * 9, 20, 2, 19, 32 * 9, 20, false}}) {
      check_gemm(math_kernels(isa), c, make_toy(c.n, c.k, seed), seed);
      ++seed;
    }
  }
}

TEST(Gemm, ZeroDepthWritesBias) {
  for (Isa isa : test_util::available_isas()) {
    std::vector<float> y(6, -1.0f), bias = {1, 2, 3};
    std::vector<float> scratch(gemm_scratch_floats(2, 0, 3));
    math_kernels(isa).gemm_f32(nullptr, 0, 2, 0, nullptr, 0, &decode_f32_row, 0, 3, bias.data(),
                               y.data(), 3, scratch);
    EXPECT_EQ(y, (std::vector<float>{1, 2, 3, 1, 2, 3}));
  }
}

TEST(Gemm, MatvecMatchesNaive) {
  for (Isa isa : test_util::available_isas()) {
    for (size_t k : {1, 7, 64, 333}) {
      const size_t n = 19, ldw = k + 3;
      const auto w = test::random_floats(n * ldw, 5), x = test::random_floats(k, 6);
      const auto bias = test::random_floats(n, 7);
      std::vector<float> y(n);
      math_kernels(isa).matvec_f32(w, ldw, x, bias, y);
      for (size_t j = 0; j < n; ++j) {
        double want = bias[j], mag = std::abs(want);
        for (size_t i = 0; i < k; ++i) {
          want += static_cast<double>(w[j * ldw + i]) * x[i];
          mag += std::abs(static_cast<double>(w[j * ldw + i]) * x[i]);
        }
        ASSERT_NEAR(y[j], want, 1e-5 * mag) << isa_name(isa) << " k=" << k << " j=" << j;
      }
    }
  }
}

}  // namespace
}  // namespace oxi::kernels

namespace oxi::kernels {
namespace {

TEST(MathKernels, TablesMatchTheirIsa) {
  // Every table the tests loop over is the one compiled for that set, not a scalar fallback.
  for (Isa isa : test_util::available_isas()) {
    EXPECT_EQ(math_kernels(isa).isa, isa);
    std::printf("math kernels tested for %s\n", test_util::isa_label(isa).c_str());
  }
  EXPECT_EQ(math_kernels().isa, selected_isa());
}

}  // namespace
}  // namespace oxi::kernels
