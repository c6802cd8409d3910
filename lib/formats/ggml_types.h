// The GGUF tensor types the readers accept, as the file formats see them: kernels' one table
// of types (kernels::dtype_info) plus the names of ggml types this build cannot read (for
// error messages) and an overflow-checked tensor size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "kernels/formats/dtype.h"

namespace oxi::formats {

using GgmlTypeInfo = kernels::DTypeInfo;

// Info for the types kernels::DType has; nullopt for every other number.
inline std::optional<GgmlTypeInfo> ggml_type_info(uint32_t gguf_type) noexcept {
  return kernels::dtype_info(gguf_type);
}
inline const GgmlTypeInfo& ggml_type_info(kernels::DType t) noexcept {
  return kernels::info(t);
}
// Name of a ggml type number this build does not accept ("iq2_xxs"), for error messages.
std::string_view ggml_type_name_any(uint32_t gguf_type) noexcept;

// Bytes of `numel` elements of `t`; nullopt when numel is not a whole number of blocks or the
// size overflows.
std::optional<uint64_t> tensor_bytes(kernels::DType t, uint64_t numel) noexcept;

}  // namespace oxi::formats
