// Independent references for the format tests, written from the GGUF / ggml format description
// (byte offsets, not the kernels' structs): f16 decoding in double, row dequantization that
// rounds to f32 exactly where ggml's C evaluates in f32, and random block generation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/formats/dtype.h"

namespace oxi::test::formats {

double half_to_double(uint16_t h);
double bf16_to_double(uint16_t h);

// Dequantizes `n` elements of row `raw` of type t the way the spec (and ggml) defines it.
std::vector<float> reference_dequantize(kernels::DType t, const uint8_t* raw, size_t n);

// A row of n elements of random blocks: random quant bytes, random finite f16 scales.
std::vector<uint8_t> random_row(kernels::DType t, size_t n, uint32_t seed);

}  // namespace oxi::test::formats
