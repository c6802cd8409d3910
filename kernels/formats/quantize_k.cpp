// Scalar K-quant encoders. Like ggml's reference quantizers they search each group's scale (and
// min) over a few candidate step sizes with a least-squares refit, then quantize the group
// scales themselves to 4, 6 or 8 bits and requantize the values with the scales as stored.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/formats/blocks.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/quantize_k.h"

namespace oxi::kernels {
namespace {

int nearest(float v) noexcept {
  return static_cast<int>(std::lrintf(v));
}

// Fits x ~= scale * q - min_off with q in 0..nmax, scale >= 0, min_off >= 0, by least squares
// weighted by w (nullptr: every element alike).
void fit_affine(const float* x, const float* w, int n, int nmax, float& scale,
                float& min_off) noexcept {
  float lo = *std::min_element(x, x + n);
  const float hi = *std::max_element(x, x + n);
  lo = std::min(lo, 0.0f);  // K-quants store -min as a non-negative number
  scale = 0;
  min_off = -lo;
  if (hi <= lo) return;
  double best_err = -1;
  for (int k = -6; k <= 6; ++k) {
    const float iscale = (static_cast<float>(nmax) + 0.1f * static_cast<float>(k)) / (hi - lo);
    double sw = 0, sq = 0, sq2 = 0, sx = 0, sxq = 0;
    int q[32];
    for (int i = 0; i < n; ++i) {
      const double wi = w ? w[i] : 1.0;
      q[i] = std::clamp(nearest(iscale * (x[i] - lo)), 0, nmax);
      sw += wi;
      sq += wi * q[i];
      sq2 += wi * q[i] * q[i];
      sx += wi * x[i];
      sxq += wi * x[i] * q[i];
    }
    const double det = sw * sq2 - sq * sq;
    if (det <= 0) continue;
    double a = (sw * sxq - sx * sq) / det;
    double b = (sq2 * sx - sq * sxq) / det;
    if (b > 0) {  // the offset must not be positive: refit through zero
      b = 0;
      a = sxq / sq2;
    }
    if (a < 0) continue;
    double err = 0;
    for (int i = 0; i < n; ++i) {
      const double e = a * q[i] + b - x[i];
      err += (w ? w[i] : 1.0) * e * e;
    }
    if (best_err < 0 || err < best_err) {
      best_err = err;
      scale = static_cast<float>(a);
      min_off = static_cast<float>(-b);
    }
  }
}

// Fits x ~= scale * q with q in -nneg..npos; the scale is signed so the value of largest
// magnitude can use the wider negative side. Least squares weighted by w (nullptr: alike).
float fit_symmetric(const float* x, const float* w, int n, int nneg, int npos) noexcept {
  float amax = 0, vmax = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      vmax = x[i];
    }
  }
  if (amax == 0) return 0;
  float best_scale = 0;
  double best_gain = -1;
  for (int k = -9; k <= 9; ++k) {
    const float iscale = -(static_cast<float>(nneg) + 0.1f * static_cast<float>(k)) / vmax;
    double sxq = 0, sq2 = 0;
    for (int i = 0; i < n; ++i) {
      const double wi = w ? w[i] : 1.0;
      const int q = std::clamp(nearest(iscale * x[i]), -nneg, npos);
      sxq += wi * x[i] * q;
      sq2 += wi * q * q;
    }
    // With the least-squares scale sxq / sq2 the error drops by sxq^2 / sq2.
    if (sq2 > 0 && sxq * sxq / sq2 > best_gain) {
      best_gain = sxq * sxq / sq2;
      best_scale = static_cast<float>(sxq / sq2);
    }
  }
  return best_scale;
}

// Scales of the groups quantized against one f16 super-scale: q = round(s / d) in 0..qmax.
float quantize_scales(const float* s, int groups, int qmax, uint8_t* q) noexcept {
  const float smax = *std::max_element(s, s + groups);
  const float d = f16_to_f32(f32_to_f16(smax / static_cast<float>(qmax)));
  for (int g = 0; g < groups; ++g) {
    q[g] = static_cast<uint8_t>(d > 0 ? std::clamp(nearest(s[g] / d), 0, qmax) : 0);
  }
  return d;
}

// Affine K-quant of one super-block: per group scale index and min index, and q in 0..nmax.
struct AffineBlock {
  float d = 0, dmin = 0;
  uint8_t sc[16] = {}, mn[16] = {};
  uint8_t q[QK_K] = {};
};

