// Block sizes of the GGUF tensor types the readers accept.
//
// LOCAL TABLE: kernels/formats/dtype.cpp (kernels::dtype_info / row_bytes) is written by
// another part of the tree; until the formats code is switched over to it, the readers and
// writers use this copy so they do not depend on it landing first. The numbers are ggml's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "kernels/formats/dtype.h"

namespace oxi::formats {

struct GgmlTypeInfo {
  std::string_view name;  // "f32", "q4_K", ...
  size_t block_elems;
  size_t block_bytes;
};

// Info for the types kernels::DType has; nullopt for every other number.
std::optional<GgmlTypeInfo> ggml_type_info(uint32_t gguf_type) noexcept;
GgmlTypeInfo ggml_type_info(kernels::DType t) noexcept;
// Name of a ggml type number this build does not accept ("iq2_xxs"), for error messages.
std::string_view ggml_type_name_any(uint32_t gguf_type) noexcept;

// Bytes of `numel` elements of `t`; nullopt when numel is not a whole number of blocks or the
// size overflows.
std::optional<uint64_t> tensor_bytes(kernels::DType t, uint64_t numel) noexcept;

}  // namespace oxi::formats
