#include "kernels/math/fft.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <thread>
#include <vector>

#include "tests/common/test_data.h"

namespace oxi::kernels {
namespace {

std::vector<std::complex<double>> naive_dft(const std::vector<float>& x) {
  const size_t n = x.size();
  std::vector<std::complex<double>> out(n / 2 + 1);
  for (size_t k = 0; k <= n / 2; ++k) {
    std::complex<double> acc = 0;
    for (size_t t = 0; t < n; ++t) {
      // (t * k) mod n keeps the angle small and exact.
      const double a = -2.0 * std::numbers::pi * static_cast<double>((t * k) % n) / n;
      acc += static_cast<double>(x[t]) * std::complex<double>(std::cos(a), std::sin(a));
    }
    out[k] = acc;
  }
  return out;
}

void expect_matches_naive(size_t n, uint32_t seed) {
  const std::vector<float> x = test::random_floats(n, seed);
  const RealFft fft(n);
  ASSERT_EQ(fft.size(), n);
  std::vector<std::complex<float>> got(n / 2 + 1);
  fft.forward(x, got);
  const auto want = naive_dft(x);
  // Float FFT error grows like log(n) * eps * ||x||; ||x|| <= sqrt(n) for |x| <= 1.
  const double tol = 2e-6 * std::sqrt(static_cast<double>(n)) * (1 + std::log2(n + 1.0));
  for (size_t k = 0; k <= n / 2; ++k) {
    ASSERT_NEAR(got[k].real(), want[k].real(), tol) << "n=" << n << " k=" << k;
    ASSERT_NEAR(got[k].imag(), want[k].imag(), tol) << "n=" << n << " k=" << k;
  }
}

TEST(RealFft, MatchesNaiveDft) {
  for (size_t n : {1,  2,  3,  4,  5,   6,   7,   8,   9,    12,   15,   16,
                   25, 30, 49, 97, 100, 200, 400, 512, 1000, 1024, 1155, 2 * 97 * 3}) {
    expect_matches_naive(n, static_cast<uint32_t>(n));
  }
}

TEST(RealFft, WhisperFrameOfOnesIsDc) {
  const RealFft fft(400);
  std::vector<float> x(400, 1.0f);
  std::vector<std::complex<float>> out(201);
  fft.forward(x, out);
  EXPECT_NEAR(out[0].real(), 400.0f, 1e-3f);
  for (size_t k = 1; k <= 200; ++k) EXPECT_NEAR(std::abs(out[k]), 0.0f, 1e-3f) << k;
}

TEST(RealFft, ConcurrentCallsOnOnePlan) {
  // Odd size with a prime radix exercises every per-thread scratch buffer.
  for (size_t n : {400, 97 * 3}) {
    const RealFft fft(n);
    const std::vector<float> x = test::random_floats(n, 7);
    std::vector<std::complex<float>> want(n / 2 + 1);
    fft.forward(x, want);
    std::vector<std::vector<std::complex<float>>> got(4, want);
    std::vector<std::thread> threads;
    for (auto& g : got) {
      threads.emplace_back([&] {
        for (int r = 0; r < 200; ++r) fft.forward(x, g);
      });
    }
    for (auto& t : threads) t.join();
    for (const auto& g : got) EXPECT_EQ(g, want);
  }
}

}  // namespace
}  // namespace oxi::kernels
