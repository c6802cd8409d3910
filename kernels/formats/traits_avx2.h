// AVX2 block-dot traits (interface in traits_scalar.h). Weights are unpacked to unsigned bytes
// so _mm256_maddubs_epi16 multiplies them with the signed activation bytes directly; the
// weight's zero point is removed afterwards with the activation's sums, which are computed once
// per token and block and shared by every row of the tile.
#pragma once

#if defined(OXI_ARCH_AVX2)

#include <immintrin.h>

#include <cstring>

#include "kernels/formats/prefetch.h"  // StreamRequests
#include "kernels/formats/traits_scalar.h"

namespace oxi::kernels::OXI_ARCH_NS::simd {

inline float f16(uint16_t h) noexcept {
  return _cvtsh_ss(h);
}

inline float hsum(__m256 v) noexcept {
  return xsimd::hadd(xsimd::batch<float, Arch>(v));
}

// hsum of 8 vectors at once (12 instructions): lane i = hsum(v[i]) bit for bit, the same
// additions in the same order (the two halves, then adjacent pairs, then the two pair sums).
inline __m256 hsum8(const __m256 (&v)[8]) noexcept {
  __m256 h[4];  // v[i] plus its other half in the lower 128 bits, v[i + 4]'s in the upper
  for (int i = 0; i < 4; ++i) {
    h[i] = _mm256_add_ps(_mm256_permute2f128_ps(v[i], v[i + 4], 0x20),
                         _mm256_permute2f128_ps(v[i], v[i + 4], 0x31));
  }
  return _mm256_hadd_ps(_mm256_hadd_ps(h[0], h[1]), _mm256_hadd_ps(h[2], h[3]));
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

// A load the compiler keeps in one register. Where a loaded value feeds two or more
// instructions, GCC folds the load into each of them (vpand mem, vpsrlw mem): the same bytes
// loaded twice or four times, in loops whose weight and activation loads are most of the work.
// In cache, one core: q4_K_r8 42 -> 44 GB/s, 32 -> 38 GB/s when the matrix is in L3
// (docs/benchmarks.md, nineteenth session).
inline __m256i load256_once(const void* p) noexcept {
  __m256i v = load256(p);
  asm("" : "+v"(v));
  return v;
}

#if defined(OXI_ARCH_AVX512)
// load256_once for 64 bytes.
inline __m512i load512_once(const void* p) noexcept {
  __m512i v = _mm512_loadu_si512(p);
  asm("" : "+v"(v));
  return v;
}
#endif

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

// Whether this build has VNNI dot products (the avx512 instruction set, kernels/arch.h). The
// helpers below branch on it with `if constexpr`: the other branch is never compiled to code.
#if defined(OXI_ARCH_AVX512)
inline constexpr bool kVnni = true;
#else
inline constexpr bool kVnni = false;
#endif

// acc + dot_u8s8(u, x): one VNNI instruction on avx512 (maddubs, madd and add in one). The sums
// are the same wherever maddubs does not saturate, which every caller's operand ranges ensure.
inline __m256i add_dot_u8s8(__m256i acc, __m256i u, __m256i x) noexcept {
  if constexpr (kVnni)
    return _mm256_dpbusd_epi32(acc, u, x);
  else
    return _mm256_add_epi32(acc, dot_u8s8(u, x));
}

// A running sum of byte products u * x (u unsigned, x signed) per 4-byte lane, over the few
// steps of a repacked tile (q4_0_r16, q4_k_r8). avx512: int32 lanes, one VNNI instruction a
// step. Else the maddubs int16 pairs, added as int16 (the callers' ranges keep every pair sum
// below 2^15) and widened once at the end: two instructions a step instead of three.
struct ByteDots {
  static constexpr bool kInt32 = kVnni;
  __m256i v = _mm256_setzero_si256();

  void add(__m256i u, __m256i x) noexcept {
    if constexpr (kInt32)
      v = _mm256_dpbusd_epi32(v, u, x);
    else
      v = _mm256_add_epi16(v, _mm256_maddubs_epi16(u, x));
  }
  // int32 lanes: each the sum of its lane's products
  __m256i lanes() const noexcept {
    if constexpr (kInt32)
      return v;
    else
      return _mm256_madd_epi16(v, _mm256_set1_epi16(1));
  }
  // lanes() times a per-lane scale 0..32767, given as int32 when kInt32, else as the int16 pair
  // (s, s)
  __m256i times(__m256i scale) const noexcept {
    if constexpr (kInt32)
      return _mm256_mullo_epi32(v, scale);
    else
      return _mm256_madd_epi16(v, scale);
  }
};

// ByteDots over packed 4-bit weights (q4_0_r16, q4_k_r8): each byte's low nibble against one
// activation vector, its high nibble against another. With int32 lanes (kHighInPlace) the high
// nibbles enter unshifted, as 16 x their value (byte & 0xF0: one op instead of a shift and a
// mask), into sums of their own that sum() divides by 16 once: exact, their lanes are multiples
// of 16 (at most 240 x 127 x 4 per step). Not with maddubs' int16 pairs: those would saturate.
struct NibbleDots {
  static constexpr bool kHighInPlace = ByteDots::kInt32;
  // One weight vector split once, for every token's add.
  struct Split {
    __m256i low, high;  // high: 16 x the nibble when kHighInPlace, else the nibble
  };
  static Split split(__m256i q) noexcept {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    if constexpr (kHighInPlace)
      return {_mm256_and_si256(q, low4), _mm256_andnot_si256(low4, q)};
    else
      return {_mm256_and_si256(q, low4), _mm256_and_si256(_mm256_srli_epi16(q, 4), low4)};
  }

  ByteDots low, high;  // high: only used when kHighInPlace

  void add(const Split& q, __m256i x_low, __m256i x_high) noexcept {
    low.add(q.low, x_low);
    (kHighInPlace ? high : low).add(q.high, x_high);
  }
  // All products, as one ByteDots.
  ByteDots sum() const noexcept {
    if constexpr (!kHighInPlace) return low;
    ByteDots s = low;
    s.v = _mm256_add_epi32(s.v, _mm256_srai_epi32(high.v, 4));
    return s;
  }
};

// acc + _mm256_madd_epi16(a, b): one VNNI instruction on avx512 (both wrap alike).
inline __m256i add_madd_i16(__m256i acc, __m256i a, __m256i b) noexcept {
  if constexpr (kVnni)
    return _mm256_dpwssd_epi32(acc, a, b);
  else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
}

// iq4_nl / iq4_xs: one vpshufb turns 32 4-bit indices into their signed levels (kIq4Values),
// then the q8_0 sign trick (|level| <= 127), so maddubs never saturates.
inline __m256i iq4_levels(__m256i indices) noexcept {
  const __m256i table =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values)));
  return _mm256_shuffle_epi8(table, indices);
}

