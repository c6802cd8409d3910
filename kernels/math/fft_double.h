// A plain double-precision FFT of real input, for features that must match a float64
// reference to 1e-5 (Whisper's log-mel): the float FFT of fft.h is accurate to ~4e-7 of a
// frame's norm, which is not enough for bands 60 dB under a frame's peak.
//
// Mixed radix by recursive decimation in time: n = p1 * p2 * ... (radix 4 and 2 first, then odd
// primes), each stage a generic O(p^2) butterfly. Scalar code, any n.
#pragma once

#include <complex>
#include <cstddef>
#include <span>
#include <vector>

namespace oxi::kernels {

// X[k] = sum_t x[t] e^{-2 pi i t k / n} for k <= n/2, from n real samples. Immutable after
// construction: forward() may run concurrently on one plan.
class RealFftDouble {
 public:
  explicit RealFftDouble(size_t n);
  size_t size() const noexcept { return n_; }
  // in: n samples; out: n/2 + 1 bins. Allocates a work buffer of n complex values per call.
  void forward(std::span<const double> in, std::span<std::complex<double>> out) const;

 private:
  void transform(std::complex<double>* out, const double* in, size_t n_sub, size_t stride,
                 size_t factor_index) const;

  size_t n_ = 0;
  std::vector<size_t> factors_;                 // radices, outermost stage first
  std::vector<std::complex<double>> twiddles_;  // e^{-2 pi i t / n}, t < n
};

}  // namespace oxi::kernels
