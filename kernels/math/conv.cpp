#include "kernels/math/conv.h"

#include <algorithm>

#include "kernels/math/gemm.h"
#include "kernels/math/math_kernels.h"

namespace oxi::kernels {
namespace {

// Row t of the im2col block is the receptive field of output position first + t, laid out
// [c_in][kernel_h][kernel_w] like a weight row, so y[co][pos] = dot(weight[co], col[t]).
void im2col(const float* x, const Conv2dShape& s, size_t first, size_t count, float* col) noexcept {
  const size_t ow = s.out_w();
  const size_t row_len = s.c_in * s.kernel_h * s.kernel_w;
  for (size_t t = 0; t < count; ++t) {
    const size_t oy = (first + t) / ow, ox = (first + t) % ow;
    float* row = col + t * row_len;
    for (size_t ci = 0; ci < s.c_in; ++ci) {
      const float* plane = x + ci * s.height * s.width;
      for (size_t ky = 0; ky < s.kernel_h; ++ky) {
        // Signed arithmetic: padding puts taps before the first row / column.
        const auto iy = static_cast<ptrdiff_t>(oy * s.stride_h + ky * s.dilation_h) -
                        static_cast<ptrdiff_t>(s.pad_h);
        const bool row_inside = iy >= 0 && iy < static_cast<ptrdiff_t>(s.height);
        for (size_t kx = 0; kx < s.kernel_w; ++kx) {
          const auto ix = static_cast<ptrdiff_t>(ox * s.stride_w + kx * s.dilation_w) -
                          static_cast<ptrdiff_t>(s.pad_w);
          const bool inside = row_inside && ix >= 0 && ix < static_cast<ptrdiff_t>(s.width);
          *row++ = inside ? plane[iy * static_cast<ptrdiff_t>(s.width) + ix] : 0.0f;
        }
      }
    }
  }
}

}  // namespace

size_t conv2d_scratch_floats(const Conv2dShape& s) noexcept {
  const size_t positions = std::min(s.out_h() * s.out_w(), kGemmNc);
  const size_t row_len = s.c_in * s.kernel_h * s.kernel_w;
  return positions * row_len + gemm_scratch_floats(s.c_out, row_len, positions);
}

void conv2d(std::span<const float> x, std::span<const float> weight, std::span<const float> bias,
            const Conv2dShape& s, std::span<float> y, std::span<float> scratch, Isa isa) noexcept {
  const MathKernels& mk = math_kernels(isa);
  const size_t positions = s.out_h() * s.out_w();
  const size_t row_len = s.c_in * s.kernel_h * s.kernel_w;
  const size_t block = std::min(positions, kGemmNc);
  float* col = scratch.data();
  const std::span<float> gemm_scratch = scratch.subspan(block * row_len);
  // The weight plays GEMM's x (c_out rows) and the im2col rows play W, so the result lands
  // channel-major as y[co][position] without a transpose.
  for (size_t first = 0; first < positions; first += block) {
    const size_t count = std::min(block, positions - first);
    im2col(x.data(), s, first, count, col);
    mk.gemm_f32(weight.data(), row_len, s.c_out, row_len, col, row_len * sizeof(float),
                &decode_f32_row, 0, count, nullptr, y.data() + first, positions, gemm_scratch);
  }
  if (!bias.empty()) {
    for (size_t co = 0; co < s.c_out; ++co) {
      float* out = y.data() + co * positions;
      std::for_each(out, out + positions, [b = bias[co]](float& v) { v += b; });
    }
  }
}

}  // namespace oxi::kernels