// int16 pairs of products of signed bytes w and x, |w| and |x| <= 127 (no saturation).
inline __m256i dot_s8s8_pairs(__m256i w, __m256i x) noexcept {
  return _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
}

// Unsigned 32-element weights with a zero point `kZero` against q8_0 activations.
template <class Block, int kZero>
struct Sym32 {
  using WBlock = Block;
  using ABlock = BlockQ8_0;
  static constexpr size_t kElems = QK;
  // load_act's zero-point sums cost about a row's step: matvec shares them across 4 rows (one
  // row per tile: plain q4_0 matvec 27 -> 20 GB/s on two threads).
  static constexpr int kMatvecRows = 4;
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

// Weights that unpack to signed bytes (q8_0, iq4_nl): |w| goes in the unsigned operand (so
// q8_0's -128 reads as 128) and w's sign moves onto the activation, which never holds -128.
template <class Block>
struct Signed32 {
  using WBlock = Block;
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
  static W load_w(const WBlock& b) noexcept {
    if constexpr (std::is_same_v<Block, BlockIQ4_NL>)
      return {iq4_levels(nibbles32(b.qs)), f16(b.d)};
    else
      return {load256(b.qs), f16(b.d)};
  }
  static void step(Acc& acc, const W& w, const Act& a) noexcept {
    const __m256i p = _mm256_madd_epi16(dot_s8s8_pairs(w.q, a.q), _mm256_set1_epi16(1));
    acc.v = _mm256_fmadd_ps(_mm256_set1_ps(w.d * a.d), _mm256_cvtepi32_ps(p), acc.v);
  }
  static float finish(const Acc& acc) noexcept { return hsum(acc.v); }
};

using Q8_0 = Signed32<BlockQ8_0>;
using IQ4_NL = Signed32<BlockIQ4_NL>;

// q4_1 / q5_1 against q8_1: the min term m * s is accumulated separately.
template <class Block>
struct Min32 {
  using WBlock = Block;
  using ABlock = BlockQ8_1;
  static constexpr size_t kElems = QK;
  static constexpr int kMatvecRows = 4;  // two scale conversions per activation block (Sym32)
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

// gemm_q tiles (QuantTile) of 32 tokens for the super-block formats whose unpacking of a row's
// block is a large share of the work, so that 32 tokens share it rather than 4. One core, 512
// rows of 2048 x 64 tokens, GMAC/s (kernel probe, alternating builds): avx512 q6_K 66 -> 80,
// q4_K 59 -> 70, q5_K 50 -> 59, iq4_xs 51 -> 71; AVX2 q6_K 46 -> 59, q4_K 48 -> 54, q5_K 37 ->
// 41, iq4_xs 41 -> 49-51, q3_K 38 -> 47, q2_K 48 -> 54. Not on avx512 for q3_K (55 -> 41) and
// q2_K (64 -> 65), nor for the 32-element formats (q4_0 41 -> 36, q8_0 39 -> 34): their blocks
// unpack cheaply. The same steps per (token, row) whatever the tile, so the same bits.
inline constexpr int kKQuantGemmTokens = 32;

// What both iq4_xs traits below share. The group scale enters through madd (int16 pairs times
// ls - 32): the super-block's integer sum of ref::IQ4_XS in 8 int32 lanes, one f32 step a block.
struct IQ4_XSBase {
  static constexpr int kGemmTokens = kKQuantGemmTokens;
  using WBlock = BlockIQ4_XS;
  using ABlock = BlockQ8_K;
  static constexpr size_t kElems = QK_K;
  struct Act {
    const int8_t* qs;
    float d;
  };
  struct Acc {
    __m256 v = _mm256_setzero_ps();
  };

  static Act load_act(const ABlock& a) noexcept { return {a.qs, a.d}; }
  static void add_block(Acc& acc, __m256i sum, float d, const Act& a) noexcept {
    acc.v = _mm256_fmadd_ps(_mm256_set1_ps(d * a.d), _mm256_cvtepi32_ps(sum), acc.v);
  }
  static float finish(const Acc& acc) noexcept { return hsum(acc.v); }
};

#if defined(OXI_ARCH_AVX512)

// iq4_xs on avx512, q6_K's way: a 64-byte vector holds groups 2k and 2k + 1, each 256-bit half
// in the 256-bit trait's order, and the int32 lanes fold to its 8 before the f32 part, so the
// results are bit-identical to it (IQ4XS.Avx512IsBitIdenticalToAvx2). No vpsignb on 512 bits:
// |level| goes in the unsigned operand, and the activation bytes under a negative level are
// negated under a mask.
struct IQ4_XS : IQ4_XSBase {
  struct W {
    __m512i level_abs[4];
    __mmask64 negative[4];
    // int16 scales ls - 32: 128-bit lanes 0-1 hold groups 0, 2, 4, 6 in int16 lanes 0-3,
    // lanes 2-3 groups 1, 3, 5, 7, so int16 k of every lane scales u[k]'s half
    __m512i scales;
    float d;
  };

