#include "kernels/math/gemm.h"

#include <algorithm>
#include <cstring>

#include "kernels/math/math_kernels.h"

namespace oxi::kernels {

size_t gemm_scratch_floats(size_t m, size_t k, size_t n_cols) noexcept {
  // Sized for the widest register tile of any set (16 columns, rows a multiple of 12 covers
  // 4 and 6), plus 64-byte alignment slack for each of the three buffers.
  const size_t kc = std::min(k, kGemmKc);
  const size_t nc = (std::min(n_cols, kGemmNc) + 15) / 16 * 16;
  const size_t mc = (std::min(m, kGemmMc) + 11) / 12 * 12;
  return kc + nc * kc + mc * kc + 3 * 16;
}

void gemm_f32(const float* x, size_t ldx, size_t m, size_t k, const void* w, size_t w_row_bytes,
              RowDecoder decode, size_t n_begin, size_t n_end, const float* bias, float* y,
              size_t ldy, std::span<float> scratch) noexcept {
  math_kernels().gemm_f32(x, ldx, m, k, w, w_row_bytes, decode, n_begin, n_end, bias, y, ldy,
                          scratch);
}

void decode_f32_row(const void* src, float* dst, size_t n) noexcept {
  std::memcpy(dst, src, n * sizeof(float));
}

}  // namespace oxi::kernels
