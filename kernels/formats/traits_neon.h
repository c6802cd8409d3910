// NEON block-dot traits (interface in traits_scalar.h) for every plain format: the 32-element
// formats (q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl) against q8_0 / q8_1 activations, and the K
// formats (q2_K .. q6_K), iq4_xs and the ternary tq1_0 / tq2_0 against q8_K.
//
// Two builds (kernels/meson.build): base Armv8-A, where vmull_s8 / vmlal_high_s8 multiply 16
// byte pairs into 8 int16 lanes of two products each and vpadalq_s16 widens them into int32 (a
// Cortex-A72 has nothing better), and neon_dotprod, where one SDOT does all three. Weights are
// unpacked to signed bytes once per row and block (load_w), so gemm_q's tokens share them. A
// block's integer sum is the reference's, reduced to one int32 (vaddvq) and met by the reference's
// f32 step, in its order (no fused multiply-add: kernels/meson.build), so every product is
// bit-identical to the reference's.
//
// load_w and step are always inlined: left to GCC, the K formats' were calls that passed the
// unpacked block (16 vectors) through the stack.
#pragma once

#if defined(OXI_ARCH_NEON)

#include <arm_neon.h>

#include <bit>
#include <cstring>

#include "kernels/formats/traits_scalar.h"

namespace oxi::kernels::OXI_ARCH_NS::simd {

// int32 lanes + the products of 16 signed byte pairs: with the dot-product extension one SDOT
// (4 products a lane); else each int16 holds two products, so |w| <= 128 and |x| <= 127 keep it
// exact (q8_K / q8_0 activations are within +-127). The lanes differ between the two; their
// total, which is all the traits use, does not.
[[gnu::always_inline]] inline int32x4_t add_dot16(int32x4_t acc, int8x16_t w,
                                                  int8x16_t x) noexcept {
#if defined(__ARM_FEATURE_DOTPROD)
  return vdotq_s32(acc, w, x);
#else
  return vpadalq_s16(acc, vmlal_high_s8(vmull_s8(vget_low_s8(w), vget_low_s8(x)), w, x));
#endif
}

// The products of 32 pairs; without SDOT in int16 lanes of four products each (|w| <= 63: the
// K formats' levels).
[[gnu::always_inline]] inline int32x4_t dot32_small(int8x16_t w0, int8x16_t x0, int8x16_t w1,
                                                    int8x16_t x1) noexcept {
#if defined(__ARM_FEATURE_DOTPROD)
  return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, x0), w1, x1);
#else
  int16x8_t p = vmull_s8(vget_low_s8(w0), vget_low_s8(x0));
  p = vmlal_high_s8(p, w0, x0);
  p = vmlal_s8(p, vget_low_s8(w1), vget_low_s8(x1));
  p = vmlal_high_s8(p, w1, x1);
  return vpaddlq_s16(p);
#endif
}

// The products of 32 signed byte pairs (w0 against x0, w1 against x1), any levels.
[[gnu::always_inline]] inline int32x4_t dot32(int8x16_t w0, int8x16_t x0, int8x16_t w1,
                                              int8x16_t x1) noexcept {
  return add_dot16(add_dot16(vdupq_n_s32(0), w0, x0), w1, x1);
}

// A half's value by the FPU's conversion: the reference's bits (f16_to_f32) for every half but
// a signalling NaN, which it returns quiet, as F16C does on x86. The bit manipulation had been
// ~12 of a q4_0 block's ~65 instructions, twice (the weight's scale and the activation's).
inline float f16(uint16_t h) noexcept {
  return static_cast<float>(std::bit_cast<__fp16>(h));
}

inline int8x16_t load_s8(const void* p) noexcept {
  return vld1q_s8(static_cast<const int8_t*>(p));
}
inline uint8x16_t load_u8(const void* p) noexcept {
  return vld1q_u8(static_cast<const uint8_t*>(p));
}