  static W load_w(const WBlock& b) noexcept {
    W w;
    const __m512i table = _mm512_maskz_broadcast_i32x4(
        0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values)));
    const __m512i nibble_shift = _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4);
    for (int k = 0; k < 4; ++k) {
      // 128-bit lanes: group 2k's 16 bytes twice, group 2k + 1's twice; low nibbles from the
      // first copy, high from the second
      const __m512i both = _mm512_maskz_broadcast_i64x4(0xFF, load256(b.qs + 32 * k));
      const __m512i idx = _mm512_and_si512(
          _mm512_maskz_srlv_epi64(0xFF, _mm512_maskz_shuffle_i64x2(0xFF, both, both, 0x50),
                                  nibble_shift),
          _mm512_set1_epi8(0x0F));
      const __m512i level = _mm512_shuffle_epi8(table, idx);
      w.level_abs[k] = _mm512_abs_epi8(level);
      w.negative[k] = _mm512_movepi8_mask(level);
    }
    // ls of group g: bits 4g..4g+3 of scales_l (as a little-endian u32), bits 2g..2g+1 of
    // scales_h on top; computed in the order 0, 2, 4, 6, 1, 3, 5, 7
    uint32_t low;
    std::memcpy(&low, b.scales_l, 4);
    const __m256i low4 =
        _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(low)),
                                           _mm256_setr_epi32(0, 8, 16, 24, 4, 12, 20, 28)),
                         _mm256_set1_epi32(0xF));
    const __m256i high2 =
        _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(b.scales_h),
                                           _mm256_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14)),
                         _mm256_set1_epi32(3));
    const __m256i ls =
        _mm256_sub_epi32(_mm256_or_si256(low4, _mm256_slli_epi32(high2, 4)), _mm256_set1_epi32(32));
    // int16 per 128-bit lane: [even groups twice], [odd groups twice]; then lanes 0, 0, 1, 1
    const __m512i packed = _mm512_maskz_broadcast_i64x4(0xFF, _mm256_packs_epi32(ls, ls));
    w.scales = _mm512_maskz_shuffle_i64x2(0xFF, packed, packed, 0x50);
    w.d = f16(b.d);
    return w;
  }
  static void step(Acc& acc, const W& w, const Act& a) noexcept {
    __m512i sum = _mm512_setzero_si512();
    for (int k = 0; k < 4; ++k) {
      const __m512i x = _mm512_loadu_si512(a.qs + 64 * k);
      const __m512i x_signed = _mm512_mask_sub_epi8(x, w.negative[k], _mm512_setzero_si512(), x);
      const __m512i p = _mm512_maddubs_epi16(w.level_abs[k], x_signed);
      const __m512i sc = _mm512_shuffle_epi8(
          w.scales, _mm512_set1_epi16(static_cast<int16_t>(0x0100 + 0x0202 * k)));
      sum = _mm512_dpwssd_epi32(sum, p, sc);
    }
    const __m256i sum8 = _mm256_add_epi32(_mm512_maskz_extracti64x4_epi64(0xF, sum, 0),
                                          _mm512_maskz_extracti64x4_epi64(0xF, sum, 1));
    add_block(acc, sum8, w.d, a);
  }
};

#else

struct IQ4_XS : IQ4_XSBase {
  struct W {
    __m256i level[8];
    int16_t scale[8];
    float d;
  };

  static W load_w(const WBlock& b) noexcept {
    W w;
    for (int g = 0; g < 8; ++g) {
      w.level[g] = iq4_levels(nibbles32(b.qs + 16 * g));
      w.scale[g] = static_cast<int16_t>(iq4_xs_scale(b, g) - 32);
    }
    w.d = f16(b.d);
    return w;
  }
  static void step(Acc& acc, const W& w, const Act& a) noexcept {
    __m256i sum = _mm256_setzero_si256();
    for (int g = 0; g < 8; ++g) {
      const __m256i pairs = dot_s8s8_pairs(w.level[g], load256(a.qs + QK * g));
      sum = add_madd_i16(sum, pairs, _mm256_set1_epi16(w.scale[g]));
    }
    add_block(acc, sum, w.d, a);
  }
};

#endif  // OXI_ARCH_AVX512

// f32 accumulator of a K-quant row: the lanes are summed in finish.
struct AccK {
  __m256 v = _mm256_setzero_ps();
};

inline float finish_k(const AccK& acc) noexcept {
  return hsum(acc.v);
}

// ---- q2_K and q3_K straight from the block ----
//
// 16 groups of 16 weights, each with its own scale: per 32 weights one maddubs against the
// activation, and one madd with the two groups' scales (int16 lanes 0-7 the first group's,
// 8-15 the second's), all in registers. The integers are ref::KQuant's; a block's int32 lanes
// meet its scales in f32 lanes, summed across once a row (finish), not twice a block.
// (These used to unpack each super-block into ref::KW in memory, 128 int16 scale copies written
// one by one, and read it back: a q3_K TinyLlama-shaped decode at ~35 % of the read bandwidth.)

// Bytes of v shifted right by k bits (srli_epi16 drags bits across bytes; the mask drops them).
inline __m256i srl8(__m256i v, int k) noexcept {
  return _mm256_and_si256(_mm256_srli_epi16(v, k), _mm256_set1_epi8(static_cast<char>(0xFF >> k)));
}

