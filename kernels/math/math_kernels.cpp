// Picks a MathKernels table by instruction set, and the free functions that use the selected
// one.
#include "kernels/math/math_kernels.h"

namespace oxi::kernels {

#define OXI_DECLARE_MATH_TABLE(ns)          \
  namespace ns {                            \
  const MathKernels& math_table() noexcept; \
  }
#if defined(OXI_HAVE_ARCH_AVX2)
OXI_DECLARE_MATH_TABLE(avx2)
#endif
#if defined(OXI_HAVE_ARCH_AVX512)
OXI_DECLARE_MATH_TABLE(avx512)
#endif
#if defined(OXI_HAVE_ARCH_SSE42)
OXI_DECLARE_MATH_TABLE(sse42)
#endif
#if defined(OXI_HAVE_ARCH_NEON)
OXI_DECLARE_MATH_TABLE(neon)
#endif
#if defined(OXI_HAVE_ARCH_NEON_DOTPROD)
OXI_DECLARE_MATH_TABLE(neon_dotprod)
#endif
OXI_DECLARE_MATH_TABLE(scalar)
#undef OXI_DECLARE_MATH_TABLE

const MathKernels& math_kernels(Isa isa) noexcept {
  if (!isa_available(isa)) return scalar::math_table();
  switch (isa) {
#if defined(OXI_HAVE_ARCH_AVX2)
    case Isa::avx2:
      return avx2::math_table();
#endif
#if defined(OXI_HAVE_ARCH_AVX512)
    case Isa::avx512:
      return avx512::math_table();
#endif
#if defined(OXI_HAVE_ARCH_SSE42)
    case Isa::sse42:
      return sse42::math_table();
#endif
#if defined(OXI_HAVE_ARCH_NEON)
    case Isa::neon:
      return neon::math_table();
#endif
#if defined(OXI_HAVE_ARCH_NEON_DOTPROD)
    case Isa::neon_dotprod:
      return neon_dotprod::math_table();
#endif
    default:
      return scalar::math_table();
  }
}

const MathKernels& math_kernels() noexcept {
  static const MathKernels& selected = math_kernels(selected_isa());
  return selected;
}

float dot_f32(std::span<const float> a, std::span<const float> b) noexcept {
  return math_kernels().dot_f32(a, b);
}
void matvec_f32(std::span<const float> w, size_t ldw, std::span<const float> x,
                std::span<const float> bias, std::span<float> y) noexcept {
  math_kernels().matvec_f32(w, ldw, x, bias, y);
}
void rms_norm(std::span<const float> x, std::span<const float> weight, float eps,
              std::span<float> y) noexcept {
  math_kernels().rms_norm(x, weight, eps, y);
}
void layer_norm(std::span<const float> x, std::span<const float> weight,
                std::span<const float> bias, float eps, std::span<float> y) noexcept {
  math_kernels().layer_norm(x, weight, bias, eps, y);
}
void group_norm(std::span<const float> x, size_t channels, size_t groups,
                std::span<const float> weight, std::span<const float> bias, float eps,
                std::span<float> y) noexcept {
  math_kernels().group_norm(x, channels, groups, weight, bias, eps, y);
}
void softmax(std::span<float> x) noexcept {
  math_kernels().softmax(x);
}
void gelu(std::span<const float> x, std::span<float> y, GeluForm form) noexcept {
  math_kernels().gelu(x, y, form);
}
void silu(std::span<const float> x, std::span<float> y) noexcept {
  math_kernels().silu(x, y);
}
void swiglu(std::span<const float> gate, std::span<const float> up, std::span<float> y) noexcept {
  math_kernels().swiglu(gate, up, y);
}
void geglu(std::span<const float> gate, std::span<const float> up, std::span<float> y,
           GeluForm form) noexcept {
  math_kernels().geglu(gate, up, y, form);
}
void attention(const AttentionParams& p, size_t head_begin, size_t head_end, size_t q_begin,
               size_t q_end) noexcept {
  math_kernels().attention(p, head_begin, head_end, q_begin, q_end);
}
uint64_t read_sum(std::span<const uint64_t> words) noexcept {
  return math_kernels().read_sum(words);
}

}  // namespace oxi::kernels