// Bytes 0..15 of a 32-element block's fifth bits (bit j of the little-endian qh: element j) as
// 0x10 where set, and bytes 16..31 the same: vtst against the bit each byte stands for.
struct FifthBits {
  uint8x16_t low, high;
};
inline FifthBits fifth_bits_0x10(const uint8_t* qh) noexcept {
  const uint8x16_t bit = vreinterpretq_u8_u64(vdupq_n_u64(0x8040201008040201ull));
  const uint8x16_t sixteen = vdupq_n_u8(0x10);
  const uint8x16_t lo = vcombine_u8(vdup_n_u8(qh[0]), vdup_n_u8(qh[1]));
  const uint8x16_t hi = vcombine_u8(vdup_n_u8(qh[2]), vdup_n_u8(qh[3]));
  return {vandq_u8(vtstq_u8(lo, bit), sixteen), vandq_u8(vtstq_u8(hi, bit), sixteen)};
}

// ---- 32-element formats: x = d * q (+ m), q signed after unpacking ----

struct W32x {
  int8x16_t q0, q1;  // elements 0..15, 16..31
  float d, m;
};

// q4_1 and q5_1: x = d * q + m, against q8_1 activations.
template <class Block>
constexpr bool kHasMin = std::is_same_v<Block, BlockQ4_1> || std::is_same_v<Block, BlockQ5_1>;

template <class Block>
[[gnu::always_inline]] inline W32x load_w32(const Block& b) noexcept {
  W32x w;
  w.d = f16(b.d);
  w.m = 0.0f;
  if constexpr (std::is_same_v<Block, BlockQ8_0>) {
    w.q0 = load_s8(b.qs);
    w.q1 = load_s8(b.qs + 16);
  } else {
    const uint8x16_t v = load_u8(b.qs);
    uint8x16_t lo = vandq_u8(v, vdupq_n_u8(0x0F)), hi = vshrq_n_u8(v, 4);
    if constexpr (std::is_same_v<Block, BlockIQ4_NL>) {
      const int8x16_t levels = vld1q_s8(kIq4Values);
      w.q0 = vqtbl1q_s8(levels, lo);
      w.q1 = vqtbl1q_s8(levels, hi);
      return w;
    }
    constexpr bool kFifth = std::is_same_v<Block, BlockQ5_0> || std::is_same_v<Block, BlockQ5_1>;
    if constexpr (kFifth) {
      const FifthBits f = fifth_bits_0x10(b.qh);
      lo = vorrq_u8(lo, f.low);
      hi = vorrq_u8(hi, f.high);
    }
    if constexpr (kHasMin<Block>) {
      w.m = f16(b.m);
      w.q0 = vreinterpretq_s8_u8(lo);
      w.q1 = vreinterpretq_s8_u8(hi);
    } else {  // q4_0 - 8, q5_0 - 16
      const int8x16_t offset = vdupq_n_s8(kFifth ? 16 : 8);
      w.q0 = vsubq_s8(vreinterpretq_s8_u8(lo), offset);
      w.q1 = vsubq_s8(vreinterpretq_s8_u8(hi), offset);
    }
  }
  return w;
}

// The 32-element formats: the symmetric ones (q4_0, q5_0, q8_0, iq4_nl) against q8_0
// activations, those with a min against q8_1, whose s = d * sum(q) the min meets.
template <class Block>
struct Formats32 {
  static constexpr bool kMin = kHasMin<Block>;
  using WBlock = Block;
  using ABlock = std::conditional_t<kMin, BlockQ8_1, BlockQ8_0>;
  struct Act {
    int8x16_t x0, x1;
    float d, s;  // s: q8_1's only
  };
  using W = W32x;
  using Acc = float;
  static constexpr size_t kElems = QK;

  [[gnu::always_inline]] static Act load_act(const ABlock& a) noexcept {
    Act act{load_s8(a.qs), load_s8(a.qs + 16), f16(a.d), 0.0f};
    if constexpr (kMin) act.s = f16(a.s);
    return act;
  }
  [[gnu::always_inline]] static W load_w(const WBlock& b) noexcept { return load_w32(b); }
  // The reference's f32 step, in its order (the min's term added before the sum meets acc).
  [[gnu::always_inline]] static void step(Acc& acc, const W& w, const Act& a) noexcept {
    const float scaled =
        static_cast<float>(vaddvq_s32(dot32(w.q0, a.x0, w.q1, a.x1))) * (w.d * a.d);
    if constexpr (kMin)
      acc += scaled + w.m * a.s;
    else
      acc += scaled;
  }
  static float finish(Acc acc) noexcept { return acc; }
};