// q2_K (Block = BlockQ2_K: x = d * sc * u - dmin * m, u 2 bits) and q3_K (BlockQ3_K: x = d * sc *
// (u - 4), u 2 bits in qs and a third in hmask, sc a signed 6-bit scale).
template <class Block>
struct K16Direct {
  static constexpr bool kMins = std::is_same_v<Block, BlockQ2_K>;
#if !defined(OXI_ARCH_AVX512)
  static constexpr int kGemmTokens = kKQuantGemmTokens;
#endif
  using WBlock = Block;
  using ABlock = BlockQ8_K;
  static constexpr size_t kElems = QK_K;
  struct Act {
    const int8_t* qs;
    __m256i bsums;  // the 16 group sums, int16
    float d;
  };
  struct W {
    const Block* b;
    __m256i scales;  // int16 lane g: group g's scale
    __m256i corr;    // int16 lane g: what meets group g's activation sum (m, or 4 * sc)
    float d, dmin;
  };
  using Acc = AccK;

  static Act load_act(const ABlock& a) noexcept { return {a.qs, load256(a.bsums), a.d}; }
  static W load_w(const WBlock& b) noexcept {
    W w;
    w.b = &b;
    if constexpr (kMins) {
      const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
      const __m128i low4 = _mm_set1_epi8(0x0F);
      w.scales = _mm256_cvtepu8_epi16(_mm_and_si128(s, low4));
      w.corr = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), low4));
      w.d = f16(b.d);
      w.dmin = f16(b.dmin);
    } else {
      // k3_scale for the 16 groups at once: the low 4 bits of group g are nibble g / 8 of
      // byte g % 8, the top 2 bits bits 2 (g / 4) of byte 8 + g % 4
      // (the 16 bytes that end with them, moved down: no byte past the block is read, and no
      // copy through memory, whose narrower stores a 16-byte load cannot forward from)
      static_assert(offsetof(BlockQ3_K, scales) >= 4);
      const __m128i v = _mm_srli_si128(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales + sizeof(b.scales) - 16)), 4);
      const __m128i low4 = _mm_set1_epi8(0x0F);
      const __m128i low =
          _mm_unpacklo_epi64(_mm_and_si128(v, low4), _mm_and_si128(_mm_srli_epi16(v, 4), low4));
      const __m128i tops = _mm_shuffle_epi8(
          v, _mm_setr_epi8(8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11));
      const __m128i high =
          _mm_and_si128(_mm_srlv_epi32(tops, _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3));
      w.scales = _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_or_si128(low, _mm_slli_epi16(high, 4))),
                                  _mm256_set1_epi16(32));
      w.corr = _mm256_slli_epi16(w.scales, 2);
      w.d = w.dmin = f16(b.d);
    }
    return w;
  }
  // Weights 32k .. 32k + 31 as unsigned levels u.
  static __m256i chunk(const Block& b, int k) noexcept {
    const int half = k / 4, j = k % 4;
    const __m256i low =
        _mm256_and_si256(srl8(load256(b.qs + 32 * half), 2 * j), _mm256_set1_epi8(3));
    if constexpr (kMins) {
      return low;
    } else {
      const __m256i high =
          _mm256_and_si256(srl8(load256(b.hmask), 4 * half + j), _mm256_set1_epi8(1));
      return _mm256_or_si256(low, _mm256_slli_epi16(high, 2));
    }
  }
#if defined(OXI_ARCH_AVX512)
  // Weights 32k .. 32k + 63 (chunks k and k + 1, k even: the same 32 qs bytes) on 512 bits.
  // Shifting 16-bit lanes by at most 7 leaves each byte's low bits its own.
  static __m512i chunk_pair(const Block& b, int k) noexcept {
    const int half = k / 4, j = k % 4;
    constexpr __mmask32 kHigh = 0xFFFF0000u;  // the 16-bit lanes of chunk k + 1
    const __m512i q = _mm512_maskz_broadcast_i64x4(0xFF, load256(b.qs + 32 * half));
    const __m512i low = _mm512_and_si512(
        _mm512_srlv_epi16(q, _mm512_mask_set1_epi16(_mm512_set1_epi16(static_cast<int16_t>(2 * j)),
                                                    kHigh, static_cast<int16_t>(2 * j + 2))),
        _mm512_set1_epi8(3));
    if constexpr (kMins) {
      return low;
    } else {
      const int bit = 4 * half + j;
      const __m512i h = _mm512_maskz_broadcast_i64x4(0xFF, load256(b.hmask));
      const __m512i high = _mm512_and_si512(
          _mm512_srlv_epi16(h, _mm512_mask_set1_epi16(_mm512_set1_epi16(static_cast<int16_t>(bit)),
                                                      kHigh, static_cast<int16_t>(bit + 1))),
          _mm512_set1_epi8(1));
      return _mm512_or_si512(low, _mm512_slli_epi16(high, 2));
    }
  }
  // The block's int32 sums in 8 lanes: two chunks per 64-byte vector, each chunk's pair of group
  // scales in its half (128-bit lane L of the pair k, k + 1: group 2k + L's scale) by one vpermw,
  // one vpdpwssd; the halves then fold into the 256-bit step's lanes (the same integers, so the
  // same floats: test_formats.cpp, Avx512IsBitIdenticalToAvx2).
  static __m256i block_sums(const W& w, const Act& a) noexcept {
    const __m512i lane = _mm512_set_epi16(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1,
                                          1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i scales = _mm512_maskz_broadcast_i64x4(0x0F, w.scales);  // zero-extended
    __m512i sum = _mm512_setzero_si512();
    for (int k = 0; k < 8; k += 2) {
      const __m512i sc = _mm512_permutexvar_epi16(
          _mm512_add_epi16(lane, _mm512_set1_epi16(static_cast<int16_t>(2 * k))), scales);
      const __m512i p16 =
          _mm512_maddubs_epi16(chunk_pair(*w.b, k), _mm512_loadu_si512(a.qs + 32 * k));
      sum = _mm512_dpwssd_epi32(sum, p16, sc);
    }
    return _mm256_add_epi32(_mm512_maskz_extracti64x4_epi64(0xF, sum, 0),
                            _mm512_maskz_extracti64x4_epi64(0xF, sum, 1));
  }
#else
  static __m256i block_sums(const W& w, const Act& a) noexcept {
    // int16 lanes 0-7: the low int16 of an int32 pair, 8-15: the high one
    const __m256i pick = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2,
                                          3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
    __m256i sum = _mm256_setzero_si256();
    for (int k = 0; k < 8; ++k) {
      const __m256i pair = _mm256_permutevar8x32_epi32(w.scales, _mm256_set1_epi32(k));
      const __m256i p16 = _mm256_maddubs_epi16(chunk(*w.b, k), load256(a.qs + 32 * k));
      sum = add_madd_i16(sum, p16, _mm256_shuffle_epi8(pair, pick));
    }
    return sum;
  }
#endif
  static void step(Acc& acc, const W& w, const Act& a) noexcept {
    const __m256i sum = block_sums(w, a);
    const __m256i c = _mm256_madd_epi16(w.corr, a.bsums);
    if constexpr (kMins) {
      acc.v = _mm256_fmadd_ps(_mm256_set1_ps(a.d * w.d), _mm256_cvtepi32_ps(sum), acc.v);
      acc.v = _mm256_fnmadd_ps(_mm256_set1_ps(a.d * w.dmin), _mm256_cvtepi32_ps(c), acc.v);
    } else {
      acc.v = _mm256_fmadd_ps(_mm256_set1_ps(a.d * w.d),
                              _mm256_cvtepi32_ps(_mm256_sub_epi32(sum, c)), acc.v);
    }
  }
  static float finish(const Acc& acc) noexcept {
    return finish_k(acc);
  }
};

