// Block-dot traits of the quantized formats in plain C++: the reference the SIMD traits are
// tested against, and the path of instruction sets without hand-written traits.
//
// A trait F describes one weight format for the tile loop in tiles.h:
//   F::load_act(activation block) -> F::Act     (once per token and block)
//   F::load_w(weight block)       -> F::W       (once per row and block)
//   F::step(F::Acc&, W, Act)                     (once per token, row and block)
//   F::finish(Acc) -> float
// Integer parts are exact; only the f32 accumulation order differs between instruction sets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/arch.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/fp16.h"

namespace oxi::kernels::OXI_ARCH_NS::ref {

inline int dot32(const int8_t* a, const int8_t* b) noexcept {
  int s = 0;
  for (size_t i = 0; i < QK; ++i) s += a[i] * b[i];
  return s;
}

inline uint32_t load_u32(const uint8_t* p) noexcept {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// Weight block of a 32-element format as signed integers: x = d * q (+ m).
struct W32 {
  int8_t q[QK];
  float d;
  float m;
};

struct Act8_0 {
  const int8_t* q;
  float d;
};
struct Act8_1 {
  const int8_t* q;
  float d;
  float s;
};

// q = low or high nibble (+ bit 4 from qh) minus `offset`.
template <bool kFifthBit>
inline void unpack32(const uint8_t* qs, const uint8_t* qh, int offset, int8_t* q) noexcept {
  const uint32_t h = kFifthBit ? load_u32(qh) : 0;
  for (size_t j = 0; j < QK / 2; ++j) {
    const int h0 = kFifthBit ? static_cast<int>((h >> j) & 1) << 4 : 0;
    const int h1 = kFifthBit ? static_cast<int>((h >> (j + 16)) & 1) << 4 : 0;
    q[j] = static_cast<int8_t>(((qs[j] & 0xF) | h0) - offset);
    q[j + QK / 2] = static_cast<int8_t>(((qs[j] >> 4) | h1) - offset);
  }
}

// q = kIq4Values[nibble], in the 32-block order.
inline void unpack_iq4(const uint8_t* qs, int8_t* q) noexcept {
  for (size_t j = 0; j < QK / 2; ++j) {
    q[j] = kIq4Values[qs[j] & 0xF];
    q[j + QK / 2] = kIq4Values[qs[j] >> 4];
  }
}

// Symmetric formats (q4_0, q5_0, q8_0, iq4_nl) against q8_0 activations.
template <class Block>
struct Sym32 {
  using WBlock = Block;
  using ABlock = BlockQ8_0;
  using Act = Act8_0;
  using W = W32;
  using Acc = float;
  static constexpr size_t kElems = QK;

  static Act load_act(const ABlock& a) noexcept { return {a.qs, f16_to_f32(a.d)}; }
  static W load_w(const WBlock& b) noexcept {
    W w;
    w.d = f16_to_f32(b.d);
    w.m = 0;
    if constexpr (std::is_same_v<Block, BlockQ4_0>) {
      unpack32<false>(b.qs, nullptr, 8, w.q);
    } else if constexpr (std::is_same_v<Block, BlockQ5_0>) {
      unpack32<true>(b.qs, b.qh, 16, w.q);
    } else if constexpr (std::is_same_v<Block, BlockIQ4_NL>) {
      unpack_iq4(b.qs, w.q);
    } else {
      for (size_t i = 0; i < QK; ++i) w.q[i] = b.qs[i];
    }
    return w;
  }
  static void step(Acc& acc, const W& w, const Act& a) noexcept {
    acc += static_cast<float>(dot32(w.q, a.q)) * (w.d * a.d);
  }
  static float finish(Acc acc) noexcept { return acc; }
};

// Formats with a min (q4_1, q5_1) against q8_1 activations: the min meets s = d * sum(q).
template <class Block>
struct Min32 {
  using WBlock = Block;
  using ABlock = BlockQ8_1;
  using Act = Act8_1;
  using W = W32;
  using Acc = float;
  static constexpr size_t kElems = QK;

  static Act load_act(const ABlock& a) noexcept { return {a.qs, f16_to_f32(a.d), f16_to_f32(a.s)}; }
  static W load_w(const WBlock& b) noexcept {
    W w;
    w.d = f16_to_f32(b.d);
    w.m = f16_to_f32(b.m);
    if constexpr (std::is_same_v<Block, BlockQ4_1>) {
      unpack32<false>(b.qs, nullptr, 0, w.q);
    } else {
      unpack32<true>(b.qs, b.qh, 0, w.q);
    }
    return w;
  }
  static void step(Acc& acc, const W& w, const Act& a) noexcept {
    acc += static_cast<float>(dot32(w.q, a.q)) * (w.d * a.d) + w.m * a.s;
  }
  static float finish(Acc acc) noexcept { return acc; }
};

using Q4_0 = Sym32<BlockQ4_0>;
using Q5_0 = Sym32<BlockQ5_0>;
using Q8_0 = Sym32<BlockQ8_0>;
using IQ4_NL = Sym32<BlockIQ4_NL>;
using Q4_1 = Min32<BlockQ4_1>;
using Q5_1 = Min32<BlockQ5_1>;

// ---- K-quants ----
//
// Every K-quant super-block is unpacked to unsigned levels u (0..63) in element order, a signed
// scale per group of 16 and a correction per group that meets the activation's group sums:
//   mins formats (q2_K q4_K q5_K):   x = d * sc * u - dmin * corr
//   offset formats (q3_K q6_K):      x = d * sc * u - d * corr   (corr = offset * sc)
struct KW {
  uint8_t u[QK_K];
  int32_t sc[16];
  int32_t corr[16];
  float d;
  float dmin;
};

inline void unpack_q2_K(const BlockQ2_K& b, KW& w) noexcept {
  for (size_t e = 0; e < QK_K; ++e) {
    const size_t half = e / 128, shift = 2 * ((e % 128) / 32), l = e % 32;
    w.u[e] = (b.qs[32 * half + l] >> shift) & 3;
  }
  for (int g = 0; g < 16; ++g) {
    w.sc[g] = b.scales[g] & 0xF;
    w.corr[g] = b.scales[g] >> 4;
  }
  w.d = f16_to_f32(b.d);
  w.dmin = f16_to_f32(b.dmin);
}

inline void unpack_q3_K(const BlockQ3_K& b, KW& w) noexcept {
  for (size_t e = 0; e < QK_K; ++e) {
    const size_t half = e / 128, j = (e % 128) / 32, l = e % 32;
    const int low = (b.qs[32 * half + l] >> (2 * j)) & 3;
    const int high = (b.hmask[l] >> (4 * half + j)) & 1;
    w.u[e] = static_cast<uint8_t>(low | (high << 2));  // level + 4
  }
  for (int g = 0; g < 16; ++g) {
    w.sc[g] = k3_scale(b.scales, g) - 32;
    w.corr[g] = 4 * w.sc[g];
  }
  w.d = w.dmin = f16_to_f32(b.d);
}

template <class Block>
inline void k4_scales(const Block& b, KW& w) noexcept {
  for (int j = 0; j < 8; ++j) {
    uint8_t s = 0, m = 0;
    k4_scale_min(b.scales, j, s, m);
    w.sc[2 * j] = w.sc[2 * j + 1] = s;
    w.corr[2 * j] = w.corr[2 * j + 1] = m;
  }
  w.d = f16_to_f32(b.d);
  w.dmin = f16_to_f32(b.dmin);
}

inline void unpack_q4_K(const BlockQ4_K& b, KW& w) noexcept {
  for (size_t e = 0; e < QK_K; ++e) {
    const size_t j = e / 64, l = e % 32;
    w.u[e] = (e % 64) < 32 ? (b.qs[32 * j + l] & 0xF) : (b.qs[32 * j + l] >> 4);
  }
  k4_scales(b, w);
}

inline void unpack_q5_K(const BlockQ5_K& b, KW& w) noexcept {
  for (size_t e = 0; e < QK_K; ++e) {
    const size_t j = e / 64, hi = (e % 64) / 32, l = e % 32;
    const int low = hi ? (b.qs[32 * j + l] >> 4) : (b.qs[32 * j + l] & 0xF);
    w.u[e] = static_cast<uint8_t>(low | (((b.qh[l] >> (2 * j + hi)) & 1) << 4));
  }
  k4_scales(b, w);
}

inline void unpack_q6_K(const BlockQ6_K& b, KW& w) noexcept {
  for (size_t e = 0; e < QK_K; ++e) {
    const size_t half = e / 128, k = (e % 128) / 32, l = e % 32;
    const uint8_t ql = b.ql[64 * half + 32 * (k & 1) + l];
    const int low = k >= 2 ? (ql >> 4) : (ql & 0xF);
    const int high = (b.qh[32 * half + l] >> (2 * k)) & 3;
    w.u[e] = static_cast<uint8_t>(low | (high << 4));  // level + 32
  }
  for (int g = 0; g < 16; ++g) {
    w.sc[g] = b.scales[g];
    w.corr[g] = 32 * w.sc[g];
  }
  w.d = w.dmin = f16_to_f32(b.d);
}

// sum over groups of sc[g] * sum(u * x): exact in int32 for every K format.
inline int32_t kdot(const KW& w, const int8_t* x) noexcept {
  int32_t total = 0;
  for (int g = 0; g < 16; ++g) {
    int32_t s = 0;
    for (int l = 0; l < 16; ++l) s += w.u[16 * g + l] * x[16 * g + l];
    total += s * w.sc[g];
  }
  return total;
}

// The K-quant trait of the reference (the SIMD sets multiply straight from the block:
// traits_avx2.h's K4Direct, K16Direct and q6_K traits).
template <class Block, void (*Unpack)(const Block&, KW&), bool kMins>
struct KQuant {
  using WBlock = Block;
  using ABlock = BlockQ8_K;
  using Act = const BlockQ8_K*;
  using W = KW;
  using Acc = float;
  static constexpr size_t kElems = QK_K;

  static Act load_act(const ABlock& a) noexcept { return &a; }
  static W load_w(const WBlock& b) noexcept {
    W w;
    Unpack(b, w);
    return w;
  }
  static void step(Acc& acc, const W& w, const Act& a) noexcept {
    const int32_t isum = kdot(w, a->qs);
    int32_t c = 0;
    for (int g = 0; g < 16; ++g) c += w.corr[g] * a->bsums[g];
    if constexpr (kMins) {
      acc += (a->d * w.d) * static_cast<float>(isum) - (a->d * w.dmin) * static_cast<float>(c);
    } else {
      acc += (a->d * w.d) * static_cast<float>(isum - c);
    }
  }
  static float finish(Acc acc) noexcept { return acc; }
};

// iq4_xs against q8_K: each group's integer dot times its scale ls - 32, summed in int32 over
// the super-block (|sum| <= 8 x 32 x 127 x 127 x 32 < 2^31), then one f32 step as ggml's.
struct IQ4_XS {
  using WBlock = BlockIQ4_XS;
  using ABlock = BlockQ8_K;
  using Act = const BlockQ8_K*;
  struct W {
    int8_t q[QK_K];
    int scale[8];
    float d;
  };
  using Acc = float;
  static constexpr size_t kElems = QK_K;

  static Act load_act(const ABlock& a) noexcept { return &a; }
  static W load_w(const WBlock& b) noexcept {
    W w;
    for (int g = 0; g < 8; ++g) {
      unpack_iq4(b.qs + 16 * g, w.q + QK * g);
      w.scale[g] = iq4_xs_scale(b, g) - 32;
    }
    w.d = f16_to_f32(b.d);
    return w;
  }
  static void step(Acc& acc, const W& w, const Act& a) noexcept {
    int32_t isum = 0;
    for (int g = 0; g < 8; ++g) isum += w.scale[g] * dot32(w.q + QK * g, a->qs + QK * g);
    acc += (w.d * a->d) * static_cast<float>(isum);
  }
  static float finish(Acc acc) noexcept { return acc; }
};

// ---- ternary formats (tq1_0, tq2_0) against q8_K ----
//
// The trits t (0..2; tq2_0's unused 3 too) meet the activation bytes as they are and the
// activation's sum removes the offset: sum((t - 1) x) = sum(t x) - sum(x), exact in int32; then
// one f32 step a block, ggml's (its sum times d_x * d_w). Every instruction set adds the same
// integer with the same f32 step (which the SIMD builds may fuse into one FMA).
struct TernaryW {
  alignas(32) uint8_t t[QK_K];  // element order
  float d;
};

inline void unpack_tq1_0(const BlockTQ1_0& b, TernaryW& w) noexcept {
  uint8_t* t = w.t;
  for_each_tq1_trit(b, [&t](int trit) { *t++ = static_cast<uint8_t>(trit); });
  w.d = f16_to_f32(b.d);
}

inline void unpack_tq2_0(const BlockTQ2_0& b, TernaryW& w) noexcept {
  for (size_t e = 0; e < QK_K; ++e)
    w.t[e] = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
  w.d = f16_to_f32(b.d);
}

inline int32_t ternary_dot(const TernaryW& w, const int8_t* x) noexcept {
  int32_t s = 0;
  for (size_t e = 0; e < QK_K; ++e) s += w.t[e] * x[e];
  return s;
}

// The ternary trait; Unpack and Dot are the instruction set's versions of the above.
template <class Block, void (*Unpack)(const Block&, TernaryW&),
          int32_t (*Dot)(const TernaryW&, const int8_t*)>
struct Ternary {
  using WBlock = Block;
  using ABlock = BlockQ8_K;
  struct Act {
    const int8_t* qs;
    int32_t sum;  // of the block's 256 bytes
    float d;
  };
  using W = TernaryW;
  using Acc = float;
  static constexpr size_t kElems = QK_K;

  static Act load_act(const ABlock& a) noexcept {
    int32_t sum = 0;
    for (int16_t s : a.bsums) sum += s;
    return {a.qs, sum, a.d};
  }
  static W load_w(const WBlock& b) noexcept {
    W w;
    Unpack(b, w);
    return w;
  }
  static void step(Acc& acc, const W& w, const Act& a) noexcept {
    acc += static_cast<float>(Dot(w, a.qs) - a.sum) * (a.d * w.d);
  }
  static float finish(Acc acc) noexcept { return acc; }
};

using TQ1_0 = Ternary<BlockTQ1_0, unpack_tq1_0, ternary_dot>;
using TQ2_0 = Ternary<BlockTQ2_0, unpack_tq2_0, ternary_dot>;

using Q2_K = KQuant<BlockQ2_K, unpack_q2_K, true>;
using Q3_K = KQuant<BlockQ3_K, unpack_q3_K, false>;
using Q4_K = KQuant<BlockQ4_K, unpack_q4_K, true>;
using Q5_K = KQuant<BlockQ5_K, unpack_q5_K, true>;
using Q6_K = KQuant<BlockQ6_K, unpack_q6_K, false>;

}  // namespace oxi::kernels::OXI_ARCH_NS::ref