using Q4_0 = Formats32<BlockQ4_0>;
using Q5_0 = Formats32<BlockQ5_0>;
using Q8_0 = Formats32<BlockQ8_0>;
using IQ4_NL = Formats32<BlockIQ4_NL>;
using Q4_1 = Formats32<BlockQ4_1>;
using Q5_1 = Formats32<BlockQ5_1>;

// The bytes of v widened to the int32 at out[0..7].
inline void store_i32(uint8x8_t v, int32_t* out) noexcept {
  const uint16x8_t w = vmovl_u8(v);
  vst1q_s32(out, vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(w))));
  vst1q_s32(out + 4, vreinterpretq_s32_u32(vmovl_high_u16(w)));
}

// What the traits against q8_K share: the activation block as it is, one f32 sum.
struct Q8KTrait {
  using ABlock = BlockQ8_K;
  using Act = const BlockQ8_K*;
  using Acc = float;
  static constexpr size_t kElems = QK_K;
  [[gnu::always_inline]] static Act load_act(const ABlock& a) noexcept { return &a; }
  static float finish(Acc acc) noexcept { return acc; }
};

// The sum over 16 groups of 16 of each group's dot product with x times its scale sc[g].
template <class Scale>
[[gnu::always_inline]] inline int32_t scaled_groups16(const int8x16_t (&q)[16], const int8_t* x,
                                                      const Scale* sc) noexcept {
  int32x4_t isum = vdupq_n_s32(0);
  for (int g = 0; g < 16; ++g)
    isum = vmlaq_n_s32(isum, add_dot16(vdupq_n_s32(0), q[g], load_s8(x + 16 * g)), sc[g]);
  return vaddvq_s32(isum);
}

// The same over 8 groups of 32 (q[2g], q[2g + 1]); kSmall: levels within +-63, so that without
// SDOT four products share an int16 (dot32_small).
template <bool kSmall, class Scale>
[[gnu::always_inline]] inline int32_t scaled_groups32(const int8x16_t (&q)[16], const int8_t* x,
                                                      const Scale* sc) noexcept {
  int32x4_t isum = vdupq_n_s32(0);
  for (int g = 0; g < 8; ++g) {
    const int8x16_t x0 = load_s8(x + 32 * g), x1 = load_s8(x + 32 * g + 16);
    const int32x4_t d = kSmall ? dot32_small(q[2 * g], x0, q[2 * g + 1], x1)
                               : dot32(q[2 * g], x0, q[2 * g + 1], x1);
    isum = vmlaq_n_s32(isum, d, sc[g]);
  }
  return vaddvq_s32(isum);
}

// ---- q4_K and q5_K: 8 sub-blocks of 32, x = d * sc * q - dmin * mn ----

// The 8 scales and 8 mins of a super-block's 12 scale bytes s (k4_scale_min), lane j each: for
// j < 4 the low 6 bits of s[j] / s[j + 4]; for j >= 4 the low / high nibble of s[j + 4] with
// the top 2 bits of s[j - 4] / s[j] above it. ~10 vector ops instead of ~80 scalar ones.
struct K4ScalesMins {
  uint8x8_t sc, mn;
};
[[gnu::always_inline]] inline K4ScalesMins k4_scales_mins(const uint8_t* s) noexcept {
  const uint8x8_t x = vld1_u8(s);                       // s0..s7
  const uint8x8_t lo = vand_u8(x, vdup_n_u8(63));       // j < 4: scales, then mins
  const uint8x8_t top = vshl_n_u8(vshr_n_u8(x, 6), 4);  // j >= 4: the top bits of both
  const uint8x8_t s8 = vreinterpret_u8_u32(
      vdup_n_u32(vget_lane_u32(vreinterpret_u32_u8(vld1_u8(s + 4)), 1)));  // s8..s11 twice
  const uint8x8_t first_half = vreinterpret_u8_u64(vdup_n_u64(0x00000000FFFFFFFFull));
  const uint8x8_t nibbles = vbsl_u8(first_half, vand_u8(s8, vdup_n_u8(0x0F)), vshr_n_u8(s8, 4));
  const uint8x8_t hi = vorr_u8(nibbles, top);  // j >= 4: scales, then mins
  const uint32x2_t lo32 = vreinterpret_u32_u8(lo), hi32 = vreinterpret_u32_u8(hi);
  return {vreinterpret_u8_u32(vzip1_u32(lo32, hi32)), vreinterpret_u8_u32(vzip2_u32(lo32, hi32))};
}

