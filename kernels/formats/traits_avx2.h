// AVX2 block-dot traits (interface in traits_scalar.h). Weights are unpacked to unsigned bytes
// so _mm256_maddubs_epi16 multiplies them with the signed activation bytes directly; the
// weight's zero point is removed afterwards with the activation's sums, which are computed once
// per token and block and shared by every row of the tile.
#pragma once

#if defined(OXI_ARCH_AVX2)

#include <immintrin.h>

#include <cstring>

#include "kernels/formats/traits_scalar.h"

namespace oxi::kernels::avx2::simd {

inline float f16(uint16_t h) noexcept {
  return _cvtsh_ss(h);
}

inline float hsum(__m256 v) noexcept {
  return xsimd::hadd(xsimd::batch<float, Arch>(v));
}

inline int32_t hsum_i32(__m128i v) noexcept {
  v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x4E));
  v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0xB1));
  return _mm_cvtsi128_si32(v);
}

inline int32_t hsum_i32(__m256i v) noexcept {
  return hsum_i32(_mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)));
}

inline __m256i load256(const void* p) noexcept {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// Bytes 0..15: low nibbles of qs[0..15]; bytes 16..31: high nibbles (the 32-block order).
// The 16 bytes are loaded into both halves and only the upper half is shifted: no cross-lane
// shuffle, which made q4_0 matvec ~15 % slower.
inline __m256i nibbles32(const uint8_t* qs) noexcept {
  const __m256i both =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  const __m256i shifted = _mm256_srlv_epi64(both, _mm256_setr_epi64x(0, 0, 4, 4));
  return _mm256_and_si256(shifted, _mm256_set1_epi8(0x0F));
}

// Byte j = 0x10 where bit j of the little-endian 32-bit mask is set.
inline __m256i bits_to_0x10(const uint8_t* qh) noexcept {
  uint32_t m;
  std::memcpy(&m, qh, 4);
  const __m256i spread =
      _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(m)),
                          _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101,
                                             0x0202020202020202, 0x0303030303030303));
  const __m256i all_but_bit = _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe);
  const __m256i set =
      _mm256_cmpeq_epi8(_mm256_or_si256(spread, all_but_bit), _mm256_set1_epi64x(-1));
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// 8 int32 lanes, each the sum of 4 adjacent byte products u * x (u unsigned, x signed).
inline __m256i dot_u8s8(__m256i u, __m256i x) noexcept {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1));
}

// Unsigned 32-element weights with a zero point `kZero` against q8_0 activations.
template <class Block, int kZero>
struct Sym32 {
  using WBlock = Block;
  using ABlock = BlockQ8_0;
  static constexpr size_t kElems = QK;
  struct Act {
    __m256i q;
    __m256i zero_sum;  // kZero * (sums of 4 adjacent q): the lanes dot_u8s8 produces
    float d;
  };
  struct W {
    __m256i u;
    float d;
  };
  struct Acc {
    __m256 v = _mm256_setzero_ps();
  };

  static Act load_act(const ABlock& a) noexcept {
    const __m256i q = load256(a.qs);
    return {q, dot_u8s8(_mm256_set1_epi8(kZero), q), f16(a.d)};
  }
  static W load_w(const WBlock& b) noexcept {
    if constexpr (std::is_same_v<Block, BlockQ5_0>) {
      return {_mm256_or_si256(nibbles32(b.qs), bits_to_0x10(b.qh)), f16(b.d)};
    } else {
      return {nibbles32(b.qs), f16(b.d)};
    }
  }
  static void step(Acc& acc, const W& w, const Act& a) noexcept {
    const __m256i p = _mm256_sub_epi32(dot_u8s8(w.u, a.q), a.zero_sum);
    acc.v = _mm256_fmadd_ps(_mm256_set1_ps(w.d * a.d), _mm256_cvtepi32_ps(p), acc.v);
  }
  static float finish(const Acc& acc) noexcept { return hsum(acc.v); }
};

// q8_0 weights are signed: |w| goes in the unsigned operand (so -128 reads as 128) and w's sign
// moves onto the activation, which never holds -128.
struct Q8_0 {
  using WBlock = BlockQ8_0;
  using ABlock = BlockQ8_0;
  static constexpr size_t kElems = QK;
  struct Act {
    __m256i q;
    float d;
  };
  struct W {
    __m256i q;
    float d;
  };
  struct Acc {
    __m256 v = _mm256_setzero_ps();
  };

