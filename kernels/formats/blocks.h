// The GGUF / ggml quantized block layouts, byte for byte.
//
// A row of a quantized tensor is an array of blocks; each block holds `kElems` weights as small
// integers plus the scales that turn them back into floats. Halves are stored as raw f16 bits
// (fp16.h converts them). The dequantization rule of each block is in dequantize.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace oxi::kernels {

inline constexpr size_t QK = 32;     // elements per block of the 32-element formats
inline constexpr size_t QK_K = 256;  // elements per super-block of the K-quants
inline constexpr size_t K_SCALE_SIZE = 12;

// x = d * (q - 8), q in 0..15; element j in the low nibble of qs[j], element j+16 in the high.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[QK / 2];
};
// x = d * q + m, q in 0..15 (same nibble order as q4_0).
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[QK / 2];
};
// x = d * (q - 16), q in 0..31: low 4 bits as q4_0, bit 4 of element j in bit j of qh (LE u32).
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[QK / 2];
};
// x = d * q + m, q in 0..31 (bits as q5_0).
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[QK / 2];
};
// x = d * q.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[QK];
};
// q8_0 plus s = d * sum(qs): the activation format for q4_1 / q5_1 weights.
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[QK];
};

// 16 groups of 16: x = d * (scales[g] & 15) * q - dmin * (scales[g] >> 4), q in 0..3.
struct BlockQ2_K {
  uint8_t scales[QK_K / 16];
  uint8_t qs[QK_K / 4];
  uint16_t d;
  uint16_t dmin;
};
// 16 groups of 16: x = d * (scale6[g] - 32) * (q - 4 * !hbit), 2 low bits in qs, high in hmask.
struct BlockQ3_K {
  uint8_t hmask[QK_K / 8];
  uint8_t qs[QK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};
// 8 groups of 32: x = d * sc[g] * q - dmin * mn[g], 6-bit sc / mn packed in scales[12].
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[K_SCALE_SIZE];
  uint8_t qs[QK_K / 2];
};
// q4_K with a fifth bit per weight in qh.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[K_SCALE_SIZE];
  uint8_t qh[QK_K / 8];
  uint8_t qs[QK_K / 2];
};
// 16 groups of 16: x = d * scales[g] * (q - 32), q in 0..63 (4 bits in ql, 2 in qh).
struct BlockQ6_K {
  uint8_t ql[QK_K / 2];
  uint8_t qh[QK_K / 4];
  int8_t scales[QK_K / 16];
  uint16_t d;
};
// Non-linear 4-bit formats: a 4-bit index into kIq4Values per weight (nibble order as q4_0).
// x = d * kIq4Values[q].
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[QK / 2];
};
// 8 groups of 32: x = (d * (ls[g] - 32)) * kIq4Values[q], ls a 6-bit scale (iq4_xs_scale);
// group g's 16 bytes of qs as one iq4_nl block's.
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;            // bits 2g, 2g+1: the high two bits of ls[g]
  uint8_t scales_l[QK_K / 64];  // nibble g % 2 of byte g / 2: the low four bits of ls[g]
  uint8_t qs[QK_K / 2];
};
// The levels an iq4 index selects (GGUF's kvalues_iq4nl): denser near zero, as trained weights
// are.
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};
// The same levels + 128 (1..241): unsigned bytes for u8 x s8 dot products, whose activation
// side then subtracts 128 x its sum.
inline constexpr uint8_t kIq4LevelsPlus128[16] = {1,   24,  45,  63,  79,  93,  106, 118,
                                                  129, 141, 153, 166, 181, 197, 217, 241};

// Ternary formats (BitNet b1.58 and TriLM checkpoints): x = d * (t - 1), t in 0..2, 256 a block.
// tq1_0 packs five trits a byte as a base-3 fraction: byte = ceil(v * 256 / 243), v the trits
// read as a base-3 number, most significant first, so trit k of a byte is the integer part of
// 3 * frac(byte * 3^k / 256) (tq1_trit). qs[0..32) hold elements 32k + m (trit k of byte m),
// qs[32..48) elements 160 + 16k + m, and qh's four bytes elements 240 + 4k + m with k < 4.
struct BlockTQ1_0 {
  uint8_t qs[(QK_K - 4 * QK_K / 64) / 5];
  uint8_t qh[QK_K / 64];
  uint16_t d;
};
// tq2_0: two bits a trit; element 128h + 32k + m is bits 2k, 2k+1 of qs[32h + m] (t = 3, which
// an encoder never writes, decodes as +2).
struct BlockTQ2_0 {
  uint8_t qs[QK_K / 4];
  uint16_t d;
};

inline constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
// Trit k (0..4) of a tq1_0 byte: 0, 1 or 2.
[[gnu::always_inline]] inline int tq1_trit(uint8_t byte, int k) noexcept {
  const auto shifted = static_cast<uint8_t>(byte * kPow3[k]);  // mod 256: drops the trits above
  return (shifted * 3) >> 8;
}
// f(t) for the 256 trits of a tq1_0 block, in element order (the layout above).
template <class F>
[[gnu::always_inline]] inline void for_each_tq1_trit(const BlockTQ1_0& b, F&& f) noexcept {
  const auto part = [&f](const uint8_t* bytes, size_t count, int trits) {
    for (int k = 0; k < trits; ++k) {
      for (size_t m = 0; m < count; ++m) f(tq1_trit(bytes[m], k));
    }
  };
  part(b.qs, 32, 5);
  part(b.qs + 32, 16, 5);
  part(b.qh, 4, 4);
}

// The activation format for K-quant weights: f32 scale, and the sum of each group of 16.
struct BlockQ8_K {
  float d;
  int8_t qs[QK_K];
  int16_t bsums[QK_K / 16];
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockIQ4_XS) == 136);
static_assert([] {
  for (int i = 0; i < 16; ++i)
    if (kIq4LevelsPlus128[i] != kIq4Values[i] + 128) return false;
  return true;
}());
static_assert(sizeof(BlockTQ1_0) == 54);
static_assert(sizeof(BlockTQ2_0) == 66);

// The 6-bit scale and min of group j (0..7) of a q4_K / q5_K super-block. (Always inlined, like
// fp16.h's conversions: arch sources use it.)
[[gnu::always_inline]] inline void k4_scale_min(const uint8_t* q, int j, uint8_t& sc,
                                                uint8_t& mn) noexcept {
  if (j < 4) {
    sc = q[j] & 63;
    mn = q[j + 4] & 63;
  } else {
    sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    mn = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// The 6-bit (unsigned, biased by 32) scale of group g (0..15) of a q3_K super-block.
[[gnu::always_inline]] inline int k3_scale(const uint8_t* s, int g) noexcept {
  const int low = g < 8 ? (s[g] & 0xF) : (s[g - 8] >> 4);
  const int high = (s[8 + (g % 4)] >> (2 * (g / 4))) & 3;
  return low | (high << 4);
}

// The 6-bit (unsigned, biased by 32) scale of group g (0..7) of an iq4_xs super-block.
[[gnu::always_inline]] inline int iq4_xs_scale(const BlockIQ4_XS& b, int g) noexcept {
  const int low = (b.scales_l[g / 2] >> (4 * (g % 2))) & 0xF;
  const int high = (b.scales_h >> (2 * g)) & 3;
  return low | (high << 4);
}

}  // namespace oxi::kernels
