// Blocked GEMM driver and register-tile micro-kernel for one instruction set (arch source).
//
// Loop nest (Goto / BLIS): columns of W in blocks of kGemmNc, k in blocks of kGemmKc (one
// decode + pack of that W block), rows of x in blocks of kGemmMc (packed), then register tiles
// of kMr x kNr. A packed W micro-panel (kc x kNr) stays in L1 while the x micro-panels stream
// from L2.
#include "kernels/arch.h"
#include "kernels/math/arch_math.h"
#include "kernels/math/simd.h"

#include <cstdint>
#include <cstdlib>

namespace oxi::kernels::OXI_ARCH_NS {
namespace {

#if OXI_ARCH_SIMD
constexpr size_t kMr = 6;  // 6 x 2 accumulators + 2 W vectors + 1 broadcast fit 16 registers
constexpr size_t kNv = 2;
#else
constexpr size_t kMr = 4;
constexpr size_t kNv = 4;
#endif
constexpr size_t kNr = kNv * simd::kLanes;
static_assert(kGemmMc % kMr == 0 && kGemmNc % kNr == 0 && 16 % kNr == 0 && 12 % kMr == 0);

float* align64(float* p) noexcept {
  const auto u = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<float*>((u + 63) & ~uintptr_t{63});
}

// c[r][j] = base[r][j] + sum_kk a[kk][r] * b[kk][j] for the rows x cols corner of a tile, where
// base is c itself (accumulate), the bias row, or zero.
void micro_kernel(size_t kc, const float* a, const float* b, float* c, size_t ldc, size_t rows,
                  size_t cols, bool accumulate, const float* bias) noexcept {
  using simd::F;
  F acc[kMr][kNv];
#pragma GCC unroll 8
  for (size_t r = 0; r < kMr; ++r) {
#pragma GCC unroll 4
    for (size_t v = 0; v < kNv; ++v) acc[r][v] = simd::splat(0.0f);
  }
  for (size_t kk = 0; kk < kc; ++kk) {
    F bv[kNv];
#pragma GCC unroll 4
    for (size_t v = 0; v < kNv; ++v) bv[v] = simd::load_aligned(b + kk * kNr + v * simd::kLanes);
#pragma GCC unroll 8
    for (size_t r = 0; r < kMr; ++r) {
      const F ar = simd::splat(a[kk * kMr + r]);
#pragma GCC unroll 4
      for (size_t v = 0; v < kNv; ++v) acc[r][v] = simd::fma(ar, bv[v], acc[r][v]);
    }
  }
  if (rows == kMr && cols == kNr) {
#pragma GCC unroll 8
    for (size_t r = 0; r < kMr; ++r) {
#pragma GCC unroll 4
      for (size_t v = 0; v < kNv; ++v) {
        float* p = c + r * ldc + v * simd::kLanes;
        const F base = accumulate ? simd::load(p)
                       : bias     ? simd::load(bias + v * simd::kLanes)
                                  : simd::splat(0.0f);
        simd::store(p, acc[r][v] + base);
      }
    }
    return;
  }
  alignas(64) float tile[kMr * kNr];
  for (size_t r = 0; r < kMr; ++r) {
    for (size_t v = 0; v < kNv; ++v) simd::store(tile + r * kNr + v * simd::kLanes, acc[r][v]);
  }
  for (size_t r = 0; r < rows; ++r) {
    for (size_t j = 0; j < cols; ++j) {
      float& out = c[r * ldc + j];
      const float base = accumulate ? out : bias ? bias[j] : 0.0f;
      out = base + tile[r * kNr + j];
    }
  }
}

// Decodes W rows [jc, jc + nc), elements [pc, pc + kc), into kNr-column micro-panels laid out
// [kk][j]; columns past nc are zero.
void pack_w(const uint8_t* w, size_t w_row_bytes, RowDecoder decode, size_t k, size_t jc, size_t nc,
            size_t pc, size_t kc, float* row_buf, float* packed) noexcept {
  const size_t src_offset = pc * w_row_bytes / k;  // a whole number of blocks (see gemm.h)
  for (size_t j = 0; j < nc; ++j) {
    decode(w + (jc + j) * w_row_bytes + src_offset, row_buf, kc);
    float* panel = packed + j / kNr * kc * kNr + j % kNr;
    for (size_t kk = 0; kk < kc; ++kk) panel[kk * kNr] = row_buf[kk];
  }
  for (size_t j = nc; j % kNr != 0; ++j) {
    float* panel = packed + j / kNr * kc * kNr + j % kNr;
    for (size_t kk = 0; kk < kc; ++kk) panel[kk * kNr] = 0.0f;
  }
}

// Copies x rows [0, mc), elements [0, kc) into kMr-row micro-panels laid out [kk][r]; rows
// past mc are zero.
void pack_x(const float* x, size_t ldx, size_t mc, size_t kc, float* packed) noexcept {
  for (size_t ir = 0; ir < mc; ir += kMr) {
    const size_t rows = std::min(kMr, mc - ir);
    float* panel = packed + ir * kc;
    for (size_t kk = 0; kk < kc; ++kk) {
      for (size_t r = 0; r < kMr; ++r) {
        panel[kk * kMr + r] = r < rows ? x[(ir + r) * ldx + kk] : 0.0f;
      }
    }
  }
}

}  // namespace

void gemm_f32(const float* x, size_t ldx, size_t m, size_t k, const void* w, size_t w_row_bytes,
              RowDecoder decode, size_t n_begin, size_t n_end, const float* bias, float* y,
              size_t ldy, std::span<float> scratch) noexcept {
  if (m == 0 || n_end <= n_begin) return;
  if (k == 0) {
    for (size_t i = 0; i < m; ++i) {
      for (size_t j = n_begin; j < n_end; ++j) y[i * ldy + j] = bias ? bias[j] : 0.0f;
    }
    return;
  }
  // A short buffer would be silent memory corruption; the check costs nothing next to the work.
  if (scratch.size() < gemm_scratch_floats(m, k, n_end - n_begin)) std::abort();
  const size_t kc_max = std::min(k, kGemmKc);
  const size_t nc_max = std::min(n_end - n_begin, kGemmNc);
  float* row_buf = align64(scratch.data());
  float* w_packed = align64(row_buf + kc_max);
  float* x_packed = align64(w_packed + (nc_max + 15) / 16 * 16 * kc_max);
  const auto* w_bytes = static_cast<const uint8_t*>(w);

  for (size_t jc = n_begin; jc < n_end; jc += kGemmNc) {
    const size_t nc = std::min(kGemmNc, n_end - jc);
    for (size_t pc = 0; pc < k; pc += kGemmKc) {
      const size_t kc = std::min(kGemmKc, k - pc);
      pack_w(w_bytes, w_row_bytes, decode, k, jc, nc, pc, kc, row_buf, w_packed);
      const bool accumulate = pc > 0;
      for (size_t ic = 0; ic < m; ic += kGemmMc) {
        const size_t mc = std::min(kGemmMc, m - ic);
        pack_x(x + ic * ldx + pc, ldx, mc, kc, x_packed);
        for (size_t jr = 0; jr < nc; jr += kNr) {
          const float* w_panel = w_packed + jr * kc;
          const float* bias_tile = bias ? bias + jc + jr : nullptr;
          for (size_t ir = 0; ir < mc; ir += kMr) {
            micro_kernel(kc, x_packed + ir * kc, w_panel, y + (ic + ir) * ldy + jc + jr, ldy,
                         std::min(kMr, mc - ir), std::min(kNr, nc - jr), accumulate, bias_tile);
          }
        }
      }
    }
  }
}

}  // namespace oxi::kernels::OXI_ARCH_NS