  static Act load_act(const ABlock& a) noexcept { return {load256(a.qs), f16(a.d)}; }
  static W load_w(const WBlock& b) noexcept { return {load256(b.qs), f16(b.d)}; }
  static void step(Acc& acc, const W& w, const Act& a) noexcept {
    const __m256i p = dot_u8s8(_mm256_sign_epi8(w.q, w.q), _mm256_sign_epi8(a.q, w.q));
    acc.v = _mm256_fmadd_ps(_mm256_set1_ps(w.d * a.d), _mm256_cvtepi32_ps(p), acc.v);
  }
  static float finish(const Acc& acc) noexcept { return hsum(acc.v); }
};

// q4_1 / q5_1 against q8_1: the min term m * s is accumulated separately.
template <class Block>
struct Min32 {
  using WBlock = Block;
  using ABlock = BlockQ8_1;
  static constexpr size_t kElems = QK;
  struct Act {
    __m256i q;
    float d;
    float s;
  };
  struct W {
    __m256i u;
    float d;
    float m;
  };
  struct Acc {
    __m256 v = _mm256_setzero_ps();
    float mins = 0;
  };

  static Act load_act(const ABlock& a) noexcept { return {load256(a.qs), f16(a.d), f16(a.s)}; }
  static W load_w(const WBlock& b) noexcept {
    if constexpr (std::is_same_v<Block, BlockQ5_1>) {
      return {_mm256_or_si256(nibbles32(b.qs), bits_to_0x10(b.qh)), f16(b.d), f16(b.m)};
    } else {
      return {nibbles32(b.qs), f16(b.d), f16(b.m)};
    }
  }
  static void step(Acc& acc, const W& w, const Act& a) noexcept {
    const __m256i p = dot_u8s8(w.u, a.q);
    acc.v = _mm256_fmadd_ps(_mm256_set1_ps(w.d * a.d), _mm256_cvtepi32_ps(p), acc.v);
    acc.mins += w.m * a.s;
  }
  static float finish(const Acc& acc) noexcept { return hsum(acc.v) + acc.mins; }
};

using Q4_0 = Sym32<BlockQ4_0, 8>;
using Q5_0 = Sym32<BlockQ5_0, 16>;
using Q4_1 = Min32<BlockQ4_1>;
using Q5_1 = Min32<BlockQ5_1>;

// ---- K-quants: SIMD unpack to ref::KW, SIMD integer dot, the reference's f32 combine ----

using ref::KW;

// Bytes of v shifted right by k bits (srli_epi16 drags bits across bytes; the mask drops them).
inline __m256i srl8(__m256i v, int k) noexcept {
  return _mm256_and_si256(_mm256_srli_epi16(v, k), _mm256_set1_epi8(static_cast<char>(0xFF >> k)));
}

inline void store(uint8_t* p, __m256i v) noexcept {
  _mm256_store_si256(reinterpret_cast<__m256i*>(p), v);
}

inline void unpack_q2_K(const BlockQ2_K& b, KW& w) noexcept {
  const __m256i three = _mm256_set1_epi8(3);
  for (int half = 0; half < 2; ++half) {
    const __m256i q = load256(b.qs + 32 * half);
    for (int j = 0; j < 4; ++j) {
      store(w.u + 128 * half + 32 * j, _mm256_and_si256(srl8(q, 2 * j), three));
    }
  }
  int sc[16];
  for (int g = 0; g < 16; ++g) {
    sc[g] = b.scales[g] & 0xF;
    w.corr[g] = b.scales[g] >> 4;
  }
  ref::set_group_scales(w, sc);
  w.d = f16(b.d);
  w.dmin = f16(b.dmin);
}

inline void unpack_q3_K(const BlockQ3_K& b, KW& w) noexcept {
  const __m256i three = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
  const __m256i hm = load256(b.hmask);
  for (int half = 0; half < 2; ++half) {
    const __m256i q = load256(b.qs + 32 * half);
    for (int j = 0; j < 4; ++j) {
      const __m256i low = _mm256_and_si256(srl8(q, 2 * j), three);
      const __m256i high = _mm256_and_si256(srl8(hm, 4 * half + j), one);
      store(w.u + 128 * half + 32 * j, _mm256_or_si256(low, _mm256_slli_epi16(high, 2)));
    }
  }
  int sc[16];
  for (int g = 0; g < 16; ++g) {
    sc[g] = k3_scale(b.scales, g) - 32;
    w.corr[g] = 4 * sc[g];
  }
  ref::set_group_scales(w, sc);
  w.d = w.dmin = f16(b.d);
}

