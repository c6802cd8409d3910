// gguf::Value helpers shared by the reader and the writer.
#include <type_traits>

#include "lib/formats/gguf.h"

namespace oxi::gguf {

std::string_view value_type_name(ValueType t) noexcept {
  switch (t) {
    case ValueType::UINT8:
      return "u8";
    case ValueType::INT8:
      return "i8";
    case ValueType::UINT16:
      return "u16";
    case ValueType::INT16:
      return "i16";
    case ValueType::UINT32:
      return "u32";
    case ValueType::INT32:
      return "i32";
    case ValueType::FLOAT32:
      return "f32";
    case ValueType::BOOL:
      return "bool";
    case ValueType::STRING:
      return "string";
    case ValueType::ARRAY:
      return "array";
    case ValueType::UINT64:
      return "u64";
    case ValueType::INT64:
      return "i64";
    case ValueType::FLOAT64:
      return "f64";
  }
  return "unknown";
}

size_t Value::array_size() const {
  if (type != ValueType::ARRAY) return 0;
  const Array* a = std::get_if<Array>(&data);
  if (!a) return 0;
  return std::visit([](const auto& v) { return v.size(); }, *a);
}

}  // namespace oxi::gguf