using Q2_K = K16Direct<BlockQ2_K>;
using Q3_K = K16Direct<BlockQ3_K>;

// ---- ternary formats: levels t = 0..2 (x = d (t - 1)) against q8_K ----
//
// tq2_0's 2-bit levels come straight from the block in registers (q2_K's qs arrangement without
// scales); tq1_0's base-3 packing is unpacked into 8 vectors first (once per row and block:
// gemm_q's tokens share them, matvec keeps them in registers). Either way per 32 weights one
// maddubs (or vpdpbusd), the -1 offset as the activation's group sums, and the block's int32 lanes
// meet its scales in f32 lanes summed once a row (as the K-quant traits), not a horizontal sum and
// a scalar step a block.

// Trit k of every byte of v (tq1_trit), k given per 16-bit lane as pow = 3^k: a byte placed in
// the high half of a 16-bit lane keeps byte * 3^k mod 256 there after mullo, and mulhi by 3
// takes the integer part of three times that fraction.
inline __m256i tq1_trits(__m256i v, __m256i pow) noexcept {
  const __m256i three = _mm256_set1_epi16(3);
  const __m256i low = _mm256_mulhi_epu16(_mm256_mullo_epi16(_mm256_slli_epi16(v, 8), pow), three);
  const __m256i high = _mm256_mulhi_epu16(
      _mm256_mullo_epi16(_mm256_and_si256(v, _mm256_set1_epi16(static_cast<int16_t>(0xFF00))), pow),
      three);
  return _mm256_or_si256(low, _mm256_slli_epi16(high, 8));
}

// tq1_0's levels, 32 weights a vector.
struct TQ1Levels {
  __m256i u[8];
  float d;
};

inline TQ1Levels unpack_tq1_0(const BlockTQ1_0& b) noexcept {
  TQ1Levels w;
  // Elements 0..159: the five trits of qs[0..32).
  const __m256i first = load256(b.qs);
  for (int k = 0; k < 5; ++k)
    w.u[k] = tq1_trits(first, _mm256_set1_epi16(static_cast<int16_t>(kPow3[k])));
  // Elements 160..239 (trit k of qs[32..48) at 160 + 16k) and 240..255 (trit k of qh at
  // 240 + 4k): qs[32..48) in both 128-bit halves for trits 0-1 and 2-3, then beside qh four
  // times for trit 4 and qh's four.
  const __m128i second = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 32));
  const __m256i twice = _mm256_broadcastsi128_si256(second);
  w.u[5] = tq1_trits(twice, _mm256_setr_epi16(1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3));
  w.u[6] =
      tq1_trits(twice, _mm256_setr_epi16(9, 9, 9, 9, 9, 9, 9, 9, 27, 27, 27, 27, 27, 27, 27, 27));
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  const __m256i last = _mm256_inserti128_si256(_mm256_castsi128_si256(second),
                                               _mm_set1_epi32(static_cast<int>(qh)), 1);
  w.u[7] =
      tq1_trits(last, _mm256_setr_epi16(81, 81, 81, 81, 81, 81, 81, 81, 1, 1, 3, 3, 9, 9, 27, 27));
  w.d = f16(b.d);
  return w;
}

template <class Block>
struct TernaryDirect {
  static constexpr bool kPacked2 = std::is_same_v<Block, BlockTQ2_0>;
  using WBlock = Block;
  using ABlock = BlockQ8_K;
  static constexpr size_t kElems = QK_K;
  struct Act {
    const int8_t* qs;
    __m256i sums;  // the activation's 16-element sums, pairs added: 8 int32 lanes
    float d;
  };
  struct Unpacked {  // tq2_0: the block itself
    const BlockTQ2_0* b;
    float d;
  };
  using W = std::conditional_t<kPacked2, Unpacked, TQ1Levels>;
  using Acc = AccK;

