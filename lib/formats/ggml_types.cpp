#include "lib/formats/ggml_types.h"

#include "lib/formats/byte_cursor.h"

namespace oxi::formats {

namespace {

struct Row {
  uint32_t type;
  GgmlTypeInfo info;
};

constexpr Row kTypes[] = {
    {0, {"f32", 1, 4}},       {1, {"f16", 1, 2}},       {2, {"q4_0", 32, 18}},
    {3, {"q4_1", 32, 20}},    {6, {"q5_0", 32, 22}},    {7, {"q5_1", 32, 24}},
    {8, {"q8_0", 32, 34}},    {9, {"q8_1", 32, 36}},    {10, {"q2_K", 256, 84}},
    {11, {"q3_K", 256, 110}}, {12, {"q4_K", 256, 144}}, {13, {"q5_K", 256, 176}},
    {14, {"q6_K", 256, 210}}, {15, {"q8_K", 256, 292}}, {24, {"i8", 1, 1}},
    {25, {"i16", 1, 2}},      {26, {"i32", 1, 4}},      {27, {"i64", 1, 8}},
    {28, {"f64", 1, 8}},      {30, {"bf16", 1, 2}},
};

}  // namespace

std::optional<GgmlTypeInfo> ggml_type_info(uint32_t gguf_type) noexcept {
  for (const Row& r : kTypes) {
    if (r.type == gguf_type) return r.info;
  }
  return std::nullopt;
}

GgmlTypeInfo ggml_type_info(kernels::DType t) noexcept {
  return *ggml_type_info(static_cast<uint32_t>(t));
}

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
    case 34:
      return "tq1_0";
    case 35:
      return "tq2_0";
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
