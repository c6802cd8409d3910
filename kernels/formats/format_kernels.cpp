// Run-time choice of the FormatKernels table: one per instruction set compiled in.
#include <cmath>
#include <limits>

#include "kernels/formats/q4_k_r8s.h"
#include "kernels/formats/quant.h"

namespace oxi::kernels {

// Defined once per instruction set by format_kernels_arch.cpp.
#if defined(OXI_HAVE_ARCH_SCALAR)
namespace scalar {
void fill_format_kernels(FormatKernels& k) noexcept;
}
#endif
#if defined(OXI_HAVE_ARCH_SSE42)
namespace sse42 {
void fill_format_kernels(FormatKernels& k) noexcept;
}
#endif
#if defined(OXI_HAVE_ARCH_AVX2)
namespace avx2 {
void fill_format_kernels(FormatKernels& k) noexcept;
}
#endif
#if defined(OXI_HAVE_ARCH_AVX512)
namespace avx512 {
void fill_format_kernels(FormatKernels& k) noexcept;
}
#endif
#if defined(OXI_HAVE_ARCH_NEON)
namespace neon {
void fill_format_kernels(FormatKernels& k) noexcept;
}
#endif
#if defined(OXI_HAVE_ARCH_NEON_DOTPROD)
namespace neon_dotprod {
void fill_format_kernels(FormatKernels& k) noexcept;
}
#endif

namespace {

FormatKernels make(Isa isa, void (*fill)(FormatKernels&) noexcept) noexcept {
  FormatKernels k;
  k.isa = isa;
  fill(k);
  return k;
}

}  // namespace

const FormatKernels& format_kernels(Isa isa) noexcept {
  static const FormatKernels scalar_table = make(Isa::scalar, scalar::fill_format_kernels);
  if (!isa_available(isa)) return scalar_table;
  switch (isa) {
#if defined(OXI_HAVE_ARCH_SSE42)
    case Isa::sse42: {
      static const FormatKernels t = make(Isa::sse42, sse42::fill_format_kernels);
      return t;
    }
#endif
#if defined(OXI_HAVE_ARCH_AVX2)
    case Isa::avx2: {
      static const FormatKernels t = make(Isa::avx2, avx2::fill_format_kernels);
      return t;
    }
#endif
#if defined(OXI_HAVE_ARCH_AVX512)
    case Isa::avx512: {
      static const FormatKernels t = make(Isa::avx512, avx512::fill_format_kernels);
      return t;
    }
#endif
#if defined(OXI_HAVE_ARCH_NEON)
    case Isa::neon: {
      static const FormatKernels t = make(Isa::neon, neon::fill_format_kernels);
      return t;
    }
#endif
#if defined(OXI_HAVE_ARCH_NEON_DOTPROD)
    case Isa::neon_dotprod: {
      static const FormatKernels t = make(Isa::neon_dotprod, neon_dotprod::fill_format_kernels);
      return t;
    }
#endif
    default:
      return scalar_table;
  }
}

DType FormatKernels::preferred_layout(DType t, size_t rows, size_t cols) const noexcept {
  const DType layout = preferred_layout(t);
  if (layout == DType::Q4_K_R8 && (cols / QK_K) % kK8Blocks != 0 && rows > 0 &&
      rows % K8Sets(cols).set_rows == 0 && matvec_for(DType::Q4_K_R8S) != nullptr)
    return DType::Q4_K_R8S;
  return layout;
}

const FormatKernels& format_kernels() noexcept {
  static const FormatKernels& selected = format_kernels(selected_isa());
  return selected;
}

void matvec(DType w_type, const void* w, size_t w_row_bytes, size_t rows, size_t n,
            const void* x_act, float* y) noexcept {
  if (const MatvecFn f = format_kernels().matvec_for(w_type)) {
    f(w, w_row_bytes, rows, n, x_act, y);
  } else {
    // Unsupported type (a precondition violation): make the mistake visible downstream.
    for (size_t r = 0; r < rows; ++r) y[r] = std::numeric_limits<float>::quiet_NaN();
  }
}

void gemm_q(DType w_type, const void* w, size_t w_row_bytes, size_t rows, size_t n,
            const void* x_act, size_t x_act_stride, size_t tokens, float* y,
            size_t y_stride) noexcept {
  if (const GemmQFn f = format_kernels().gemm_q_for(w_type)) {
    f(w, w_row_bytes, rows, n, x_act, x_act_stride, tokens, y, y_stride);
  } else {
    for (size_t t = 0; t < tokens; ++t) {
      for (size_t r = 0; r < rows; ++r)
        y[t * y_stride + r] = std::numeric_limits<float>::quiet_NaN();
    }
  }
}

}  // namespace oxi::kernels