  static Act load_act(const ABlock& a) noexcept {
    return {a.qs, _mm256_madd_epi16(load256(a.bsums), _mm256_set1_epi16(1)), a.d};
  }
  static W load_w(const WBlock& b) noexcept {
    if constexpr (kPacked2) {
      return {&b, f16(b.d)};
    } else {
      return unpack_tq1_0(b);
    }
  }
  // Levels of weights 32k .. 32k + 31 (tq2_0: bits 2 (k % 4) of qs[32 (k / 4) + i]).
  static __m256i chunk(const W& w, int k) noexcept {
    if constexpr (kPacked2)
      return _mm256_and_si256(srl8(load256(w.b->qs + 32 * (k / 4)), 2 * (k % 4)),
                              _mm256_set1_epi8(3));
    else
      return w.u[k];
  }
  // Levels of 0..2 times bytes of at most 127 in magnitude: maddubs never saturates.
  static void step(Acc& acc, const W& w, const Act& a) noexcept {
    __m256i sum = _mm256_setzero_si256();
    for (int k = 0; k < 8; ++k) sum = add_dot_u8s8(sum, chunk(w, k), load256(a.qs + 32 * k));
    acc.v = _mm256_fmadd_ps(_mm256_set1_ps(a.d * w.d),
                            _mm256_cvtepi32_ps(_mm256_sub_epi32(sum, a.sums)), acc.v);
  }
  static float finish(const Acc& acc) noexcept { return finish_k(acc); }
};

using TQ1_0 = TernaryDirect<BlockTQ1_0>;
using TQ2_0 = TernaryDirect<BlockTQ2_0>;

// ---- q4_K, q5_K and q6_K (the formats of Q4_K_M / Q5_K_M files) straight from the block ----
//
// No unpacked copy: the weights are expanded in registers and the group scales enter through
// _mm256_madd_epi16. The integer sums are those of ref::KQuant; the f32 part stays in vectors
// across blocks (one FMA per block; q4_K one more for the mins) and is summed horizontally once
// per row in finish, so only the f32 summation order differs from the reference. The previous
// traits did two horizontal sums, a scalar scale unpack and a scalar combine per block (~100
// instructions per q4_K block and row; 42 % of the read bandwidth in a Q4_K_M decode).
//
// Measured both routes (bench kernels, two threads; single core in L1/L2): q6_K this way reaches
// the read bandwidth (97-106 %; 26 -> 32 GB/s in cache), so it keeps the GGUF layout. q4_K this
// way is ~60 instructions a block (62-91 % of the bandwidth, 21 -> 24 GB/s in cache): still
// compute-bound, because every 32-element sub-block needs its own scale broadcast and madd. So
// decode repacks q4_K (q4_k_r8.h, 98-102 %, 31-36 GB/s in cache); this trait serves the rows'
// tail blocks there and q4_K wherever it is not repacked.
//
// Built as avx512, the 256-bit q6_K trait's unpacked chunks and accumulators fit the 32
// registers (on AVX2 the accumulator spills to the stack), the bit merges become ternary logic
// and madd + add one vpdpwssd: in cache, one core, 2048-wide rows, 32-34 -> 41-42 GB/s. The
// avx512 build now has its own q6_K trait on 512-bit vectors (below): 42 -> 54 GB/s.

// Every int16 lane = lane k of the 8 int16 in each half of v.
inline __m256i broadcast_i16(__m256i v, int k) noexcept {
  return _mm256_shuffle_epi8(v, _mm256_set1_epi16(static_cast<int16_t>(0x0100 + 0x0202 * k)));
}

// q4_K, and q5_K (Block = BlockQ5_K: the same head, and the fifth bit of each weight from qh
// merged into the nibbles, 0..31: maddubs pairs stay below 2 x 31 x 127).
template <class Block>
struct K4Direct {
  static constexpr bool kFifthBit = std::is_same_v<Block, BlockQ5_K>;
  static constexpr int kGemmTokens = kKQuantGemmTokens;
  using WBlock = Block;
  using ABlock = BlockQ8_K;
  static constexpr size_t kElems = QK_K;
  struct Act {
    const int8_t* qs;
    __m128i sums32;  // sums of the 8 32-element sub-blocks (bsums pairs), int16
    __m128 d;        // the activation scale in every lane
  };
  struct W {
    const uint8_t* qs;
    const uint8_t* qh;  // q5_K's fifth bits (element 64j + 32h + l: bit 2j + h of qh[l])
    __m256i scales;     // 8 sub-block scales as int16, in both halves
    __m128i mins;       // 8 sub-block mins as int16
    __m128 dd;          // lanes 0, 1: d, dmin
  };
  using Acc = AccK;

