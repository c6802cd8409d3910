#include "kernels/formats/dtype.h"

#include <array>
#include <cctype>

namespace oxi::kernels {
namespace {

struct Entry {
  uint32_t id;
  DTypeInfo info;
};

// Sizes from the GGUF spec; the block structs in blocks.h assert the same numbers.
constexpr std::array<Entry, 24> kTable = {{
    {0, {"f32", 1, 4, false}},      {1, {"f16", 1, 2, false}},
    {2, {"q4_0", 32, 18, true}},    {3, {"q4_1", 32, 20, true}},
    {6, {"q5_0", 32, 22, true}},    {7, {"q5_1", 32, 24, true}},
    {8, {"q8_0", 32, 34, true}},    {9, {"q8_1", 32, 36, true}},
    {10, {"q2_K", 256, 84, true}},  {11, {"q3_K", 256, 110, true}},
    {12, {"q4_K", 256, 144, true}}, {13, {"q5_K", 256, 176, true}},
    {14, {"q6_K", 256, 210, true}}, {15, {"q8_K", 256, 292, true}},
    {20, {"iq4_nl", 32, 18, true}}, {23, {"iq4_xs", 256, 136, true}},
    {24, {"i8", 1, 1, false}},      {25, {"i16", 1, 2, false}},
    {26, {"i32", 1, 4, false}},     {27, {"i64", 1, 8, false}},
    {28, {"f64", 1, 8, false}},     {30, {"bf16", 1, 2, false}},
    {34, {"tq1_0", 256, 54, true}}, {35, {"tq2_0", 256, 66, true}},
}};

// Kernel-internal layouts: same block size and bytes as the format they repack.
constexpr std::array<Entry, 12> kInternal = {{
    {63, {"q4_0_r16", 32, 18, true}},
    {62, {"q8_0_r16", 32, 34, true}},
    {61, {"q4_K_r8", 256, 144, true}},
    {60, {"q4_K_r8s", 256, 144, true}},
    {59, {"iq4_xs_r8", 256, 136, true}},
    {58, {"iq4_nl_r16", 32, 18, true}},
    {57, {"q5_0_r16", 32, 22, true}},
    {56, {"q5_1_r16", 32, 24, true}},
    {55, {"q4_1_r16", 32, 20, true}},
    {54, {"q5_K_r8", 256, 176, true}},
    {53, {"q3_K_r8", 256, 110, true}},
    {52, {"q2_K_r8", 256, 84, true}},
}};

constexpr DTypeInfo kUnknown{"?", 1, 0, false};

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<DTypeInfo> dtype_info(uint32_t gguf_type) noexcept {
  for (const Entry& e : kTable) {
    if (e.id == gguf_type) return e.info;
  }
  return std::nullopt;
}

const DTypeInfo& info(DType t) noexcept {
  for (const Entry& e : kTable) {
    if (e.id == static_cast<uint32_t>(t)) return e.info;
  }
  for (const Entry& e : kInternal) {
    if (e.id == static_cast<uint32_t>(t)) return e.info;
  }
  return kUnknown;
}

size_t row_bytes(DType t, size_t n) noexcept {
  const DTypeInfo& i = info(t);
  if (i.block_bytes == 0 || n % i.block_elems != 0) return 0;
  return n / i.block_elems * i.block_bytes;
}

std::optional<DType> parse_dtype(std::string_view s) noexcept {
  for (const Entry& e : kTable) {
    if (iequals(s, e.info.name)) return static_cast<DType>(e.id);
  }
  return std::nullopt;
}

}  // namespace oxi::kernels