AffineBlock quantize_affine(const float* x, const float* w, int group, int nmax,
                            int scale_max) noexcept {
  AffineBlock b;
  const int groups = static_cast<int>(QK_K) / group;
  float scales[16], mins[16];
  for (int g = 0; g < groups; ++g)
    fit_affine(x + g * group, w ? w + g * group : nullptr, group, nmax, scales[g], mins[g]);
  b.d = quantize_scales(scales, groups, scale_max, b.sc);
  b.dmin = quantize_scales(mins, groups, scale_max, b.mn);
  for (int g = 0; g < groups; ++g) {
    const float step = b.d * static_cast<float>(b.sc[g]);
    const float off = b.dmin * static_cast<float>(b.mn[g]);
    for (int i = g * group; i < (g + 1) * group; ++i) {
      b.q[i] =
          static_cast<uint8_t>(step > 0 ? std::clamp(nearest((x[i] + off) / step), 0, nmax) : 0);
    }
  }
  return b;
}

// Symmetric K-quant of one super-block of 16 groups: signed scale indices and q in -nneg..npos.
struct SymmetricBlock {
  float d = 0;
  int sc[16] = {};
  int q[QK_K] = {};
};

SymmetricBlock quantize_symmetric(const float* x, const float* w, int nneg, int npos, int sneg,
                                  int spos) noexcept {
  SymmetricBlock b;
  float scales[16];
  float smax = 0, sabs = 0;
  for (int g = 0; g < 16; ++g) {
    scales[g] = fit_symmetric(x + 16 * g, w ? w + 16 * g : nullptr, 16, nneg, npos);
    if (std::fabs(scales[g]) > sabs) {
      sabs = std::fabs(scales[g]);
      smax = scales[g];
    }
  }
  b.d = f16_to_f32(f32_to_f16(smax / -static_cast<float>(sneg)));
  for (int g = 0; g < 16; ++g) {
    b.sc[g] = b.d != 0 ? std::clamp(nearest(scales[g] / b.d), -sneg, spos) : 0;
    const float step = b.d * static_cast<float>(b.sc[g]);
    for (int i = 16 * g; i < 16 * g + 16; ++i) {
      b.q[i] = step != 0 ? std::clamp(nearest(x[i] / step), -nneg, npos) : 0;
    }
  }
  return b;
}

// Packs eight 6-bit scales and mins the way k4_scale_min() unpacks them.
void pack_k4_scales(const uint8_t* sc, const uint8_t* mn, uint8_t* out) noexcept {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>(mn[j] | ((mn[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((mn[j + 4] & 0xF) << 4));
  }
}

}  // namespace

void quantize_row_q2_K(const float* x, const float* importance, void* dst, size_t n) noexcept {
  auto* out = static_cast<BlockQ2_K*>(dst);
  for (size_t i = 0; i < n / QK_K;
       ++i, x += QK_K, importance = importance ? importance + QK_K : nullptr) {
    float w[QK_K];
    const AffineBlock b = quantize_affine(x, importance_weights(x, importance, QK_K, w), 16, 3, 15);
    BlockQ2_K& o = out[i];
    std::memset(&o, 0, sizeof(o));
    o.d = f32_to_f16(b.d);
    o.dmin = f32_to_f16(b.dmin);
    for (int g = 0; g < 16; ++g) o.scales[g] = static_cast<uint8_t>(b.sc[g] | (b.mn[g] << 4));
    for (int e = 0; e < static_cast<int>(QK_K); ++e) {
      const int half = e / 128, shift = 2 * ((e % 128) / 32), l = e % 32;
      o.qs[32 * half + l] |= static_cast<uint8_t>(b.q[e] << shift);
    }
  }
}

void quantize_row_q3_K(const float* x, const float* importance, void* dst, size_t n) noexcept {
  auto* out = static_cast<BlockQ3_K*>(dst);
  for (size_t i = 0; i < n / QK_K;
       ++i, x += QK_K, importance = importance ? importance + QK_K : nullptr) {
    float w[QK_K];
    const SymmetricBlock b =
        quantize_symmetric(x, importance_weights(x, importance, QK_K, w), 4, 3, 32, 31);
    BlockQ3_K& o = out[i];
    std::memset(&o, 0, sizeof(o));
    o.d = f32_to_f16(b.d);
    for (int g = 0; g < 16; ++g) {
      const int s = b.sc[g] + 32;
      o.scales[g < 8 ? g : g - 8] |= static_cast<uint8_t>(g < 8 ? (s & 0xF) : (s & 0xF) << 4);
      o.scales[8 + g % 4] |= static_cast<uint8_t>((s >> 4) << (2 * (g / 4)));
    }
    for (int e = 0; e < static_cast<int>(QK_K); ++e) {
      const int u = b.q[e] + 4;  // 0..7: two low bits in qs, bit 2 in hmask
      const int half = e / 128, j = (e % 128) / 32, l = e % 32;
      o.qs[32 * half + l] |= static_cast<uint8_t>((u & 3) << (2 * j));
      if (u & 4) o.hmask[l] |= static_cast<uint8_t>(1 << (4 * half + j));
    }
  }
}

void quantize_row_q4_K(const float* x, const float* importance, void* dst, size_t n) noexcept {
  auto* out = static_cast<BlockQ4_K*>(dst);
  for (size_t i = 0; i < n / QK_K;
       ++i, x += QK_K, importance = importance ? importance + QK_K : nullptr) {
    float w[QK_K];
    const AffineBlock b =
        quantize_affine(x, importance_weights(x, importance, QK_K, w), 32, 15, 63);
    BlockQ4_K& o = out[i];
    o.d = f32_to_f16(b.d);
    o.dmin = f32_to_f16(b.dmin);
    pack_k4_scales(b.sc, b.mn, o.scales);
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 32; ++l) {
        o.qs[32 * j + l] = static_cast<uint8_t>(b.q[64 * j + l] | (b.q[64 * j + 32 + l] << 4));
      }
    }
  }
}