  static Act load_act(const ABlock& a) noexcept {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.bsums));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.bsums + 8));
    return {a.qs, _mm_hadd_epi16(lo, hi), _mm_set1_ps(a.d)};
  }
  // The 12 scale bytes s[0..11] -> sc[0..7], mn[0..7] in one register (k4_scale_min): for
  // j < 4, sc = s[j] & 63 and mn = s[j + 4] & 63; for j >= 4 the low 4 bits come from s[j + 4]
  // (sc: low nibble, mn: high nibble) and the top 2 bits from the tops of s[j - 4] / s[j].
  static W load_w(const WBlock& b) noexcept {
    // the first 16 bytes of the block: d, dmin, then s[0..11] at bytes 4..15
    const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&b));
    const __m128i low = _mm_shuffle_epi8(
        head, _mm_setr_epi8(4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15));
    const __m128i top = _mm_shuffle_epi8(
        head, _mm_setr_epi8(-1, -1, -1, -1, 4, 5, 6, 7, -1, -1, -1, -1, 8, 9, 10, 11));
    // dword 3 (the mins' low nibbles of j >= 4) shifted by 4; the mask drops bits from the
    // byte above
    const __m128i low_bits = _mm_and_si128(
        _mm_srlv_epi32(low, _mm_setr_epi32(0, 0, 0, 4)),
        _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 15, 15, 15, 15));
    const __m128i top_bits = _mm_and_si128(_mm_srli_epi16(top, 2), _mm_set1_epi8(0x30));
    const __m128i sm = _mm_or_si128(low_bits, top_bits);  // sc[0..7], mn[0..7]
    const __m128i sc = _mm_cvtepu8_epi16(sm);
    const __m128i mn = _mm_cvtepu8_epi16(_mm_unpackhi_epi64(sm, sm));
    uint32_t d_dmin;
    std::memcpy(&d_dmin, &b, sizeof(d_dmin));
    const uint8_t* qh = nullptr;
    if constexpr (kFifthBit) qh = b.qh;
    return {b.qs, qh, _mm256_broadcastsi128_si256(sc), mn,
            _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(d_dmin)))};
  }
  static void step(Acc& acc, const W& w, const Act& a) noexcept {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256i qh;
    if constexpr (kFifthBit) qh = load256(w.qh);
    __m256i sum = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {  // 64 elements: sub-block 2j in the low nibbles, 2j+1 high
      const __m256i q = load256(w.qs + 32 * j);
      __m256i lo = _mm256_and_si256(q, low4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
      if constexpr (kFifthBit) {  // bits 2j, 2j + 1 of each qh byte, moved to bit 4
        const __m256i bit4 = _mm256_set1_epi8(0x10);
        lo = _mm256_or_si256(lo, _mm256_and_si256(shift_bits_to_4(qh, 2 * j), bit4));
        hi = _mm256_or_si256(hi, _mm256_and_si256(shift_bits_to_4(qh, 2 * j + 1), bit4));
      }
      const __m256i p_lo = _mm256_maddubs_epi16(lo, load256(a.qs + 64 * j));
      const __m256i p_hi = _mm256_maddubs_epi16(hi, load256(a.qs + 64 * j + 32));
      sum = add_madd_i16(sum, p_lo, broadcast_i16(w.scales, 2 * j));
      sum = add_madd_i16(sum, p_hi, broadcast_i16(w.scales, 2 * j + 1));
    }
    const __m128i c = _mm_madd_epi16(w.mins, a.sums32);
    const __m128 dd = _mm_mul_ps(w.dd, a.d);  // d * d8, dmin * d8
    acc.v = _mm256_fmadd_ps(_mm256_broadcastss_ps(dd), _mm256_cvtepi32_ps(sum), acc.v);
    // the mins term in lanes 0..3 (the upper lanes of the zero-extended product stay 0)
    const __m128 m = _mm_mul_ps(_mm_shuffle_ps(dd, dd, 0x55), _mm_cvtepi32_ps(c));
    acc.v = _mm256_sub_ps(acc.v, _mm256_zextps128_ps256(m));
  }
  static float finish(const Acc& acc) noexcept { return finish_k(acc); }

 private:
  // v with bit b (0..7) of every byte at bit 4, other bits anywhere (the caller masks bit 4;
  // 16-bit shifts drag bits across bytes, but never into another byte's bit 4 from bit b).
  static __m256i shift_bits_to_4(__m256i v, int b) noexcept {
    return b <= 4 ? _mm256_slli_epi16(v, 4 - b) : _mm256_srli_epi16(v, b - 4);
  }
};

using Q4_K = K4Direct<BlockQ4_K>;
using Q5_K = K4Direct<BlockQ5_K>;

// What both q6_K traits below share: the blocks, the activation and the f32 part of a block.
struct Q6_KBase {
  using WBlock = BlockQ6_K;
  using ABlock = BlockQ8_K;
  static constexpr size_t kElems = QK_K;
  static constexpr int kGemmTokens = kKQuantGemmTokens;
  // The one-row matvec requests the page starts ahead, and with the AVX2 kernel the lines too
  // (prefetch.h, thirty-fifth session: the avx512 one streams faster without them).
#if defined(OXI_ARCH_AVX512)
  static constexpr StreamRequests kStreamRequests = StreamRequests::kPageStarts;
#else
  static constexpr StreamRequests kStreamRequests = StreamRequests::kLinesAndPageStarts;
#endif
  using Act = const BlockQ8_K*;
  using Acc = AccK;

  static Act load_act(const ABlock& a) noexcept {
    return &a;
  }
  // The block's integer sums (8 int32 lanes) less the +32 bias of every level (32 * the sum over
  // groups of scale * bsum), times d * the activation's scale, into acc.
  static void add_block(Acc& acc, __m256i sum, const int8_t* group_scales, float d,
                        const BlockQ8_K& a) noexcept {
    const __m256i bias = _mm256_madd_epi16(
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(group_scales))),
        load256(a.bsums));
    sum = _mm256_sub_epi32(sum, _mm256_slli_epi32(bias, 5));
    acc.v = _mm256_fmadd_ps(_mm256_set1_ps(d * a.d), _mm256_cvtepi32_ps(sum), acc.v);
  }
  static float finish(const Acc& acc) noexcept {
    return finish_k(acc);
  }
};

#if defined(OXI_ARCH_AVX512)

// q6_K on avx512 (Zen 5 executes 512-bit ops at full width): a 64-byte vector holds two
// 32-element chunks, so the unpack, the maddubs and the scaled VNNI sums run once per chunk
// pair. The int32 lanes are folded to the 8 of the 256-bit trait below before the f32 part,
// each lane the same integer sum, so results are bit-identical to it (test_formats.cpp,
// Q6K.Avx512IsBitIdenticalToAvx2). `bench kernels`: in L2, one core, 42 -> 54.5 GB/s; from
// memory 62-78 -> 81-89 GB/s. Q4_K_M pp512 +5 %, its decode unchanged within the noise
// (docs/benchmarks.md, twenty-third session).
struct Q6_K : Q6_KBase {
  // Unpacked once per row and block (gemm_q's tokens share it; matvec keeps it in registers).
  struct W {
    __m512i u[4];  // level + 32 (0..63) of chunks 2k (low 256 bits) and 2k + 1 (high)
    // the group scales as int16: 128-bit lane L holds groups L, L + 4, L + 8, L + 12 in its
    // int16 lanes 0..3, so that int16 k of every lane is the scale of u[k]'s four groups
    __m512i scales;
    const int8_t* group_scales;
    float d;
  };

