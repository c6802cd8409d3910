// The table of math kernels compiled for one instruction set. math_kernels(isa) picks a table
// (tests run every available one against the scalar reference); the free functions in gemm.h,
// matvec.h, norm.h, activation.h, softmax.h and attention.h call math_kernels().
#pragma once

#include "kernels/cpu_features.h"
#include "kernels/math/activation.h"
#include "kernels/math/attention.h"
#include "kernels/math/gemm.h"
#include "kernels/math/matvec.h"
#include "kernels/math/norm.h"
#include "kernels/math/read_sum.h"
#include "kernels/math/softmax.h"

namespace oxi::kernels {

// Each entry has the signature of the free function of the same name.
struct MathKernels {
  Isa isa = Isa::scalar;
  GemmF32Fn gemm_f32 = nullptr;
  decltype(&oxi::kernels::dot_f32) dot_f32 = nullptr;
  decltype(&oxi::kernels::matvec_f32) matvec_f32 = nullptr;
  decltype(&oxi::kernels::rms_norm) rms_norm = nullptr;
  decltype(&oxi::kernels::layer_norm) layer_norm = nullptr;
  decltype(&oxi::kernels::group_norm) group_norm = nullptr;
  decltype(&oxi::kernels::softmax) softmax = nullptr;
  decltype(&oxi::kernels::gelu) gelu = nullptr;
  decltype(&oxi::kernels::silu) silu = nullptr;
  decltype(&oxi::kernels::swiglu) swiglu = nullptr;
  decltype(&oxi::kernels::geglu) geglu = nullptr;
  decltype(&oxi::kernels::attention) attention = nullptr;
  decltype(&oxi::kernels::read_sum) read_sum = nullptr;
};

// The table for `isa`; the scalar table when this build or CPU lacks it (see isa_available).
const MathKernels& math_kernels(Isa isa) noexcept;
// The table for selected_isa().
const MathKernels& math_kernels() noexcept;

}  // namespace oxi::kernels
