#include "kernels/math/fft.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace oxi::kernels {
namespace {

using cf = std::complex<float>;

// Multiplies by -i (a forward quarter turn) without a complex multiply.
inline cf mul_neg_i(cf z) noexcept {
  return {z.imag(), -z.real()};
}

std::vector<size_t> factorize(size_t n) {
  // Radix 4 first (fewest passes), then 2, 3, 5, then any odd factor left over, prime by
  // prime; the generic butterfly handles those in O(p^2) per group.
  std::vector<size_t> f;
  while (n % 4 == 0) f.push_back(4), n /= 4;
  while (n % 2 == 0) f.push_back(2), n /= 2;
  for (size_t p = 3; p * p <= n; p += 2) {
    while (n % p == 0) f.push_back(p), n /= p;
  }
  if (n > 1) f.push_back(n);
  return f;
}

std::vector<cf> unit_roots(size_t count, size_t n) {
  // Computed in double so float twiddles carry no accumulated error.
  std::vector<cf> w(count);
  for (size_t t = 0; t < count; ++t) {
    const double angle = -2.0 * std::numbers::pi * static_cast<double>(t) / static_cast<double>(n);
    w[t] = cf(static_cast<float>(std::cos(angle)), static_cast<float>(std::sin(angle)));
  }
  return w;
}

void butterfly2(cf* out, const cf* tw, size_t fstride, size_t m) noexcept {
  for (size_t u = 0; u < m; ++u) {
    const cf t = out[u + m] * tw[u * fstride];
    out[u + m] = out[u] - t;
    out[u] += t;
  }
}

void butterfly3(cf* out, const cf* tw, size_t fstride, size_t m) noexcept {
  constexpr float kHalfSqrt3 = 0.86602540378443864676f;  // sin(2 pi / 3)
  for (size_t u = 0; u < m; ++u) {
    const cf s1 = out[u + m] * tw[u * fstride];
    const cf s2 = out[u + 2 * m] * tw[2 * u * fstride];
    const cf sum = s1 + s2;
    const cf rot = mul_neg_i(s1 - s2) * kHalfSqrt3;
    const cf mid = out[u] - 0.5f * sum;
    out[u] += sum;
    out[u + m] = mid + rot;
    out[u + 2 * m] = mid - rot;
  }
}

void butterfly4(cf* out, const cf* tw, size_t fstride, size_t m) noexcept {
  for (size_t u = 0; u < m; ++u) {
    const cf s0 = out[u + m] * tw[u * fstride];
    const cf s1 = out[u + 2 * m] * tw[2 * u * fstride];
    const cf s2 = out[u + 3 * m] * tw[3 * u * fstride];
    const cf a = out[u] + s1, b = out[u] - s1;
    const cf c = s0 + s2, d = mul_neg_i(s0 - s2);
    out[u] = a + c;
    out[u + 2 * m] = a - c;
    out[u + m] = b + d;
    out[u + 3 * m] = b - d;
  }
}

void butterfly5(cf* out, const cf* tw, size_t fstride, size_t m) noexcept {
  const float c1 = static_cast<float>(std::cos(2.0 * std::numbers::pi / 5));
  const float c2 = static_cast<float>(std::cos(4.0 * std::numbers::pi / 5));
  const float s1 = static_cast<float>(std::sin(2.0 * std::numbers::pi / 5));
  const float s2 = static_cast<float>(std::sin(4.0 * std::numbers::pi / 5));
  for (size_t u = 0; u < m; ++u) {
    const cf x0 = out[u];
    const cf x1 = out[u + m] * tw[u * fstride];
    const cf x2 = out[u + 2 * m] * tw[2 * u * fstride];
    const cf x3 = out[u + 3 * m] * tw[3 * u * fstride];
    const cf x4 = out[u + 4 * m] * tw[4 * u * fstride];
    const cf a1 = x1 + x4, b1 = x1 - x4, a2 = x2 + x3, b2 = x2 - x3;
    const cf r1 = x0 + c1 * a1 + c2 * a2, r2 = x0 + c2 * a1 + c1 * a2;
    const cf i1 = mul_neg_i(s1 * b1 + s2 * b2), i2 = mul_neg_i(s2 * b1 - s1 * b2);
    out[u] = x0 + a1 + a2;
    out[u + m] = r1 + i1;
    out[u + 4 * m] = r1 - i1;
    out[u + 2 * m] = r2 + i2;
    out[u + 3 * m] = r2 - i2;
  }
}

// Any radix p: a direct p-point DFT of the twiddled inputs for each of the m groups.
void butterfly_generic(cf* out, const cf* tw, size_t n, size_t fstride, size_t p, size_t m,
                       cf* scratch) noexcept {
  const size_t root_step = fstride * m;  // W_p = W_n^(n/p)
  for (size_t u = 0; u < m; ++u) {
    for (size_t q = 0; q < p; ++q) scratch[q] = out[u + q * m] * tw[q * u * fstride];
    for (size_t k = 0; k < p; ++k) {
      std::complex<double> acc = scratch[0];
      size_t idx = 0;  // (q * k) mod p, stepped instead of multiplied
      for (size_t q = 1; q < p; ++q) {
        idx += k;
        if (idx >= p) idx -= p;
        acc += std::complex<double>(scratch[q]) * std::complex<double>(tw[idx * root_step]);
      }
      out[u + k * m] = cf(acc);
    }
  }
  (void)n;
}

}  // namespace