template <class Block>
struct K4 : Q8KTrait {
  static constexpr bool kFifthBit = std::is_same_v<Block, BlockQ5_K>;
  using WBlock = Block;
  struct W {
    int8x16_t q[16];  // element 16k..16k+15 (0..15, or 0..31 with the fifth bit)
    int32_t sc[8];
    int16x8_t mn;
    float d, dmin;
  };
  // qs[32j + l]: element 64j + l in the low nibble, 64j + 32 + l in the high one; q5_K's qh[l]
  // bit 2j + h: the fifth bit of element 64j + 32h + l.
  [[gnu::always_inline]] static W load_w(const WBlock& b) noexcept {
    W w;
    const uint8x16_t low4 = vdupq_n_u8(0x0F), sixteen = vdupq_n_u8(0x10);
    uint8x16_t qh[2];
    if constexpr (kFifthBit) qh[0] = load_u8(b.qh), qh[1] = load_u8(b.qh + 16);
    for (int j = 0; j < 4; ++j) {
      for (int h = 0; h < 2; ++h) {
        const uint8x16_t v = load_u8(b.qs + 32 * j + 16 * h);
        uint8x16_t lo = vandq_u8(v, low4), hi = vshrq_n_u8(v, 4);
        if constexpr (kFifthBit) {
          lo = vorrq_u8(lo, vandq_u8(vtstq_u8(qh[h], vdupq_n_u8(1u << (2 * j))), sixteen));
          hi = vorrq_u8(hi, vandq_u8(vtstq_u8(qh[h], vdupq_n_u8(2u << (2 * j))), sixteen));
        }
        w.q[4 * j + h] = vreinterpretq_s8_u8(lo);
        w.q[4 * j + 2 + h] = vreinterpretq_s8_u8(hi);
      }
    }
    const K4ScalesMins s = k4_scales_mins(b.scales);
    store_i32(s.sc, w.sc);
    w.mn = vreinterpretq_s16_u16(vmovl_u8(s.mn));
    w.d = f16(b.d);
    w.dmin = f16(b.dmin);
    return w;
  }
  [[gnu::always_inline]] static void step(Acc& acc, const W& w, const Act& a) noexcept {
    const int32_t isum = scaled_groups32<true>(w.q, a->qs, w.sc);
    // the mins against the sub-blocks' sums (pairs of the 16-element bsums)
    const int16x8_t sums = vpaddq_s16(vld1q_s16(a->bsums), vld1q_s16(a->bsums + 8));
    const int32_t c =
        vaddvq_s32(vmlal_high_s16(vmull_s16(vget_low_s16(w.mn), vget_low_s16(sums)), w.mn, sums));
    acc += (a->d * w.d) * static_cast<float>(isum) - (a->d * w.dmin) * static_cast<float>(c);
  }
};

using Q4_K = K4<BlockQ4_K>;
using Q5_K = K4<BlockQ5_K>;

// ---- q6_K: 16 groups of 16, x = d * scale * (q - 32) ----

