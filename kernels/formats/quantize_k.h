// Internal: the row encoders that quantize.cpp's dispatch and activation.cpp share.
#pragma once

#include <cstddef>

namespace oxi::kernels {

void quantize_row_q8_0(const float* x, void* dst, size_t n) noexcept;
void quantize_row_q2_K(const float* x, void* dst, size_t n) noexcept;
void quantize_row_q3_K(const float* x, void* dst, size_t n) noexcept;
void quantize_row_q4_K(const float* x, void* dst, size_t n) noexcept;
void quantize_row_q5_K(const float* x, void* dst, size_t n) noexcept;
void quantize_row_q6_K(const float* x, void* dst, size_t n) noexcept;

}  // namespace oxi::kernels
