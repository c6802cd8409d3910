#include "lib/formats/ggml_types.h"

#include "lib/formats/byte_cursor.h"

namespace oxi::formats {

std::string_view ggml_type_name_any(uint32_t gguf_type) noexcept {
  if (auto info = ggml_type_info(gguf_type)) return info->name;
  switch (gguf_type) {
    case 16:
      return "iq2_xxs";
    case 17:
      return "iq2_xs";
    case 18:
      return "iq3_xxs";
    case 19:
      return "iq1_s";
    case 20:
      return "iq4_nl";
    case 21:
      return "iq3_s";
    case 22:
      return "iq2_s";
    case 23:
      return "iq4_xs";
    case 29:
      return "iq1_m";
    case 39:
      return "mxfp4";
    default:
      return "unknown";
  }
}

std::optional<uint64_t> tensor_bytes(kernels::DType t, uint64_t numel) noexcept {
  const GgmlTypeInfo info = ggml_type_info(t);
  if (numel % info.block_elems != 0) return std::nullopt;
  uint64_t bytes;
  if (mul_overflows(numel / info.block_elems, info.block_bytes, &bytes)) return std::nullopt;
  return bytes;
}

}  // namespace oxi::formats
