#include "kernels/math/fft_double.h"

#include <cmath>
#include <numbers>

namespace oxi::kernels {

RealFftDouble::RealFftDouble(size_t n) : n_(n) {
  for (size_t rest = n; rest > 1;) {
    size_t p = rest % 4 == 0 ? 4 : rest % 2 == 0 ? 2 : 3;
    while (rest % p != 0) p += 2;  // the smallest odd prime factor
    factors_.push_back(p);
    rest /= p;
  }
  twiddles_.resize(n);
  for (size_t t = 0; t < n; ++t) {
    const double angle = -2.0 * std::numbers::pi * static_cast<double>(t) / static_cast<double>(n);
    twiddles_[t] = {std::cos(angle), std::sin(angle)};
  }
}

// The DFT of n_sub samples in[0], in[stride], ... into out[0 .. n_sub): the p sub-sequences
// in[j * stride + p * stride * t] are transformed recursively into consecutive blocks of m =
// n_sub / p values, then combined: X[q m + k] = sum_j Y_j[k] w^(j (q m + k)), w = e^{-2 pi i /
// n_sub}.
void RealFftDouble::transform(std::complex<double>* out, const double* in, size_t n_sub,
                              size_t stride, size_t factor_index) const {
  if (n_sub == 1) {
    out[0] = in[0];
    return;
  }
  const size_t p = factors_[factor_index], m = n_sub / p;
  for (size_t j = 0; j < p; ++j)
    transform(out + j * m, in + j * stride, m, stride * p, factor_index + 1);
  const size_t tw_step = n_ / n_sub;  // w^e = twiddles_[e * tw_step mod n]
  std::complex<double> y[64];
  std::vector<std::complex<double>> y_large(p > 64 ? p : 0);
  std::complex<double>* column = p > 64 ? y_large.data() : y;
  for (size_t k = 0; k < m; ++k) {
    for (size_t j = 0; j < p; ++j) column[j] = out[j * m + k];
    for (size_t q = 0; q < p; ++q) {
      const size_t index = q * m + k;
      std::complex<double> sum = column[0];
      for (size_t j = 1; j < p; ++j) sum += column[j] * twiddles_[(j * index % n_sub) * tw_step];
      out[index] = sum;
    }
  }
}

void RealFftDouble::forward(std::span<const double> in, std::span<std::complex<double>> out) const {
  if (n_ == 0) return;
  std::vector<std::complex<double>> full(n_);
  transform(full.data(), in.data(), n_, 1, 0);
  for (size_t k = 0; k <= n_ / 2; ++k) out[k] = full[k];
}

}  // namespace oxi::kernels