void quantize_row_q5_K(const float* x, const float* importance, void* dst, size_t n) noexcept {
  auto* out = static_cast<BlockQ5_K*>(dst);
  for (size_t i = 0; i < n / QK_K;
       ++i, x += QK_K, importance = importance ? importance + QK_K : nullptr) {
    float w[QK_K];
    const AffineBlock b =
        quantize_affine(x, importance_weights(x, importance, QK_K, w), 32, 31, 63);
    BlockQ5_K& o = out[i];
    std::memset(&o, 0, sizeof(o));
    o.d = f32_to_f16(b.d);
    o.dmin = f32_to_f16(b.dmin);
    pack_k4_scales(b.sc, b.mn, o.scales);
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 32; ++l) {
        const int lo = b.q[64 * j + l], hi = b.q[64 * j + 32 + l];
        o.qs[32 * j + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
        o.qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * j)) | ((hi >> 4) << (2 * j + 1)));
      }
    }
  }
}

void quantize_row_q6_K(const float* x, const float* importance, void* dst, size_t n) noexcept {
  auto* out = static_cast<BlockQ6_K*>(dst);
  for (size_t i = 0; i < n / QK_K;
       ++i, x += QK_K, importance = importance ? importance + QK_K : nullptr) {
    float w[QK_K];
    const SymmetricBlock b =
        quantize_symmetric(x, importance_weights(x, importance, QK_K, w), 32, 31, 128, 127);
    BlockQ6_K& o = out[i];
    o.d = f32_to_f16(b.d);
    for (int g = 0; g < 16; ++g) o.scales[g] = static_cast<int8_t>(b.sc[g]);
    for (int half = 0; half < 2; ++half) {
      const int* q = b.q + 128 * half;
      for (int l = 0; l < 32; ++l) {
        const int e0 = q[l] + 32, e1 = q[l + 32] + 32, e2 = q[l + 64] + 32, e3 = q[l + 96] + 32;
        o.ql[64 * half + l] = static_cast<uint8_t>((e0 & 0xF) | ((e2 & 0xF) << 4));
        o.ql[64 * half + 32 + l] = static_cast<uint8_t>((e1 & 0xF) | ((e3 & 0xF) << 4));
        o.qh[32 * half + l] = static_cast<uint8_t>((e0 >> 4) | ((e1 >> 4) << 2) | ((e2 >> 4) << 4) |
                                                   ((e3 >> 4) << 6));
      }
    }
  }
}

void quantize_row_q2_K(const float* x, void* dst, size_t n) noexcept {
  quantize_row_q2_K(x, nullptr, dst, n);
}
void quantize_row_q3_K(const float* x, void* dst, size_t n) noexcept {
  quantize_row_q3_K(x, nullptr, dst, n);
}
void quantize_row_q4_K(const float* x, void* dst, size_t n) noexcept {
  quantize_row_q4_K(x, nullptr, dst, n);
}
void quantize_row_q5_K(const float* x, void* dst, size_t n) noexcept {
  quantize_row_q5_K(x, nullptr, dst, n);
}
void quantize_row_q6_K(const float* x, void* dst, size_t n) noexcept {
  quantize_row_q6_K(x, nullptr, dst, n);
}

const float* importance_weights(const float* x, const float* importance, size_t count,
                                float* w) noexcept {
  if (importance == nullptr) return nullptr;
  float sum_x2 = 0;
  for (size_t l = 0; l < count; ++l) sum_x2 += x[l] * x[l];
  const float sigma2 = 2 * sum_x2 / static_cast<float>(count);
  for (size_t l = 0; l < count; ++l) w[l] = importance[l] * std::sqrt(sigma2 + x[l] * x[l]);
  return w;
}

// The 32-element formats by the same weighted fits (quantize.cpp keeps ggml's plain rules).
float fit_block_symmetric(const float* x, const float* w, int nneg, int npos) noexcept {
  return fit_symmetric(x, w, static_cast<int>(QK), nneg, npos);
}
void fit_block_affine(const float* x, const float* w, int nmax, float& scale,
                      float& min_off) noexcept {
  fit_affine(x, w, static_cast<int>(QK), nmax, scale, min_off);
}

}  // namespace oxi::kernels
