// Selects the instruction set an arch translation unit is compiled for.
//
// kernels/meson.build compiles every file listed in kernels_arch_sources once per instruction
// set, each time with one OXI_ARCH_* macro defined and that set's compiler flags. Code in those
// files lives in namespace oxi::kernels::OXI_ARCH_NS so the copies never collide at link time;
// dispatch code picks one copy at run time from cpu_features().
#pragma once

// xsimd: each instruction set's copy includes the library inside its own namespace
// (oxi::kernels::avx2::xsimd, ...), by a macro set before the include. xsimd's larger functions
// (exp, tanh and their polynomial helpers) are emitted out of line below -O3 (the sanitizer
// and debug builds), under the same names in every copy, and the linker would keep one of
// them for all: the avx512 copy's code in the avx2 path. Inside each set's namespace the
// copies never merge (tests/kernels/arch_symbols.py checks it).

#if defined(OXI_ARCH_AVX512)
// The AVX2 code (OXI_ARCH_AVX2 is defined too) compiled with AVX-512 F/BW/VL/DQ/VNNI enabled.
// Vectors stay 256 bits wide; what changes is that the compiler has 32 vector registers (the
// K-quant kernels spill accumulators with 16) and EVEX-only instructions such as ternary logic,
// and kernels may use VNNI dot products under `#if defined(OXI_ARCH_AVX512)`.
#if !defined(OXI_ARCH_AVX2)
#error "the avx512 instruction set is built as AVX2 plus AVX-512: define OXI_ARCH_AVX2 too"
#endif
#define xsimd oxi::kernels::avx512::xsimd  // see "xsimd" above
#include <xsimd/xsimd.hpp>
#define OXI_ARCH_NS avx512
#define OXI_ARCH_SIMD 1
namespace oxi::kernels::avx512 {
using Arch = xsimd::fma3<xsimd::avx2>;
}
#elif defined(OXI_ARCH_AVX2)
#define xsimd oxi::kernels::avx2::xsimd  // see "xsimd" above
#include <xsimd/xsimd.hpp>
#define OXI_ARCH_NS avx2
#define OXI_ARCH_SIMD 1
namespace oxi::kernels::avx2 {
using Arch = xsimd::fma3<xsimd::avx2>;
}
#elif defined(OXI_ARCH_SSE42)
#define xsimd oxi::kernels::sse42::xsimd  // see "xsimd" above
#include <xsimd/xsimd.hpp>
#define OXI_ARCH_NS sse42
#define OXI_ARCH_SIMD 1
namespace oxi::kernels::sse42 {
using Arch = xsimd::sse4_2;
}
#elif defined(OXI_ARCH_NEON_DOTPROD)
// The NEON code (OXI_ARCH_NEON is defined too) compiled for Armv8.2-A with the dot-product
// instructions, which the quantized formats' traits use (traits_neon.h).
#if !defined(OXI_ARCH_NEON)
#error "the neon_dotprod instruction set is built as NEON plus dotprod: define OXI_ARCH_NEON too"
#endif
#define xsimd oxi::kernels::neon_dotprod::xsimd  // see "xsimd" above
#include <xsimd/xsimd.hpp>
#define OXI_ARCH_NS neon_dotprod
#define OXI_ARCH_SIMD 1
namespace oxi::kernels::neon_dotprod {
using Arch = xsimd::neon64;
}
#elif defined(OXI_ARCH_NEON)
#define xsimd oxi::kernels::neon::xsimd  // see "xsimd" above
#include <xsimd/xsimd.hpp>
#define OXI_ARCH_NS neon
#define OXI_ARCH_SIMD 1
namespace oxi::kernels::neon {
using Arch = xsimd::neon64;
}
#elif defined(OXI_ARCH_SCALAR)
// Plain C++: the reference every SIMD path is tested against.
#define OXI_ARCH_NS scalar
#define OXI_ARCH_SIMD 0
#else
#error "arch.h is only for files in kernels_arch_sources"
#endif
