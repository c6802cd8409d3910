// Element types of weights and activations, numbered exactly as GGUF's tensor types
// (ggml_type), so a GGUF tensor-table entry converts with a range check and a cast; plus
// kernel-internal repacked layouts (ids from 63 down, far above GGUF's), which no file holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace oxi::kernels {

enum class DType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ4_NL = 20,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  // Kernel-internal: q4_0 rows repacked at load for faster products (q4_0_r16.h).
  Q4_0_R16 = 63,
  // Kernel-internal: q8_0 rows repacked at load for faster products (q8_0_r16.h).
  Q8_0_R16 = 62,
  // Kernel-internal: q4_K rows repacked at load for faster products (q4_k_r8.h).
  Q4_K_R8 = 61,
  // Kernel-internal: q4_K rows repacked in sets of rows into whole q4_K_r8 groups (q4_k_r8s.h).
  Q4_K_R8S = 60,
  // Kernel-internal: iq4_xs rows repacked at load for faster products (iq4_xs_r8.h).
  IQ4_XS_R8 = 59,
  // Kernel-internal: iq4_nl rows repacked at load in q4_0_r16's layout (iq4_nl_r16.h).
  IQ4_NL_R16 = 58,
  // Kernel-internal: q5_0 rows repacked at load, q4_0_r16's groups with fifth bits (q5_0_r16.h).
  Q5_0_R16 = 57,
  // Kernel-internal: q5_1 rows repacked at load, q5_0_r16's groups with the mins (q5_1_r16.h).
  Q5_1_R16 = 56,
  // Kernel-internal: q4_1 rows repacked at load, q4_0_r16's groups with the mins (q4_1_r16.h).
  Q4_1_R16 = 55,
  // Kernel-internal: q5_K rows repacked at load, q4_K_r8's groups with fifth bits (q5_k_r8.h).
  Q5_K_R8 = 54,
  // Kernel-internal: q3_K rows repacked at load, groups of 8 super-blocks (q3_k_r8.h).
  Q3_K_R8 = 53,
  // Kernel-internal: q2_K rows repacked at load, q3_K_r8's groups with q2_K's scales (q2_k_r8.h).
  Q2_K_R8 = 52,
};

struct DTypeInfo {
  std::string_view name;  // GGUF / ggml spelling: "f32", "q4_0", "q4_K", ...
  size_t block_elems;     // elements per block (1 for plain types)
  size_t block_bytes;     // bytes per block
  bool quantized;
};

// Info for a known GGUF type; nullopt for numbers GGUF reserves or this build does not know,
// and for the kernel-internal types (a file never holds them).
std::optional<DTypeInfo> dtype_info(uint32_t gguf_type) noexcept;
const DTypeInfo& info(DType t) noexcept;
inline std::string_view name(DType t) noexcept {
  return info(t).name;
}

// Bytes of `n` elements (n must be a multiple of block_elems; returns 0 otherwise).
size_t row_bytes(DType t, size_t n) noexcept;

// Parses "f32", "Q4_K", "q8_0" ... (case-insensitive); GGUF types only.
std::optional<DType> parse_dtype(std::string_view s) noexcept;

}  // namespace oxi::kernels
