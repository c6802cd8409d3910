// Activation quantization, the ggml way: each weight format names the activation format its
// integer dot product runs against (see quant.h).
#include <cstring>

#include "kernels/formats/blocks.h"
#include "kernels/formats/iq4_nl_r16.h"
#include "kernels/formats/q5_0_r16.h"
#include "kernels/formats/q5_1_r16.h"
#include "kernels/formats/q4_0_r16.h"
#include "kernels/formats/q3_k_r8.h"
#include "kernels/formats/q4_k_r8.h"
#include "kernels/formats/q4_k_r8s.h"
#include "kernels/formats/q8_0_r16.h"
#include "kernels/formats/quant.h"
#include "kernels/formats/quantize_k.h"

namespace oxi::kernels {

DType activation_dtype(DType weight) noexcept {
  switch (weight) {
    case DType::Q4_0:
    case DType::Q5_0:
    case DType::Q8_0:
    case DType::IQ4_NL:
    case DType::Q4_0_R16:
    case DType::Q8_0_R16:
    case DType::IQ4_NL_R16:
    case DType::Q5_0_R16:
      return DType::Q8_0;
    case DType::Q4_1:
    case DType::Q5_1:
    case DType::Q5_1_R16:
    case DType::Q4_1_R16:
      return DType::Q8_1;
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ4_XS:
    case DType::TQ1_0:
    case DType::TQ2_0:
    case DType::Q4_K_R8:
    case DType::Q4_K_R8S:
    case DType::IQ4_XS_R8:
    case DType::Q5_K_R8:
    case DType::Q3_K_R8:
    case DType::Q2_K_R8:
      return DType::Q8_K;
    default:
      return DType::F32;
  }
}

size_t activation_bytes(DType weight, size_t n) noexcept {
  // The repacked layouts' groups hold f32 and int32 fields, while their plain tail blocks may
  // leave a byte count that is not a multiple of 4: rounded up, so that activations laid one
  // after another (a token's at t * activation_bytes) stay aligned.
  if (weight == DType::Q4_0_R16) return align_activation_bytes(q4_0_r16_activation_bytes(n));
  if (weight == DType::Q8_0_R16) return align_activation_bytes(q8_0_r16_activation_bytes(n));
  if (weight == DType::IQ4_NL_R16) return align_activation_bytes(iq4_nl_r16_activation_bytes(n));
  if (weight == DType::Q5_0_R16) return align_activation_bytes(q5_0_r16_activation_bytes(n));
  if (weight == DType::Q5_1_R16 || weight == DType::Q4_1_R16)  // the same q8_1 layout
    return align_activation_bytes(q5_1_r16_activation_bytes(n));
  if (weight == DType::Q4_K_R8 || weight == DType::IQ4_XS_R8 || weight == DType::Q5_K_R8)
    return align_activation_bytes(q4_k_r8_activation_bytes(n));
  if (weight == DType::Q4_K_R8S) return align_activation_bytes(q4_k_r8s_activation_bytes(n));
  if (weight == DType::Q3_K_R8 || weight == DType::Q2_K_R8)  // the same layout
    return align_activation_bytes(q3_k_r8_activation_bytes(n));
  return row_bytes(activation_dtype(weight), n);
}

void quantize_activation(DType weight, const float* x, void* out, size_t n) noexcept {
  if (weight == DType::Q4_0_R16) return quantize_activation_q4_0_r16(x, out, n);
  if (weight == DType::Q8_0_R16) return quantize_activation_q8_0_r16(x, out, n);
  if (weight == DType::IQ4_NL_R16) return quantize_activation_iq4_nl_r16(x, out, n);
  if (weight == DType::Q5_0_R16) return quantize_activation_q5_0_r16(x, out, n);
  if (weight == DType::Q5_1_R16 || weight == DType::Q4_1_R16)
    return quantize_activation_q5_1_r16(x, out, n);
  if (weight == DType::Q4_K_R8 || weight == DType::IQ4_XS_R8 || weight == DType::Q5_K_R8)
    return quantize_activation_q4_k_r8(x, out, n);
  if (weight == DType::Q4_K_R8S) return quantize_activation_q4_k_r8s(x, out, n);
  if (weight == DType::Q3_K_R8 || weight == DType::Q2_K_R8)
    return quantize_activation_q3_k_r8(x, out, n);
  switch (activation_dtype(weight)) {
    case DType::Q8_0:
      format_kernels().quantize_q8_0(x, out, n);
      break;
    case DType::Q8_1:
      format_kernels().quantize_q8_1(x, out, n);
      break;
    case DType::Q8_K:
      format_kernels().quantize_q8_K(x, out, n);
      break;
    default:
      std::memcpy(out, x, n * sizeof(float));
      break;
  }
}

}  // namespace oxi::kernels