struct Q6_K : Q8KTrait {
  using WBlock = BlockQ6_K;
  struct W {
    int8x16_t q[16];  // level - 32 of group g (elements 16g..16g+15)
    const int8_t* scales;
    float d;
  };
  // Element 128h + 32k + l: the low (k < 2) or high nibble of ql[64h + 32(k & 1) + l], bits 2k,
  // 2k + 1 of qh[32h + l] above it.
  [[gnu::always_inline]] static W load_w(const WBlock& b) noexcept {
    W w;
    const uint8x16_t low4 = vdupq_n_u8(0x0F), top2 = vdupq_n_u8(0x30);
    const int8x16_t bias = vdupq_n_s8(32);
    for (int h = 0; h < 2; ++h) {
      for (int i = 0; i < 2; ++i) {  // l = 16i..16i+15
        const uint8x16_t l0 = load_u8(b.ql + 64 * h + 16 * i);
        const uint8x16_t l1 = load_u8(b.ql + 64 * h + 32 + 16 * i);
        const uint8x16_t qh = load_u8(b.qh + 32 * h + 16 * i);
        const uint8x16_t u[4] = {vorrq_u8(vandq_u8(l0, low4), vandq_u8(vshlq_n_u8(qh, 4), top2)),
                                 vorrq_u8(vandq_u8(l1, low4), vandq_u8(vshlq_n_u8(qh, 2), top2)),
                                 vorrq_u8(vshrq_n_u8(l0, 4), vandq_u8(qh, top2)),
                                 vorrq_u8(vshrq_n_u8(l1, 4), vandq_u8(vshrq_n_u8(qh, 2), top2))};
        for (int k = 0; k < 4; ++k)
          w.q[8 * h + 2 * k + i] = vsubq_s8(vreinterpretq_s8_u8(u[k]), bias);
      }
    }
    w.scales = b.scales;
    w.d = f16(b.d);
    return w;
  }
  [[gnu::always_inline]] static void step(Acc& acc, const W& w, const Act& a) noexcept {
    acc += (a->d * w.d) * static_cast<float>(scaled_groups16(w.q, a->qs, w.scales));
  }
};

// ---- q2_K and q3_K: 16 groups of 16 with their own scales ----
//
// Element 128h + 32k + l: bits 2k, 2k + 1 of qs[32h + l]; q3_K's third bit is bit 4h + k of
// hmask[l]. Levels as signed bytes: q2_K's 0..3 (its mins against the activation's group sums),
// q3_K's level - 4 (-4..3, so the reference's 4 x scale x sum correction is already in them).
template <class Block>
struct K16 : Q8KTrait {
  static constexpr bool kQ3 = std::is_same_v<Block, BlockQ3_K>;
  using WBlock = Block;
  struct W {
    int8x16_t q[16];  // group g: elements 16g..16g+15
    int32_t sc[16];
    int16x8_t mn[2];  // q2_K: the groups' mins
    float d, dmin;
  };
  [[gnu::always_inline]] static W load_w(const WBlock& b) noexcept {
    W w;
    const uint8x16_t three = vdupq_n_u8(3), four = vdupq_n_u8(4);
    for (int h = 0; h < 2; ++h) {
      for (int i = 0; i < 2; ++i) {
        const uint8x16_t v = load_u8(b.qs + 32 * h + 16 * i);
        const uint8x16_t u[4] = {vandq_u8(v, three), vandq_u8(vshrq_n_u8(v, 2), three),
                                 vandq_u8(vshrq_n_u8(v, 4), three), vshrq_n_u8(v, 6)};
        for (int k = 0; k < 4; ++k) {
          int8x16_t q = vreinterpretq_s8_u8(u[k]);
          if constexpr (kQ3) {
            const uint8x16_t third =
                vandq_u8(vtstq_u8(load_u8(b.hmask + 16 * i), vdupq_n_u8(1u << (4 * h + k))), four);
            q = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(u[k], third)), vreinterpretq_s8_u8(four));
          }
          w.q[8 * h + 2 * k + i] = q;
        }
      }
    }
    if constexpr (kQ3) {
      // k3_scale: the low nibbles of s0..s7 (groups 0-7), their high nibbles (8-15), and bits
      // 2 (g / 4), + 1 of s[8 + g % 4] above them; less 32
      const uint8x8_t x = vld1_u8(b.scales);
      const uint8x16_t low = vcombine_u8(vand_u8(x, vdup_n_u8(0x0F)), vshr_n_u8(x, 4));
      uint32_t h;
      std::memcpy(&h, b.scales + 8, 4);
      const int8x16_t down = {0, 0, 0, 0, -2, -2, -2, -2, -4, -4, -4, -4, -6, -6, -6, -6};
      const uint8x16_t high =
          vandq_u8(vshlq_u8(vreinterpretq_u8_u32(vdupq_n_u32(h)), down), vdupq_n_u8(3));
      const uint8x16_t biased = vorrq_u8(low, vshlq_n_u8(high, 4));
      const int16x8_t s0 =
          vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(biased))), vdupq_n_s16(32));
      const int16x8_t s1 = vsubq_s16(vreinterpretq_s16_u16(vmovl_high_u8(biased)), vdupq_n_s16(32));
      vst1q_s32(w.sc, vmovl_s16(vget_low_s16(s0)));
      vst1q_s32(w.sc + 4, vmovl_high_s16(s0));
      vst1q_s32(w.sc + 8, vmovl_s16(vget_low_s16(s1)));
      vst1q_s32(w.sc + 12, vmovl_high_s16(s1));
      w.d = w.dmin = f16(b.d);
    } else {
      const uint8x16_t s = load_u8(b.scales);
      const uint8x16_t mins = vshrq_n_u8(s, 4);
      w.mn[0] = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(mins)));
      w.mn[1] = vreinterpretq_s16_u16(vmovl_high_u8(mins));
      for (int g = 0; g < 16; ++g) w.sc[g] = b.scales[g] & 0xF;
      w.d = f16(b.d);
      w.dmin = f16(b.dmin);
    }
    return w;
  }
  [[gnu::always_inline]] static void step(Acc& acc, const W& w, const Act& a) noexcept {
    const int32_t isum = scaled_groups16(w.q, a->qs, w.sc);
    if constexpr (kQ3) {
      acc += (a->d * w.d) * static_cast<float>(isum);
    } else {
      const int16x8_t s0 = vld1q_s16(a->bsums), s1 = vld1q_s16(a->bsums + 8);
      int32x4_t c = vmull_s16(vget_low_s16(w.mn[0]), vget_low_s16(s0));
      c = vmlal_high_s16(c, w.mn[0], s0);
      c = vmlal_s16(c, vget_low_s16(w.mn[1]), vget_low_s16(s1));
      c = vmlal_high_s16(c, w.mn[1], s1);
      acc += (a->d * w.d) * static_cast<float>(isum) -
             (a->d * w.dmin) * static_cast<float>(vaddvq_s32(c));
    }
  }
};

