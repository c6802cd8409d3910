// Repacking an LLM's loaded weights for the CPU kernels (lib/formats/weight_repack.h): every
// matrix the forward pass multiplies, and the token embedding where it is the tied output.
#pragma once

#include "lib/llm/weights.h"

namespace oxi {
class MappedFile;
}

namespace oxi::llm {

// Repacks w's matrices (formats::repack_for_cpu); `mapping` is the model file (may be null).
void repack_for_cpu(ModelWeights& w, const MappedFile* mapping);

}  // namespace oxi::llm
