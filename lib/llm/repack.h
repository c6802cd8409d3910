// Repacking loaded weights into the layouts the CPU kernels multiply fastest (kernels::
// FormatKernels::preferred_layout: Q4_0 -> Q4_0_R16, Q8_0 -> Q8_0_R16 and Q4_K -> Q4_K_R8 on
// AVX2, or Q4_K_R8S where rows would end in a short Q4_K_R8 group; IQ4_XS -> IQ4_XS_R8, IQ4_NL
// -> IQ4_NL_R16, Q5_0 -> Q5_0_R16), as llama.cpp repacks Q4_0 / Q8_0 / Q4_K / IQ4_NL for its CPU
// backend. Results
// differ from the file's layout by f32 summation order only.
#pragma once

#include "lib/llm/weights.h"

namespace oxi {
class MappedFile;
}

namespace oxi::llm {

// Whether loaders repack: on unless the environment sets OXI_REPACK=0 (OXI_REPACK=rows: without
// the row-set layout q4_K_r8s).
bool repack_enabled();

// Repacks every matrix of `w` the forward pass multiplies, when the selected kernels prefer
// another layout for its type. Matrices in `mapping` (the model file; may be null) are copied
// into w.repacked and their mapped pages let go; converted copies (w.copies) are repacked in
// place. Views of the same rows (a tied output and embedding) share one copy.
void repack_for_cpu(ModelWeights& w, const MappedFile* mapping);

}  // namespace oxi::llm