using Q2_K = K16<BlockQ2_K>;
using Q3_K = K16<BlockQ3_K>;

// ---- iq4_xs: 8 groups of 32 iq4_nl levels, a 6-bit scale each ----

struct IQ4_XS : Q8KTrait {
  using WBlock = BlockIQ4_XS;
  struct W {
    int8x16_t q[16];  // elements 16k..16k+15
    int32_t scale[8];
    float d;
  };
  // Group g's 16 bytes: element 32g + j in the low nibble of byte j, 32g + 16 + j in the high.
  [[gnu::always_inline]] static W load_w(const WBlock& b) noexcept {
    W w;
    const int8x16_t levels = vld1q_s8(kIq4Values);
    for (int g = 0; g < 8; ++g) {
      const uint8x16_t v = load_u8(b.qs + 16 * g);
      w.q[2 * g] = vqtbl1q_s8(levels, vandq_u8(v, vdupq_n_u8(0x0F)));
      w.q[2 * g + 1] = vqtbl1q_s8(levels, vshrq_n_u8(v, 4));
      w.scale[g] = iq4_xs_scale(b, g) - 32;
    }
    w.d = f16(b.d);
    return w;
  }
  [[gnu::always_inline]] static void step(Acc& acc, const W& w, const Act& a) noexcept {
    acc += (w.d * a->d) * static_cast<float>(scaled_groups32<false>(w.q, a->qs, w.scale));
  }
};

// ---- ternary formats (tq1_0, tq2_0): levels t = 0..2, x = d (t - 1) ----
//
// The reference's integers: sum(t x) over the block by SDOT (or four products an int16), minus
// the activation's sum, then its f32 step.

// Trit k of each byte of v as tq1_trit does, pow holding 3^k in each byte's lane: the byte times
// 3^k mod 256 (vmul), then the high byte of three times that (vmull, the odd bytes by vuzp2).
[[gnu::always_inline]] inline uint8x16_t tq1_trits(uint8x16_t v, uint8x16_t pow) noexcept {
  const uint8x16_t shifted = vmulq_u8(v, pow);
  const uint8x8_t three = vdup_n_u8(3);
  const uint16x8_t lo = vmull_u8(vget_low_u8(shifted), three);
  const uint16x8_t hi = vmull_high_u8(shifted, vdupq_n_u8(3));
  return vuzp2q_u8(vreinterpretq_u8_u16(lo), vreinterpretq_u8_u16(hi));
}