inline void unpack_q5_K(const BlockQ5_K& b, KW& w) noexcept {
  const __m256i low4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
  const __m256i qh = load256(b.qh);
  for (int j = 0; j < 4; ++j) {
    const __m256i q = load256(b.qs + 32 * j);
    const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(srl8(qh, 2 * j), one), 4);
    const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(srl8(qh, 2 * j + 1), one), 4);
    store(w.u + 64 * j, _mm256_or_si256(_mm256_and_si256(q, low4), h0));
    store(w.u + 64 * j + 32, _mm256_or_si256(srl8(q, 4), h1));
  }
  ref::k4_scales(b, w);
}

inline int32_t kdot(const KW& w, const int8_t* x) noexcept {
  __m256i acc = _mm256_setzero_si256();
  for (int k = 0; k < 8; ++k) {
    const __m256i p16 = _mm256_maddubs_epi16(load256(w.u + 32 * k), load256(x + 32 * k));
    const __m256i sc = _mm256_load_si256(reinterpret_cast<const __m256i*>(w.scv[k]));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p16, sc));
  }
  return hsum_i32(acc);
}

using Q2_K = ref::KQuant<BlockQ2_K, unpack_q2_K, kdot, true>;
using Q3_K = ref::KQuant<BlockQ3_K, unpack_q3_K, kdot, false>;
using Q5_K = ref::KQuant<BlockQ5_K, unpack_q5_K, kdot, true>;

// ---- q4_K and q6_K (the formats of Q4_K_M files) straight from the block ----
//
// No unpacked copy: the weights are expanded in registers and the group scales enter through
// _mm256_madd_epi16. The integer sums and the f32 combine are those of ref::KQuant, so the
// results equal the reference's.

// Every int16 lane = lane k of the 8 int16 in each half of v.
inline __m256i broadcast_i16(__m256i v, int k) noexcept {
  return _mm256_shuffle_epi8(v, _mm256_set1_epi16(static_cast<int16_t>(0x0100 + 0x0202 * k)));
}

struct ActK {
  const BlockQ8_K* q8;
  __m128i sums32;  // sums of the 8 32-element sub-blocks (bsums pairs), int16
};

struct Q4_K {
  using WBlock = BlockQ4_K;
  using ABlock = BlockQ8_K;
  static constexpr size_t kElems = QK_K;
  using Act = ActK;
  struct W {
    const uint8_t* qs;
    __m256i scales;  // 8 sub-block scales as int16, in both halves
    __m128i mins;    // 8 sub-block mins as int16
    float d;
    float dmin;
  };
  using Acc = float;

  static Act load_act(const ABlock& a) noexcept {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.bsums));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.bsums + 8));
    return {&a, _mm_hadd_epi16(lo, hi)};
  }
  // The 12 scale bytes as three little-endian words: sub-blocks 0-3 keep their 6 bits in
  // words 0 (scales) and 1 (mins); 4-7 take 4 bits from word 2 and 2 bits from the tops of
  // words 0 / 1 (k4_scale_min, four sub-blocks at a time).
  static W load_w(const WBlock& b) noexcept {
    uint32_t w[3];
    std::memcpy(w, b.scales, sizeof(w));
    const uint32_t sc_lo = w[0] & 0x3F3F3F3F;
    const uint32_t mn_lo = w[1] & 0x3F3F3F3F;
    const uint32_t sc_hi = (w[2] & 0x0F0F0F0F) | (((w[0] >> 6) & 0x03030303) << 4);
    const uint32_t mn_hi = ((w[2] >> 4) & 0x0F0F0F0F) | (((w[1] >> 6) & 0x03030303) << 4);
    const __m128i sc = _mm_cvtepu8_epi16(_mm_setr_epi32(static_cast<int>(sc_lo),
                                                        static_cast<int>(sc_hi), 0, 0));
    const __m128i mn = _mm_cvtepu8_epi16(_mm_setr_epi32(static_cast<int>(mn_lo),
                                                        static_cast<int>(mn_hi), 0, 0));
    return {b.qs, _mm256_broadcastsi128_si256(sc), mn, f16(b.d), f16(b.dmin)};
  }
  static void step(Acc& acc, const W& w, const Act& a) noexcept {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256i sum = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {  // 64 elements: sub-block 2j in the low nibbles, 2j+1 high
      const __m256i q = load256(w.qs + 32 * j);
      const __m256i lo = _mm256_and_si256(q, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
      const __m256i p_lo = _mm256_maddubs_epi16(lo, load256(a.q8->qs + 64 * j));
      const __m256i p_hi = _mm256_maddubs_epi16(hi, load256(a.q8->qs + 64 * j + 32));
      sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p_lo, broadcast_i16(w.scales, 2 * j)));
      sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p_hi, broadcast_i16(w.scales, 2 * j + 1)));
    }
    const int32_t isum = hsum_i32(sum);
    const int32_t c = hsum_i32(_mm_madd_epi16(w.mins, a.sums32));
    acc += (a.q8->d * w.d) * static_cast<float>(isum) -
           (a.q8->d * w.dmin) * static_cast<float>(c);
  }
  static float finish(Acc acc) noexcept { return acc; }
};

