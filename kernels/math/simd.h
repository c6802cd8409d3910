// A minimal vector vocabulary for arch translation units (include arch.h first): the SIMD
// builds map it onto xsimd batches, the scalar build onto one float, so each kernel is written
// once and the scalar copy is the plain reference the SIMD copies are tested against.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace oxi::kernels::OXI_ARCH_NS::simd {

#if OXI_ARCH_SIMD
using F = xsimd::batch<float, Arch>;
inline constexpr size_t kLanes = F::size;
inline F load(const float* p) noexcept {
  return F::load_unaligned(p);
}
inline F load_aligned(const float* p) noexcept {
  return F::load_aligned(p);
}
inline void store(float* p, F v) noexcept {
  v.store_unaligned(p);
}
inline F splat(float s) noexcept {
  return F(s);
}
inline F fma(F a, F b, F c) noexcept {
  return xsimd::fma(a, b, c);
}
inline F max(F a, F b) noexcept {
  return xsimd::max(a, b);
}
inline F exp(F v) noexcept {
  return xsimd::exp(v);
}
inline F erf(F v) noexcept {
  return xsimd::erf(v);
}
inline F tanh(F v) noexcept {
  return xsimd::tanh(v);
}
inline float sum(F v) noexcept {
  return xsimd::hadd(v);
}
// Lane i: the sum of rows[i]'s lanes, for kLanes rows (one transposing reduction instead of
// kLanes horizontal sums).
inline F sums(const F* rows) noexcept {
  return xsimd::haddp(rows);
}
inline float max_lane(F v) noexcept {
  alignas(64) float lanes[kLanes];
  v.store_aligned(lanes);
  return *std::max_element(lanes, lanes + kLanes);
}
#else
struct F {
  float v = 0.0f;
  F() = default;
  explicit F(float s) : v(s) {}
  friend F operator+(F a, F b) noexcept { return F(a.v + b.v); }
  friend F operator-(F a, F b) noexcept { return F(a.v - b.v); }
  friend F operator*(F a, F b) noexcept { return F(a.v * b.v); }
  friend F operator/(F a, F b) noexcept { return F(a.v / b.v); }
  F& operator+=(F b) noexcept { return v += b.v, *this; }
  F& operator*=(F b) noexcept { return v *= b.v, *this; }
};
inline constexpr size_t kLanes = 1;
inline F load(const float* p) noexcept {
  return F(*p);
}
inline F load_aligned(const float* p) noexcept {
  return F(*p);
}
inline void store(float* p, F v) noexcept {
  *p = v.v;
}
inline F splat(float s) noexcept {
  return F(s);
}
// Multiply-add, not std::fma: without FMA hardware that is a slow library call.
inline F fma(F a, F b, F c) noexcept {
  return F(a.v * b.v + c.v);
}
inline F max(F a, F b) noexcept {
  return F(std::max(a.v, b.v));
}
inline F exp(F v) noexcept {
  return F(std::exp(v.v));
}
inline F erf(F v) noexcept {
  return F(std::erf(v.v));
}
inline F tanh(F v) noexcept {
  return F(std::tanh(v.v));
}
inline float sum(F v) noexcept {
  return v.v;
}
inline F sums(const F* rows) noexcept {
  return rows[0];
}
inline float max_lane(F v) noexcept {
  return v.v;
}
#endif

// Building blocks shared by the arch kernels. Tails shorter than a vector run through the same
// vector code on a zero-padded copy, so every element sees one formula.

inline float dot(const float* a, const float* b, size_t n) noexcept {
  // Four independent accumulators hide the FMA latency.
  F acc0 = splat(0), acc1 = splat(0), acc2 = splat(0), acc3 = splat(0);
  size_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    acc0 = fma(load(a + i), load(b + i), acc0);
    acc1 = fma(load(a + i + kLanes), load(b + i + kLanes), acc1);
    acc2 = fma(load(a + i + 2 * kLanes), load(b + i + 2 * kLanes), acc2);
    acc3 = fma(load(a + i + 3 * kLanes), load(b + i + 3 * kLanes), acc3);
  }
  for (; i + kLanes <= n; i += kLanes) acc0 = fma(load(a + i), load(b + i), acc0);
  float s = sum((acc0 + acc1) + (acc2 + acc3));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// y += alpha * x
inline void axpy(float alpha, const float* x, float* y, size_t n) noexcept {
  const F a = splat(alpha);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(y + i, fma(a, load(x + i), load(y + i)));
  for (; i < n; ++i) y[i] += alpha * x[i];
}

// y = x * a + b, with scalar a and b
inline void affine(const float* x, float a, float b, float* y, size_t n) noexcept {
  const F va = splat(a), vb = splat(b);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(y + i, fma(load(x + i), va, vb));
  for (; i < n; ++i) y[i] = x[i] * a + b;
}

template <class Op>
inline void map_unary(const float* x, float* y, size_t n, Op op) noexcept {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(y + i, op(load(x + i)));
  if (i < n) {
    alignas(64) float buf[kLanes] = {};
    std::copy(x + i, x + n, buf);
    store(buf, op(load(buf)));
    std::copy(buf, buf + (n - i), y + i);
  }
}

template <class Op>
inline void map_binary(const float* a, const float* b, float* y, size_t n, Op op) noexcept {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(y + i, op(load(a + i), load(b + i)));
  if (i < n) {
    alignas(64) float buf_a[kLanes] = {}, buf_b[kLanes] = {};
    std::copy(a + i, a + n, buf_a);
    std::copy(b + i, b + n, buf_b);
    store(buf_a, op(load(buf_a), load(buf_b)));
    std::copy(buf_a, buf_a + (n - i), y + i);
  }
}

}  // namespace oxi::kernels::OXI_ARCH_NS::simd
