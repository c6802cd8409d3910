// 1-D and 2-D convolution (cross-correlation, as in PyTorch) by im2col feeding gemm_f32.
#pragma once

#include <cstddef>
#include <span>

#include "kernels/cpu_features.h"

namespace oxi::kernels {

struct Conv2dShape {
  size_t c_in = 0, height = 0, width = 0;
  size_t c_out = 0, kernel_h = 1, kernel_w = 1;
  size_t stride_h = 1, stride_w = 1;
  size_t pad_h = 0, pad_w = 0;  // zeros on each side
  size_t dilation_h = 1, dilation_w = 1;
  size_t out_h() const noexcept {
    return (height + 2 * pad_h - dilation_h * (kernel_h - 1) - 1) / stride_h + 1;
  }
  size_t out_w() const noexcept {
    return (width + 2 * pad_w - dilation_w * (kernel_w - 1) - 1) / stride_w + 1;
  }
};

struct Conv1dShape {
  size_t c_in = 0, length = 0, c_out = 0, kernel = 1;
  size_t stride = 1, padding = 0, dilation = 1;
  size_t out_length() const noexcept { return as_2d().out_w(); }
  Conv2dShape as_2d() const noexcept {
    return {.c_in = c_in,
            .height = 1,
            .width = length,
            .c_out = c_out,
            .kernel_h = 1,
            .kernel_w = kernel,
            .stride_h = 1,
            .stride_w = stride,
            .pad_h = 0,
            .pad_w = padding,
            .dilation_h = 1,
            .dilation_w = dilation};
  }
};

// Floats of scratch conv2d / conv1d need: an im2col block of at most kGemmNc output positions
// plus the GEMM's own buffers.
size_t conv2d_scratch_floats(const Conv2dShape& s) noexcept;
inline size_t conv1d_scratch_floats(const Conv1dShape& s) noexcept {
  return conv2d_scratch_floats(s.as_2d());
}

// x: [c_in][height][width]; weight: [c_out][c_in][kernel_h][kernel_w]; bias: c_out or empty;
// y: [c_out][out_h][out_w]. Runs the GEMM of `isa` (tests compare sets).
void conv2d(std::span<const float> x, std::span<const float> weight, std::span<const float> bias,
            const Conv2dShape& shape, std::span<float> y, std::span<float> scratch,
            Isa isa = selected_isa()) noexcept;

// x: [c_in][length]; weight: [c_out][c_in][kernel]; y: [c_out][out_length].
inline void conv1d(std::span<const float> x, std::span<const float> weight,
                   std::span<const float> bias, const Conv1dShape& shape, std::span<float> y,
                   std::span<float> scratch, Isa isa = selected_isa()) noexcept {
  conv2d(x, weight, bias, shape.as_2d(), y, scratch, isa);
}

}  // namespace oxi::kernels
