// Mixed-radix FFT of real input (radix 2, 3, 4, 5 butterflies and a generic odd-prime one).
#pragma once

#include <complex>
#include <cstddef>
#include <span>
#include <vector>

namespace oxi::kernels {

// Complex out-of-place DFT of a fixed size, planned once: X[k] = sum_t x[t] e^{-2 pi i t k / n}.
class ComplexFft {
 public:
  explicit ComplexFft(size_t n);
  size_t size() const noexcept { return n_; }
  // `in` and `out` hold n values each and must not overlap.
  void forward(const std::complex<float>* in, std::complex<float>* out) const noexcept;

 private:
  void work(std::complex<float>* out, const std::complex<float>* in, size_t stride,
            size_t factor_index) const noexcept;

  size_t n_ = 0;
  std::vector<size_t> factors_;                // radices, in the order they are applied
  std::vector<std::complex<float>> twiddles_;  // e^{-2 pi i t / n}, t < n
  size_t max_generic_radix_ = 0;               // largest radix the generic butterfly handles
};

// DFT of n real samples: out[k] = sum_t in[t] e^{-2 pi i t k / n} for k <= n/2 (the rest is the
// conjugate mirror). Even n runs a complex FFT of n/2 points on the interleaved pairs and then
// splits the even and odd halves; odd n runs a complex FFT of n points.
// A plan is immutable after construction: forward() may run concurrently on one plan.
class RealFft {
 public:
  explicit RealFft(size_t n);
  size_t size() const noexcept { return n_; }
  // in: n samples; out: n/2 + 1 bins.
  void forward(std::span<const float> in, std::span<std::complex<float>> out) const noexcept;

 private:
  size_t n_ = 0;
  ComplexFft half_or_full_;                    // n/2 points when n is even, n when odd
  std::vector<std::complex<float>> split_tw_;  // e^{-2 pi i k / n}, k <= n/2 (even n only)
};

}  // namespace oxi::kernels
