// Scalar IEEE half (f16) and bfloat16 <-> f32 conversions, rounding to nearest even.
//
// Bit manipulation only, so the result does not depend on the FPU mode or on F16C; every
// kernel path decodes block scales with these (or an instruction with identical results).
#pragma once

#include <bit>
#include <cstdint>

namespace oxi::kernels {

// Always inlined: the kernels' arch sources include this with each instruction set's flags, and
// an out-of-line copy from one of them could be the one the linker keeps for all
// (tests/kernels/arch_symbols.py).
[[gnu::always_inline]] inline float f16_to_f32(uint16_t h) noexcept {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24 is exact in f32.
    const float v = static_cast<float>(mant) * 0x1p-24f;
    return std::bit_cast<float>(std::bit_cast<uint32_t>(v) | sign);
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

[[gnu::always_inline]] inline uint16_t f32_to_f16(float f) noexcept {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {  // inf stays inf; NaN stays a (quiet) NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | (ax >> 13) : 0));
  }
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {
    // Below the smallest normal half: adding 0.5 puts the value at 2^-24 resolution, so the
    // hardware add does the round-to-nearest-even and the low bits are the subnormal mantissa.
    const float v = std::bit_cast<float>(ax) + 0.5f;
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(v) - 0x3f000000u));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even.
  const uint32_t r = ax + 0xc8000fffu + ((ax >> 13) & 1u);
  return static_cast<uint16_t>(sign | (r >> 13));
}

[[gnu::always_inline]] inline float bf16_to_f32(uint16_t h) noexcept {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

[[gnu::always_inline]] inline uint16_t f32_to_bf16(float f) noexcept {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace oxi::kernels