ComplexFft::ComplexFft(size_t n) : n_(n), factors_(factorize(n)), twiddles_(unit_roots(n, n)) {
  for (size_t p : factors_) {
    if (p > 5) max_generic_radix_ = std::max(max_generic_radix_, p);
  }
}

void ComplexFft::work(cf* out, const cf* in, size_t fstride, size_t fi) const noexcept {
  const size_t p = factors_[fi];
  const size_t m = n_ / (fstride * p);  // points per sub-transform
  if (m == 1) {
    for (size_t j = 0; j < p; ++j) out[j] = in[j * fstride];
  } else {
    // Decimation in time: sub-transform j takes every p-th sample starting at j.
    for (size_t j = 0; j < p; ++j) work(out + j * m, in + j * fstride, fstride * p, fi + 1);
  }
  const cf* tw = twiddles_.data();
  switch (p) {
    case 2:
      butterfly2(out, tw, fstride, m);
      break;
    case 3:
      butterfly3(out, tw, fstride, m);
      break;
    case 4:
      butterfly4(out, tw, fstride, m);
      break;
    case 5:
      butterfly5(out, tw, fstride, m);
      break;
    default: {
      // One buffer per thread so concurrent calls on a shared plan never race.
      thread_local std::vector<cf> scratch;
      if (scratch.size() < p) scratch.resize(p);
      butterfly_generic(out, tw, n_, fstride, p, m, scratch.data());
    }
  }
}

void ComplexFft::forward(const cf* in, cf* out) const noexcept {
  if (n_ == 0) return;
  if (n_ == 1) {
    out[0] = in[0];
    return;
  }
  work(out, in, 1, 0);
}

RealFft::RealFft(size_t n)
    : n_(n),
      half_or_full_(n % 2 == 0 ? n / 2 : n),
      split_tw_(n % 2 == 0 ? unit_roots(n / 2 + 1, n) : std::vector<cf>{}) {}

void RealFft::forward(std::span<const float> in, std::span<cf> out) const noexcept {
  if (n_ == 0) return;
  if (n_ % 2 == 1) {
    thread_local std::vector<cf> buf;
    buf.resize(2 * n_);
    cf* complex_in = buf.data();
    cf* complex_out = buf.data() + n_;
    for (size_t t = 0; t < n_; ++t) complex_in[t] = cf(in[t], 0.0f);
    half_or_full_.forward(complex_in, complex_out);
    for (size_t k = 0; k <= n_ / 2; ++k) out[k] = complex_out[k];
    return;
  }
  // Even n: z[t] = x[2t] + i x[2t+1] is read in place (std::complex<float> is two floats).
  const size_t h = n_ / 2;
  const auto* z = reinterpret_cast<const cf*>(in.data());
  half_or_full_.forward(z, out.data());  // Z[0..h) lands in out[0..h)
  // X[k] = E[k] + W^k O[k], E[k] = (Z[k] + conj Z[h-k]) / 2, O[k] = (Z[k] - conj Z[h-k]) / 2i.
  // Bins k and h-k use the same two values, so they are computed together in place.
  const cf z0 = out[0];
  out[0] = cf(z0.real() + z0.imag(), 0.0f);
  out[h] = cf(z0.real() - z0.imag(), 0.0f);
  for (size_t k = 1; k <= h / 2; ++k) {
    const size_t j = h - k;
    const cf zk = out[k], zj = out[j];
    const cf ek = 0.5f * (zk + std::conj(zj));
    const cf ok = 0.5f * mul_neg_i(zk - std::conj(zj));
    const cf ej = std::conj(ek);  // E[h-k] = conj E[k]
    const cf oj = std::conj(ok);
    out[k] = ek + split_tw_[k] * ok;
    out[j] = ej + split_tw_[j] * oj;
  }
}

}  // namespace oxi::kernels
