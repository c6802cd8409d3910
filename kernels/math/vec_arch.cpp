// Row kernels for one instruction set (arch source): dot / matvec, norms, softmax, activations,
// the memory read probe.
#include <cmath>
#include <limits>
#include <numbers>

#include "kernels/arch.h"
#include "kernels/formats/prefetch.h"
#include "kernels/math/arch_math.h"
#include "kernels/math/read_sum.h"
#include "kernels/math/simd.h"

namespace oxi::kernels::OXI_ARCH_NS {
namespace {

using simd::F;

float sum_of(const float* x, size_t n) noexcept {
  F acc0 = simd::splat(0), acc1 = simd::splat(0);
  size_t i = 0;
  for (; i + 2 * simd::kLanes <= n; i += 2 * simd::kLanes) {
    acc0 += simd::load(x + i);
    acc1 += simd::load(x + i + simd::kLanes);
  }
  for (; i + simd::kLanes <= n; i += simd::kLanes) acc0 += simd::load(x + i);
  float s = simd::sum(acc0 + acc1);
  for (; i < n; ++i) s += x[i];
  return s;
}

// sum (x - mean)^2: the two-pass form keeps the variance accurate when |mean| >> stddev.
float sum_sq_dev(const float* x, size_t n, float mean) noexcept {
  const F m = simd::splat(mean);
  F acc = simd::splat(0);
  size_t i = 0;
  for (; i + simd::kLanes <= n; i += simd::kLanes) {
    const F d = simd::load(x + i) - m;
    acc = simd::fma(d, d, acc);
  }
  float s = simd::sum(acc);
  for (; i < n; ++i) s += (x[i] - mean) * (x[i] - mean);
  return s;
}

// y = (x - mean) * rstd * weight + bias; weight / bias may be null (1 / 0).
void normalize_row(const float* x, size_t n, float mean, float rstd, const float* weight,
                   const float* bias, float* y) noexcept {
  const F m = simd::splat(mean), r = simd::splat(rstd);
  size_t i = 0;
  for (; i + simd::kLanes <= n; i += simd::kLanes) {
    F v = (simd::load(x + i) - m) * r;
    if (weight) v = v * simd::load(weight + i);
    if (bias) v = v + simd::load(bias + i);
    simd::store(y + i, v);
  }
  for (; i < n; ++i) {
    float v = (x[i] - mean) * rstd;
    if (weight) v *= weight[i];
    if (bias) v += bias[i];
    y[i] = v;
  }
}

inline F gelu_erf(F x) noexcept {
  const F half = simd::splat(0.5f), one = simd::splat(1.0f);
  return half * x * (one + simd::erf(x * simd::splat(std::numbers::sqrt2_v<float> / 2)));
}

inline F gelu_tanh(F x) noexcept {
  const F half = simd::splat(0.5f), one = simd::splat(1.0f);
  const F k = simd::splat(0.7978845608028654f);  // sqrt(2 / pi)
  const F inner = k * simd::fma(simd::splat(0.044715f) * x, x * x, x);
  return half * x * (one + simd::tanh(inner));
}

inline F silu_of(F x) noexcept {
  const F one = simd::splat(1.0f);
  return x / (one + simd::exp(simd::splat(0.0f) - x));
}

const float* data_or_null(std::span<const float> s) noexcept {
  return s.empty() ? nullptr : s.data();
}

}  // namespace

float dot_f32(std::span<const float> a, std::span<const float> b) noexcept {
  return simd::dot(a.data(), b.data(), a.size());
}

void matvec_f32(std::span<const float> w, size_t ldw, std::span<const float> x,
                std::span<const float> bias, std::span<float> y) noexcept {
  for (size_t j = 0; j < y.size(); ++j) {
    y[j] = simd::dot(w.data() + j * ldw, x.data(), x.size()) + (bias.empty() ? 0.0f : bias[j]);
  }
}

void rms_norm(std::span<const float> x, std::span<const float> weight, float eps,
              std::span<float> y) noexcept {
  const size_t n = x.size();
  if (n == 0) return;
  const float mean_sq = simd::dot(x.data(), x.data(), n) / static_cast<float>(n);
  const float rstd = 1.0f / std::sqrt(mean_sq + eps);
  normalize_row(x.data(), n, 0.0f, rstd, data_or_null(weight), nullptr, y.data());
}

void layer_norm(std::span<const float> x, std::span<const float> weight,
                std::span<const float> bias, float eps, std::span<float> y) noexcept {
  const size_t n = x.size();
  if (n == 0) return;
  const float mean = sum_of(x.data(), n) / static_cast<float>(n);
  const float var = sum_sq_dev(x.data(), n, mean) / static_cast<float>(n);
  normalize_row(x.data(), n, mean, 1.0f / std::sqrt(var + eps), data_or_null(weight),
                data_or_null(bias), y.data());
}

void group_norm(std::span<const float> x, size_t channels, size_t groups,
                std::span<const float> weight, std::span<const float> bias, float eps,
                std::span<float> y) noexcept {
  if (channels == 0 || groups == 0) return;
  const size_t hw = x.size() / channels;
  const size_t per_group = channels / groups;
  for (size_t g = 0; g < groups; ++g) {
    const float* xg = x.data() + g * per_group * hw;
    const size_t count = per_group * hw;
    if (count == 0) continue;
    const float mean = sum_of(xg, count) / static_cast<float>(count);
    const float var = sum_sq_dev(xg, count, mean) / static_cast<float>(count);
    const float rstd = 1.0f / std::sqrt(var + eps);
    for (size_t c = g * per_group; c < (g + 1) * per_group; ++c) {
      // (x - mean) * rstd * w + b folded into one multiply-add per element.
      const float a = rstd * (weight.empty() ? 1.0f : weight[c]);
      const float b = (bias.empty() ? 0.0f : bias[c]) - mean * a;
      simd::affine(x.data() + c * hw, a, b, y.data() + c * hw, hw);
    }
  }
}

void softmax(std::span<float> x) noexcept {
  const size_t n = x.size();
  if (n == 0) return;
  float* p = x.data();
  F vmax = simd::splat(-std::numeric_limits<float>::infinity());
  size_t i = 0;
  for (; i + simd::kLanes <= n; i += simd::kLanes) vmax = simd::max(vmax, simd::load(p + i));
  float mx = simd::max_lane(vmax);
  for (; i < n; ++i) mx = std::max(mx, p[i]);
  if (mx == -std::numeric_limits<float>::infinity()) mx = 0.0f;  // all masked: exp gives 0s
  const F shift = simd::splat(mx);
  simd::map_unary(p, p, n, [&](F v) { return simd::exp(v - shift); });
  const float total = sum_of(p, n);
  const float inv = total > 0.0f ? 1.0f / total : 0.0f;
  simd::affine(p, inv, 0.0f, p, n);
}

void gelu(std::span<const float> x, std::span<float> y, GeluForm form) noexcept {
  if (form == GeluForm::erf) {
    simd::map_unary(x.data(), y.data(), x.size(), [](F v) { return gelu_erf(v); });
  } else {
    simd::map_unary(x.data(), y.data(), x.size(), [](F v) { return gelu_tanh(v); });
  }
}

void silu(std::span<const float> x, std::span<float> y) noexcept {
  simd::map_unary(x.data(), y.data(), x.size(), [](F v) { return silu_of(v); });
}

uint64_t read_sum(std::span<const uint64_t> words) noexcept {
  const uint64_t* p = words.data();
  const size_t n = words.size();
  size_t i = 0;
  uint64_t total = 0;
#if OXI_ARCH_SIMD
  // Four independent accumulators, so the loop waits on loads, not on adds (read_sum.h).
  using U = xsimd::batch<uint64_t, Arch>;
  constexpr size_t kW = U::size;
  U s0(uint64_t{0}), s1(uint64_t{0}), s2(uint64_t{0}), s3(uint64_t{0});
  constexpr size_t kStep = 4 * kW, kAhead = kReadSumPrefetchBytes / sizeof(uint64_t);
  for (; i + kStep <= n; i += kStep) {
    // The page starts kReadSumPrefetchBytes ahead (read_sum.h, prefetch.h).
    prefetch_page_starts<kStep * sizeof(uint64_t)>(p + i + kAhead);
    s0 += U::load_unaligned(p + i);
    s1 += U::load_unaligned(p + i + kW);
    s2 += U::load_unaligned(p + i + 2 * kW);
    s3 += U::load_unaligned(p + i + 3 * kW);
  }
  alignas(64) uint64_t lanes[kW];
  ((s0 + s1) + (s2 + s3)).store_aligned(lanes);
  for (uint64_t v : lanes) total += v;
#else
  uint64_t s[4] = {};
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) s[k] += p[i + k];
  total = (s[0] + s[1]) + (s[2] + s[3]);
#endif
  for (; i < n; ++i) total += p[i];
  return total;
}

void swiglu(std::span<const float> gate, std::span<const float> up, std::span<float> y) noexcept {
  simd::map_binary(gate.data(), up.data(), y.data(), gate.size(),
                   [](F g, F u) { return silu_of(g) * u; });
}

void geglu(std::span<const float> gate, std::span<const float> up, std::span<float> y,
           GeluForm form) noexcept {
  if (form == GeluForm::erf) {
    simd::map_binary(gate.data(), up.data(), y.data(), gate.size(),
                     [](F g, F u) { return gelu_erf(g) * u; });
  } else {
    simd::map_binary(gate.data(), up.data(), y.data(), gate.size(),
                     [](F g, F u) { return gelu_tanh(g) * u; });
  }
}

}  // namespace oxi::kernels::OXI_ARCH_NS
