// Repacking loaded weight matrices into the layouts the CPU kernels multiply fastest
// (kernels::FormatKernels::preferred_layout: Q4_0 -> Q4_0_R16, Q8_0 -> Q8_0_R16, Q4_K -> Q4_K_R8
// or Q4_K_R8S where rows would end in a short Q4_K_R8 group, IQ4_XS -> IQ4_XS_R8, IQ4_NL ->
// IQ4_NL_R16, Q5_0 / Q5_1 / Q4_1 / Q2_K / Q3_K -> Q5_0_R16 / Q5_1_R16 / Q4_1_R16 / Q2_K_R8 / Q3_K_R8
// on AVX2, Q5_K -> Q5_K_R8 on avx512), as llama.cpp repacks for its CPU backend. Results differ
// from the file's layout by f32 summation order only. The LLM (lib/llm/repack.h) and Whisper
// (lib/whisper/whisper_weights.h) loaders call it on their matrices.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <span>

#include "backends/backend.h"
#include "lib/formats/weight_builder.h"

namespace oxi {
class MappedFile;
}

namespace oxi::formats {

// Repacked copies of matrices, one buffer, each matrix at a 64-byte aligned offset.
struct RepackedBytes {
  static constexpr size_t kAlignment = size_t{2} << 20;  // a transparent huge page
  struct AlignedDelete {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{kAlignment}); }
  };
  std::unique_ptr<std::byte[], AlignedDelete> bytes;
};

// Whether loaders repack: on unless the environment sets OXI_REPACK=0 (OXI_REPACK=rows: without
// the row-set layout q4_K_r8s).
bool repack_enabled();

// Repacks every matrix of `multiplied` whose type the selected kernels prefer in another layout.
// `lookup_only` (may be null: a token embedding read a row at a time) is repacked only where it
// views the same rows as a multiplied matrix (a tied output), and then shares its copy. Matrices
// in `mapping` (the model file; may be null) are copied into `repacked` and their mapped pages
// let go; converted copies (`copies`) are repacked in place. Once any matrix is copied out of
// `mapping`, the other multiplied ones in it are copied too, as they are. Nothing happens when
// !repack_enabled().
void repack_for_cpu(std::span<backends::WeightMatrix* const> multiplied,
                    backends::WeightMatrix* lookup_only, WeightCopies& copies,
                    RepackedBytes& repacked, const MappedFile* mapping);

}  // namespace oxi::formats
