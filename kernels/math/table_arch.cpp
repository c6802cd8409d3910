// This instruction set's MathKernels table (arch source).
#include "kernels/arch.h"
#include "kernels/math/arch_math.h"

namespace oxi::kernels::OXI_ARCH_NS {

const MathKernels& math_table() noexcept {
#if defined(OXI_ARCH_AVX512)
  constexpr Isa kIsa = Isa::avx512;
#elif defined(OXI_ARCH_AVX2)
  constexpr Isa kIsa = Isa::avx2;
#elif defined(OXI_ARCH_SSE42)
  constexpr Isa kIsa = Isa::sse42;
#elif defined(OXI_ARCH_NEON_DOTPROD)
  constexpr Isa kIsa = Isa::neon_dotprod;
#elif defined(OXI_ARCH_NEON)
  constexpr Isa kIsa = Isa::neon;
#else
  constexpr Isa kIsa = Isa::scalar;
#endif
  static constexpr MathKernels table{
      .isa = kIsa,
      .gemm_f32 = &gemm_f32,
      .dot_f32 = &dot_f32,
      .matvec_f32 = &matvec_f32,
      .rms_norm = &rms_norm,
      .layer_norm = &layer_norm,
      .group_norm = &group_norm,
      .softmax = &softmax,
      .gelu = &gelu,
      .silu = &silu,
      .swiglu = &swiglu,
      .geglu = &geglu,
      .attention = &attention,
      .read_sum = &read_sum,
  };
  return table;
}

}  // namespace oxi::kernels::OXI_ARCH_NS
