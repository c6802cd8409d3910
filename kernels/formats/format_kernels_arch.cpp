// Fills the FormatKernels table of the instruction set this file is compiled for (arch.h).
#include "kernels/arch.h"
#include "kernels/formats/float_tiles.h"
#include "kernels/formats/iq4_xs_r8_tiles.h"
#include "kernels/formats/q2_k_r8_tiles.h"
#include "kernels/formats/q3_k_r8_tiles.h"
#include "kernels/formats/q4_0_r16_tiles.h"
#include "kernels/formats/q4_k_r8_tiles.h"
#include "kernels/formats/q4_k_r8s_tiles.h"
#include "kernels/formats/q5_k_r8_tiles.h"
#include "kernels/formats/q5_r16_tiles.h"
#include "kernels/formats/q8_0_r16_tiles.h"
#include "kernels/formats/quant.h"
#include "kernels/formats/quantize_act_simd.h"
#include "kernels/formats/tiles.h"
#include "kernels/formats/traits_avx2.h"
#include "kernels/formats/traits_neon.h"
#include "kernels/formats/traits_scalar.h"

namespace oxi::kernels::OXI_ARCH_NS {
namespace {

#if defined(OXI_ARCH_AVX2) || defined(OXI_ARCH_NEON)
namespace q = simd;
using QQ8_0 = simd::Q8_0;
#else
// Instruction sets without hand-written traits use the reference (the compiler vectorizes
// the integer loops with the set's flags).
namespace q = ref;
using QQ8_0 = ref::Q8_0;
#endif

template <class K>
void set(FormatKernels& k, DType t) noexcept {
  k.matvec[static_cast<size_t>(t)] = matvec_driver<K>;
  k.gemm_q[static_cast<size_t>(t)] = gemm_driver<K>;
}

}  // namespace

void fill_format_kernels(FormatKernels& k) noexcept {
  set<FloatTile<LoadF32>>(k, DType::F32);
  set<FloatTile<LoadF16>>(k, DType::F16);
  set<FloatTile<LoadBF16>>(k, DType::BF16);
  set<QuantTile<q::Q4_0>>(k, DType::Q4_0);
  set<QuantTile<q::Q4_1>>(k, DType::Q4_1);
  set<QuantTile<q::Q5_0>>(k, DType::Q5_0);
  set<QuantTile<q::Q5_1>>(k, DType::Q5_1);
  set<QuantTile<QQ8_0>>(k, DType::Q8_0);
  set<QuantTile<q::Q2_K>>(k, DType::Q2_K);
  set<QuantTile<q::Q3_K>>(k, DType::Q3_K);
  set<QuantTile<q::Q4_K>>(k, DType::Q4_K);
  set<QuantTile<q::Q5_K>>(k, DType::Q5_K);
  set<QuantTile<q::Q6_K>>(k, DType::Q6_K);
  set<QuantTile<q::IQ4_NL>>(k, DType::IQ4_NL);
  set<QuantTile<q::IQ4_XS>>(k, DType::IQ4_XS);
  set<QuantTile<q::TQ1_0>>(k, DType::TQ1_0);
  set<QuantTile<q::TQ2_0>>(k, DType::TQ2_0);
  set<Q4_0R16Tile>(k, DType::Q4_0_R16);
  set<IQ4NLR16Tile>(k, DType::IQ4_NL_R16);
  set<Q5_0R16Tile>(k, DType::Q5_0_R16);
  set<Q5_1R16Tile>(k, DType::Q5_1_R16);
  set<Q4_1R16Tile>(k, DType::Q4_1_R16);
  set<Q8_0R16Tile>(k, DType::Q8_0_R16);
  set<Q4KR8Tile>(k, DType::Q4_K_R8);
  set<IQ4XSR8Tile>(k, DType::IQ4_XS_R8);
  set<Q5KR8Tile>(k, DType::Q5_K_R8);
  set<Q3KR8Tile>(k, DType::Q3_K_R8);
  set<Q2KR8Tile>(k, DType::Q2_K_R8);
  // q4_K_r8s: its own loops over sets (the drivers take rows one at a time)
  k.matvec[static_cast<size_t>(DType::Q4_K_R8S)] = Q4KR8STile::matvec;
  k.gemm_q[static_cast<size_t>(DType::Q4_K_R8S)] = Q4KR8STile::gemm;
  k.quantize_q8_0 = quantize_q8_0;
  k.quantize_q8_1 = quantize_q8_1;
  k.quantize_q8_K = quantize_q8_K;
#if defined(OXI_ARCH_AVX2)
  k.fast_q4_0_r16 = true;
  k.fast_iq4_nl_r16 = true;
  k.fast_q5_0_r16 = true;
  k.fast_q5_1_r16 = true;
  k.fast_q4_1_r16 = true;
  k.fast_q8_0_r16 = true;
  k.fast_q4_k_r8 = true;
  k.fast_iq4_xs_r8 = true;
  k.fast_q2_k_r8 = true;
  k.fast_q3_k_r8 = true;
  // The r16 tiles of 2-3 tokens: one row a pass, their lines requested ahead (kStreamTokens),
  // 512-bit on avx512 (r16_pass_512); faster than a matvec a token on avx2 too (q4_0 / q8_0
  // pp2 +5-12 / +30-50 %, docs/benchmarks.md, sixty-third session)
  for (DType t : {DType::Q4_0_R16, DType::IQ4_NL_R16, DType::Q8_0_R16, DType::Q5_0_R16,
                  DType::Q5_1_R16, DType::Q4_1_R16})
    k.few_token_tiles[static_cast<size_t>(t)] = true;
#endif
#if defined(OXI_ARCH_AVX512)
  // AVX2 alone has a q5_K_r8 tile too (q5_k_r8_tiles.h), but keeps plain q5_K: prefill +70 %,
  // decode -11 to -14 % (docs/benchmarks.md, fifty-fourth session)
  k.fast_q5_k_r8 = true;
  k.stream_lines_choice = true;
#endif
}

}  // namespace oxi::kernels::OXI_ARCH_NS