  static W load_w(const WBlock& b) noexcept {
    W w;
    const __m512i low4 = _mm512_set1_epi8(0x0F), top2 = _mm512_set1_epi8(0x30);
    // shift counts of qh per 256-bit half: bits 0-1 / 2-3 of a qh byte go to bits 4-5 of
    // chunks 4h / 4h + 1 (left by 4 / 2), bits 4-5 / 6-7 to chunks 4h + 2 / 4h + 3 (right by
    // 0 / 2)
    // (masked forms throughout: GCC 12 warns about the undefined source of the plain
    // broadcast, extract and cast intrinsics)
    constexpr __mmask32 kHigh = 0xFFFF0000u;
    const __m512i left = _mm512_mask_set1_epi16(_mm512_set1_epi16(4), kHigh, 2);
    const __m512i right = _mm512_maskz_set1_epi16(kHigh, 2);
    constexpr int kAOrB = 0xEC;             // ternary logic: (a & c) | b
    for (int half = 0; half < 2; ++half) {  // 128 elements: ql 64 bytes, qh 32
      const __m512i ql = load512_once(b.ql + 64 * half);
      const __m512i qh = _mm512_maskz_broadcast_i64x4(0xFF, load256(b.qh + 32 * half));
      const __m512i top_lo = _mm512_and_si512(_mm512_sllv_epi16(qh, left), top2);
      const __m512i top_hi = _mm512_and_si512(_mm512_srlv_epi16(qh, right), top2);
      w.u[2 * half] = _mm512_ternarylogic_epi32(ql, top_lo, low4, kAOrB);
      w.u[2 * half + 1] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(ql, 4), top_hi, low4, kAOrB);
    }
    // scale bytes s[0..15] -> bytes 8L..8L+3 = s[L], s[L + 4], s[L + 8], s[L + 12], widened
    const __m256i s =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
    const __m256i by_lane = _mm256_shuffle_epi8(
        s, _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, 1, 5, 9, 13, -1, -1, -1, -1, 2, 6, 10, 14,
                            -1, -1, -1, -1, 3, 7, 11, 15, -1, -1, -1, -1));
    w.scales = _mm512_cvtepi8_epi16(by_lane);
    w.group_scales = b.scales;
    w.d = f16(b.d);
    return w;
  }
  static void step(Acc& acc, const W& w, const Act& a) noexcept {
    __m512i sum = _mm512_setzero_si512();
    for (int k = 0; k < 4; ++k) {
      const __m512i p = _mm512_maddubs_epi16(w.u[k], _mm512_loadu_si512(a->qs + 64 * k));
      const __m512i sc = _mm512_shuffle_epi8(
          w.scales, _mm512_set1_epi16(static_cast<int16_t>(0x0100 + 0x0202 * k)));
      sum = _mm512_dpwssd_epi32(sum, p, sc);
    }
    const __m256i sum8 = _mm256_add_epi32(_mm512_maskz_extracti64x4_epi64(0xF, sum, 0),
                                          _mm512_maskz_extracti64x4_epi64(0xF, sum, 1));
    add_block(acc, sum8, w.group_scales, w.d, *a);
  }
};

#else

struct Q6_K : Q6_KBase {
  // Unpacked once per row and block (gemm_q's tokens share it; matvec keeps it in registers).
  struct W {
    __m256i u[8];  // level + 32 (0..63) of the 32-element chunk c
    // the 16 group scales as int16: even groups in the low half, odd in the high half, so
    // broadcast_i16(scales, c) holds the scales of chunk c
    __m256i scales;
    const int8_t* group_scales;
    float d;
  };

  static W load_w(const WBlock& b) noexcept {
    W w;
    const __m256i low4 = _mm256_set1_epi8(0x0F), top2 = _mm256_set1_epi8(0x30);
    for (int half = 0; half < 2; ++half) {  // 128 elements: 4 chunks of 32 = 8 groups of 16
      const __m256i ql0 = load256_once(b.ql + 64 * half);
      const __m256i ql1 = load256_once(b.ql + 64 * half + 32);
      const __m256i qh = load256_once(b.qh + 32 * half);
      // 4 low bits from ql, bits 4-5 from bit pair k of qh
      w.u[4 * half] = _mm256_or_si256(_mm256_and_si256(ql0, low4),
                                      _mm256_and_si256(_mm256_slli_epi16(qh, 4), top2));
      w.u[4 * half + 1] = _mm256_or_si256(_mm256_and_si256(ql1, low4),
                                          _mm256_and_si256(_mm256_slli_epi16(qh, 2), top2));
      w.u[4 * half + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                                          _mm256_and_si256(qh, top2));
      w.u[4 * half + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                                          _mm256_and_si256(_mm256_srli_epi16(qh, 2), top2));
    }
    const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    const __m128i even_odd =
        _mm_shuffle_epi8(s, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
    w.scales = _mm256_cvtepi8_epi16(even_odd);
    w.group_scales = b.scales;
    w.d = f16(b.d);
    return w;
  }
  static void step(Acc& acc, const W& w, const Act& a) noexcept {
    __m256i sum = _mm256_setzero_si256();
    for (int c = 0; c < 8; ++c) {
      const __m256i p = _mm256_maddubs_epi16(w.u[c], load256(a->qs + 32 * c));
      // int16 lanes 0-7 hold group 2c, lanes 8-15 group 2c+1
      sum = add_madd_i16(sum, p, broadcast_i16(w.scales, c));
    }
    add_block(acc, sum, w.group_scales, w.d, *a);
  }
};

#endif  // OXI_ARCH_AVX512

}  // namespace oxi::kernels::OXI_ARCH_NS::simd

#endif  // OXI_ARCH_AVX2
