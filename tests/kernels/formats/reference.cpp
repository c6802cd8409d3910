#include "tests/kernels/formats/reference.h"

#include <cmath>
#include <cstring>
#include <random>

namespace oxi::test::formats {

using kernels::DType;

double half_to_double(uint16_t h) {
  const int sign = (h >> 15) & 1, exp = (h >> 10) & 31, mant = h & 1023;
  double v = 0;
  if (exp == 0)
    v = std::ldexp(static_cast<double>(mant), -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = std::ldexp(1.0 + mant / 1024.0, exp - 15);
  return sign ? -v : v;
}

double bf16_to_double(uint16_t h) {
  const int sign = (h >> 15) & 1, exp = (h >> 7) & 255, mant = h & 127;
  double v = 0;
  if (exp == 0)
    v = std::ldexp(static_cast<double>(mant), -133);
  else if (exp == 255)
    v = mant ? NAN : INFINITY;
  else
    v = std::ldexp(1.0 + mant / 128.0, exp - 127);
  return sign ? -v : v;
}

namespace {

// One rounding to f32: the result of a ggml f32 operation on f32 operands (products of an
// f32 and a small integer are exact in double, so this rounds once).
float f(double v) {
  return static_cast<float>(v);
}

uint16_t u16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
double h(const uint8_t* p) {
  return half_to_double(u16(p));
}

void block_q4_0(const uint8_t* b, float* y) {
  const float d = f(h(b));
  for (int e = 0; e < 32; ++e) {
    const int q = (e < 16 ? (b[2 + e] & 15) : (b[2 + e - 16] >> 4)) - 8;
    y[e] = f(double(q) * d);
  }
}
void block_q4_1(const uint8_t* b, float* y) {
  const float d = f(h(b)), m = f(h(b + 2));
  for (int e = 0; e < 32; ++e) {
    const int q = e < 16 ? (b[4 + e] & 15) : (b[4 + e - 16] >> 4);
    y[e] = f(double(f(double(q) * d)) + m);
  }
}
int bit5(const uint8_t* qh, int e) {
  return (qh[e / 8] >> (e % 8)) & 1;
}
void block_q5_0(const uint8_t* b, float* y) {
  const float d = f(h(b));
  for (int e = 0; e < 32; ++e) {
    const int nib = e < 16 ? (b[6 + e] & 15) : (b[6 + e - 16] >> 4);
    y[e] = f(double((nib | (bit5(b + 2, e) << 4)) - 16) * d);
  }
}
void block_q5_1(const uint8_t* b, float* y) {
  const float d = f(h(b)), m = f(h(b + 2));
  for (int e = 0; e < 32; ++e) {
    const int nib = e < 16 ? (b[8 + e] & 15) : (b[8 + e - 16] >> 4);
    y[e] = f(double(f(double(nib | (bit5(b + 4, e) << 4)) * d)) + m);
  }
}
void block_q8_0(const uint8_t* b, float* y) {
  const float d = f(h(b));
  for (int e = 0; e < 32; ++e) y[e] = f(double(static_cast<int8_t>(b[2 + e])) * d);
}
void block_q2_K(const uint8_t* b, float* y) {
  const uint8_t *sc = b, *qs = b + 16;
  const float d = f(h(b + 80)), dmin = f(h(b + 82));
  for (int e = 0; e < 256; ++e) {
    const int g = e / 16, half = e / 128, shift = 2 * ((e % 128) / 32), l = e % 32;
    const int q = (qs[32 * half + l] >> shift) & 3;
    const float dl = f(double(d) * (sc[g] & 15)), ml = f(double(dmin) * (sc[g] >> 4));
    y[e] = f(double(f(double(dl) * q)) - ml);
  }
}
void block_q3_K(const uint8_t* b, float* y) {
  const uint8_t *hm = b, *qs = b + 32, *s = b + 96;
  const float d = f(h(b + 108));
  for (int e = 0; e < 256; ++e) {
    const int g = e / 16, half = e / 128, j = (e % 128) / 32, l = e % 32;
    const int low = g < 8 ? (s[g] & 15) : (s[g - 8] >> 4);
    const int sc = low | (((s[8 + g % 4] >> (2 * (g / 4))) & 3) << 4);
    const int q = ((qs[32 * half + l] >> (2 * j)) & 3) - (((hm[l] >> (4 * half + j)) & 1) ? 0 : 4);
    y[e] = f(double(f(double(d) * (sc - 32))) * q);
  }
}
void k4_scale(const uint8_t* s, int sub, int& sc, int& m) {
  if (sub < 4) {
    sc = s[sub] & 63;
    m = s[sub + 4] & 63;
  } else {
    sc = (s[sub + 4] & 15) | ((s[sub - 4] >> 6) << 4);
    m = (s[sub + 4] >> 4) | ((s[sub] >> 6) << 4);
  }
}
void block_q4_K(const uint8_t* b, float* y, bool five) {
  const float d = f(h(b)), dmin = f(h(b + 2));
  const uint8_t* s = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* qs = five ? b + 48 : b + 16;
  for (int e = 0; e < 256; ++e) {
    const int j = e / 64, hi = (e % 64) / 32, l = e % 32;
    int q = hi ? (qs[32 * j + l] >> 4) : (qs[32 * j + l] & 15);
    if (five) q += ((qh[l] >> (2 * j + hi)) & 1) * 16;
    int sc = 0, m = 0;
    k4_scale(s, e / 32, sc, m);
    y[e] = f(double(f(double(f(double(d) * sc)) * q)) - f(double(dmin) * m));
  }
}
void block_q6_K(const uint8_t* b, float* y) {
  const uint8_t *ql = b, *qh = b + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = f(h(b + 208));
  for (int e = 0; e < 256; ++e) {
    const int half = e / 128, k = (e % 128) / 32, l = e % 32;
    const uint8_t lb = ql[64 * half + 32 * (k & 1) + l];
    const int nib = k >= 2 ? (lb >> 4) : (lb & 15);
    const int q = (nib | (((qh[32 * half + l] >> (2 * k)) & 3) << 4)) - 32;
    y[e] = f(double(f(double(d) * sc[e / 16])) * q);
  }
}
// GGUF's kvalues_iq4nl, written out here from the format's description.
constexpr int kLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                             1,    13,   25,  38,  53,  69,  89,  113};
void block_iq4_nl(const uint8_t* b, float* y) {
  const float d = f(h(b));
  for (int e = 0; e < 32; ++e) {
    const int idx = e < 16 ? (b[2 + e] & 15) : (b[2 + e - 16] >> 4);
    y[e] = f(double(d) * kLevels[idx]);
  }
}
// d (f16), scales_h (u16 LE), scales_l[4], qs[128]; group g's 6-bit scale: the low nibble
// from scales_l, two high bits from scales_h.
void block_iq4_xs(const uint8_t* b, float* y) {
  const float d = f(h(b));
  const int scales_h = u16(b + 2);
  const uint8_t *scales_l = b + 4, *qs = b + 8;
  for (int e = 0; e < 256; ++e) {
    const int g = e / 32, l = e % 32;
    const int ls = ((scales_l[g / 2] >> (4 * (g % 2))) & 15) | (((scales_h >> (2 * g)) & 3) << 4);
    const float dl = f(double(d) * (ls - 32));
    const uint8_t q = qs[16 * g + l % 16];
    y[e] = f(double(dl) * kLevels[l < 16 ? (q & 15) : (q >> 4)]);
  }
}

// tq1_0: qs[48], qh[4], d. A byte is a base-3 fraction of 256ths, most significant trit first:
// each trit is the integer part of three times what is left (in 256ths) after the ones above.
// Bytes 0..31 give elements 32k + m, bytes 32..47 elements 160 + 16k + m, qh elements
// 240 + 4k + m (four trits).
void block_tq1_0(const uint8_t* b, float* y) {
  const float d = f(h(b + 52));
  auto trits = [](uint8_t byte, int count, int* out) {
    int rest = byte;  // in 256ths
    for (int k = 0; k < count; ++k) {
      out[k] = rest * 3 / 256;
      rest = rest * 3 % 256;
    }
  };
  for (int m = 0; m < 52; ++m) {
    int t[5];
    int first, stride, count;
    if (m < 32) {
      first = m, stride = 32, count = 5;
    } else if (m < 48) {
      first = 160 + (m - 32), stride = 16, count = 5;
    } else {
      first = 240 + (m - 48), stride = 4, count = 4;
    }
    trits(b[m], count, t);
    for (int k = 0; k < count; ++k) y[first + stride * k] = f(double(t[k] - 1) * d);
  }
}
// tq2_0: qs[64], d; element 128h + 32k + m from bits 2k of qs[32h + m], x = (t - 1) d.
void block_tq2_0(const uint8_t* b, float* y) {
  const float d = f(h(b + 64));
  for (int e = 0; e < 256; ++e) {
    const int t = (b[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
    y[e] = f(double(t - 1) * d);
  }
}

}  // namespace

std::vector<float> reference_dequantize(DType t, const uint8_t* raw, size_t n) {
  std::vector<float> y(n);
  const kernels::DTypeInfo& in = kernels::info(t);
  for (size_t i = 0; i < n / in.block_elems; ++i) {
    const uint8_t* b = raw + i * in.block_bytes;
    float* o = y.data() + i * in.block_elems;
    switch (t) {
      case DType::F32:
        std::memcpy(o, b, 4);
        break;
      case DType::F16:
        o[0] = f(h(b));
        break;
      case DType::BF16:
        o[0] = f(bf16_to_double(u16(b)));
        break;
      case DType::Q4_0:
        block_q4_0(b, o);
        break;
      case DType::Q4_1:
        block_q4_1(b, o);
        break;
      case DType::Q5_0:
        block_q5_0(b, o);
        break;
      case DType::Q5_1:
        block_q5_1(b, o);
        break;
      case DType::Q8_0:
        block_q8_0(b, o);
        break;
      case DType::Q2_K:
        block_q2_K(b, o);
        break;
      case DType::Q3_K:
        block_q3_K(b, o);
        break;
      case DType::Q4_K:
        block_q4_K(b, o, false);
        break;
      case DType::Q5_K:
        block_q4_K(b, o, true);
        break;
      case DType::Q6_K:
        block_q6_K(b, o);
        break;
      case DType::IQ4_NL:
        block_iq4_nl(b, o);
        break;
      case DType::IQ4_XS:
        block_iq4_xs(b, o);
        break;
      case DType::TQ1_0:
        block_tq1_0(b, o);
        break;
      case DType::TQ2_0:
        block_tq2_0(b, o);
        break;
      default:
        break;
    }
  }
  return y;
}

namespace {

// A random finite half: moderate exponents (so products stay finite), some subnormals.
uint16_t random_half(std::mt19937& rng) {
  const uint32_t r = rng();
  const uint32_t exp = (r % 8 == 0) ? 0 : 5 + (r >> 3) % 15;
  return static_cast<uint16_t>(((r >> 8) & 1) << 15 | exp << 10 | ((r >> 9) & 1023));
}

void put_half(uint8_t* p, std::mt19937& rng) {
  const uint16_t v = random_half(rng);
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}

}  // namespace

std::vector<uint8_t> random_row(DType t, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  const kernels::DTypeInfo& in = kernels::info(t);
  std::vector<uint8_t> raw(n / in.block_elems * in.block_bytes);
  for (auto& b : raw) b = static_cast<uint8_t>(rng());
  for (size_t i = 0; i < n / in.block_elems; ++i) {
    uint8_t* b = raw.data() + i * in.block_bytes;
    switch (t) {
      case DType::F32: {
        const float v = std::uniform_real_distribution<float>(-4, 4)(rng);
        std::memcpy(b, &v, 4);
        break;
      }
      case DType::F16:
        put_half(b, rng);
        break;
      case DType::BF16:
        b[1] = static_cast<uint8_t>((b[1] & 0x80) | (0x3c + rng() % 6));
        break;
      case DType::Q4_0:
      case DType::Q5_0:
      case DType::Q8_0:
      case DType::IQ4_NL:
      case DType::IQ4_XS:
        put_half(b, rng);
        break;
      case DType::Q4_1:
      case DType::Q5_1:
        put_half(b, rng), put_half(b + 2, rng);
        break;
      case DType::Q2_K:
        put_half(b + 80, rng), put_half(b + 82, rng);
        break;
      case DType::Q3_K:
        put_half(b + 108, rng);
        break;
      case DType::Q4_K:
      case DType::Q5_K:
        put_half(b, rng), put_half(b + 2, rng);
        break;
      case DType::Q6_K:
        put_half(b + 208, rng);
        break;
      case DType::TQ1_0:
        put_half(b + 52, rng);
        break;
      case DType::TQ2_0:
        put_half(b + 64, rng);
        break;
      default:
        break;
    }
  }
  return raw;
}

}  // namespace oxi::test::formats