struct Q6_K {
  using WBlock = BlockQ6_K;
  using ABlock = BlockQ8_K;
  static constexpr size_t kElems = QK_K;
  using Act = const BlockQ8_K*;
  struct W {
    const BlockQ6_K* b;
    float d;
  };
  using Acc = float;

  static Act load_act(const ABlock& a) noexcept { return &a; }
  static W load_w(const WBlock& b) noexcept { return {&b, f16(b.d)}; }
  static void step(Acc& acc, const W& w, const Act& a) noexcept {
    const BlockQ6_K& b = *w.b;
    const __m256i low4 = _mm256_set1_epi8(0x0F), three = _mm256_set1_epi8(3);
    const __m128i scales = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    __m256i sum = _mm256_setzero_si256();
    for (int half = 0; half < 2; ++half) {  // 128 elements: 4 chunks of 32 = 8 groups of 16
      const __m256i ql0 = load256(b.ql + 64 * half);
      const __m256i ql1 = load256(b.ql + 64 * half + 32);
      const __m256i qh = load256(b.qh + 32 * half);
      const __m256i lows[4] = {_mm256_and_si256(ql0, low4), _mm256_and_si256(ql1, low4),
                               srl8(ql0, 4), srl8(ql1, 4)};
      for (int k = 0; k < 4; ++k) {
        const __m256i high = _mm256_slli_epi16(_mm256_and_si256(srl8(qh, 2 * k), three), 4);
        const __m256i u = _mm256_or_si256(lows[k], high);  // level + 32, 0..63
        const __m256i p = _mm256_maddubs_epi16(u, load256(a->qs + 128 * half + 32 * k));
        // int16 lanes 0-7 hold group 2c, lanes 8-15 group 2c+1 (c = the 32-element chunk)
        const int c = 4 * half + k;
        const __m128i pick = _mm_setr_epi8(
            static_cast<char>(2 * c), static_cast<char>(2 * c), static_cast<char>(2 * c),
            static_cast<char>(2 * c), static_cast<char>(2 * c), static_cast<char>(2 * c),
            static_cast<char>(2 * c), static_cast<char>(2 * c), static_cast<char>(2 * c + 1),
            static_cast<char>(2 * c + 1), static_cast<char>(2 * c + 1),
            static_cast<char>(2 * c + 1), static_cast<char>(2 * c + 1),
            static_cast<char>(2 * c + 1), static_cast<char>(2 * c + 1),
            static_cast<char>(2 * c + 1));
        const __m256i sc = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, pick));
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p, sc));
      }
    }
    const int32_t isum = hsum_i32(sum);
    // the +32 bias of every level: 32 * sum over groups of scale * bsum
    const __m256i bsums = load256(a->bsums);
    const int32_t c = 32 * hsum_i32(_mm256_madd_epi16(_mm256_cvtepi8_epi16(scales), bsums));
    acc += (a->d * w.d) * static_cast<float>(isum - c);
  }
  static float finish(Acc acc) noexcept { return acc; }
};

}  // namespace oxi::kernels::avx2::simd

#endif  // OXI_ARCH_AVX2