template <class Block>
struct Ternary {
  using WBlock = Block;
  using ABlock = BlockQ8_K;
  using Acc = float;
  static constexpr size_t kElems = QK_K;
  struct Act {
    const int8_t* qs;
    int32_t sum;  // of the block's 256 bytes
    float d;
  };
  struct W {
    int8x16_t t[16];  // levels of elements 16k..16k+15
    float d;
  };

  [[gnu::always_inline]] static Act load_act(const ABlock& a) noexcept {
    return {a.qs, vaddlvq_s16(vld1q_s16(a.bsums)) + vaddlvq_s16(vld1q_s16(a.bsums + 8)), a.d};
  }
  [[gnu::always_inline]] static W load_w(const WBlock& b) noexcept {
    W w;
    uint8x16_t* t = reinterpret_cast<uint8x16_t*>(w.t);
    if constexpr (std::is_same_v<Block, BlockTQ2_0>) {
      // Element 128h + 32k + m: bits 2k, 2k + 1 of qs[32h + m].
      for (int h = 0; h < 2; ++h) {
        const uint8x16_t v0 = load_u8(b.qs + 32 * h), v1 = load_u8(b.qs + 32 * h + 16);
        const uint8x16_t three = vdupq_n_u8(3);
        t[8 * h + 0] = vandq_u8(v0, three);
        t[8 * h + 1] = vandq_u8(v1, three);
        t[8 * h + 2] = vandq_u8(vshrq_n_u8(v0, 2), three);
        t[8 * h + 3] = vandq_u8(vshrq_n_u8(v1, 2), three);
        t[8 * h + 4] = vandq_u8(vshrq_n_u8(v0, 4), three);
        t[8 * h + 5] = vandq_u8(vshrq_n_u8(v1, 4), three);
        t[8 * h + 6] = vshrq_n_u8(v0, 6);
        t[8 * h + 7] = vshrq_n_u8(v1, 6);
      }
    } else {
      // qs[0..32): trit k of byte m is element 32k + m; qs[32..48): 160 + 16k + m; qh's four
      // bytes: 240 + 4k + m (k < 4), all four of them in each 4-byte quarter of one vector.
      const uint8x16_t first0 = load_u8(b.qs), first1 = load_u8(b.qs + 16);
      const uint8x16_t second = load_u8(b.qs + 32);
      for (int k = 0; k < 5; ++k) {
        const uint8x16_t pow = vdupq_n_u8(kPow3[k]);
        t[2 * k] = tq1_trits(first0, pow);
        t[2 * k + 1] = tq1_trits(first1, pow);
        t[10 + k] = tq1_trits(second, pow);
      }
      uint32_t qh;
      std::memcpy(&qh, b.qh, 4);
      static constexpr uint8_t kQuarterPow3[16] = {1, 1, 1, 1, 3,  3,  3,  3,
                                                   9, 9, 9, 9, 27, 27, 27, 27};
      t[15] = tq1_trits(vreinterpretq_u8_u32(vdupq_n_u32(qh)), vld1q_u8(kQuarterPow3));
    }
    w.d = f16(b.d);
    return w;
  }
  [[gnu::always_inline]] static void step(Acc& acc, const W& w, const Act& a) noexcept {
    int32x4_t isum = vdupq_n_s32(0);
    for (int k = 0; k < 16; k += 2) {
      isum = vaddq_s32(isum, dot32_small(w.t[k], load_s8(a.qs + 16 * k), w.t[k + 1],
                                         load_s8(a.qs + 16 * k + 16)));
    }
    acc += static_cast<float>(vaddvq_s32(isum) - a.sum) * (a.d * w.d);
  }
  static float finish(Acc acc) noexcept { return acc; }
};

using TQ1_0 = Ternary<BlockTQ1_0>;
using TQ2_0 = Ternary<BlockTQ2_0>;

}  // namespace oxi::kernels::OXI_ARCH_NS::simd

#endif  // OXI_ARCH_NEON
