// gguf::Writer: serializes metadata and tensors as a GGUF v3 file, tensors aligned to
// `general.alignment`.
#include <cstring>
#include <fstream>
#include <limits>
#include <type_traits>
#include <utility>

#include "lib/core/error.h"
#include "lib/formats/ggml_types.h"
#include "lib/formats/gguf.h"

namespace oxi::gguf {

namespace {

constexpr const char* kContext = "gguf writer";

class Out {
 public:
  template <class T>
  void pod(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const size_t at = bytes.size();
    bytes.resize(at + sizeof(T));
    std::memcpy(bytes.data() + at, &v, sizeof(T));
  }
  void string(const std::string& s) {
    pod<uint64_t>(s.size());
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    bytes.insert(bytes.end(), p, p + s.size());
  }
  void raw(const std::vector<std::byte>& b) { bytes.insert(bytes.end(), b.begin(), b.end()); }
  void pad_to(size_t alignment) {
    bytes.resize((bytes.size() + alignment - 1) / alignment * alignment);
  }
  std::vector<std::byte> bytes;
};

[[noreturn]] void bad_value(const std::string& key, std::string_view problem) {
  throw Error(kContext, "metadata key '" + key + "': " + std::string(problem));
}

template <class T>
void put_int(Out& out, const Value& v, const std::string& key) {
  const bool fits = std::visit(
      [](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, uint64_t> || std::is_same_v<X, int64_t>) {
          return std::in_range<T>(x);
        }
        return false;
      },
      v.data);
  if (!fits) bad_value(key, "integer value missing or out of range for its type");
  if (const auto* u = std::get_if<uint64_t>(&v.data))
    out.pod<T>(static_cast<T>(*u));
  else
    out.pod<T>(static_cast<T>(std::get<int64_t>(v.data)));
}

template <class T>
const std::vector<T>& array_of(const Value& v, const std::string& key) {
  const auto* a = std::get_if<Value::Array>(&v.data);
  const auto* vec = a ? std::get_if<std::vector<T>>(a) : nullptr;
  if (!vec) bad_value(key, "array elements do not match the array type");
  return *vec;
}

template <class T>
void put_array(Out& out, const Value& v, const std::string& key) {
  for (const T& x : array_of<T>(v, key)) {
    if constexpr (std::is_same_v<T, std::string>)
      out.string(x);
    else
      out.pod<T>(x);
  }
}

void put_value(Out& out, const Value& v, const std::string& key) {
  switch (v.type) {
    case ValueType::UINT8:
      put_int<uint8_t>(out, v, key);
      break;
    case ValueType::INT8:
      put_int<int8_t>(out, v, key);
      break;
    case ValueType::UINT16:
      put_int<uint16_t>(out, v, key);
      break;
    case ValueType::INT16:
      put_int<int16_t>(out, v, key);
      break;
    case ValueType::UINT32:
      put_int<uint32_t>(out, v, key);
      break;
    case ValueType::INT32:
      put_int<int32_t>(out, v, key);
      break;
    case ValueType::UINT64:
      put_int<uint64_t>(out, v, key);
      break;
    case ValueType::INT64:
      put_int<int64_t>(out, v, key);
      break;
    case ValueType::FLOAT32:
    case ValueType::FLOAT64: {
      const auto* d = std::get_if<double>(&v.data);
      if (!d) bad_value(key, "float value missing");
      if (v.type == ValueType::FLOAT32)
        out.pod<float>(static_cast<float>(*d));
      else
        out.pod<double>(*d);
      break;
    }
    case ValueType::BOOL: {
      const auto* b = std::get_if<bool>(&v.data);
      if (!b) bad_value(key, "bool value missing");
      out.pod<uint8_t>(*b ? 1 : 0);
      break;
    }
    case ValueType::STRING: {
      const auto* s = std::get_if<std::string>(&v.data);
      if (!s) bad_value(key, "string value missing");
      out.string(*s);
      break;
    }
    case ValueType::ARRAY: {
      out.pod<uint32_t>(static_cast<uint32_t>(v.array_type));
      out.pod<uint64_t>(v.array_size());
      switch (v.array_type) {
        case ValueType::UINT8:
        case ValueType::BOOL:
          put_array<uint8_t>(out, v, key);
          break;
        case ValueType::INT8:
          put_array<int8_t>(out, v, key);
          break;
        case ValueType::UINT16:
          put_array<uint16_t>(out, v, key);
          break;
        case ValueType::INT16:
          put_array<int16_t>(out, v, key);
          break;
        case ValueType::UINT32:
          put_array<uint32_t>(out, v, key);
          break;
        case ValueType::INT32:
          put_array<int32_t>(out, v, key);
          break;
        case ValueType::FLOAT32:
          put_array<float>(out, v, key);
          break;
        case ValueType::UINT64:
          put_array<uint64_t>(out, v, key);
          break;
        case ValueType::INT64:
          put_array<int64_t>(out, v, key);
          break;
        case ValueType::FLOAT64:
          put_array<double>(out, v, key);
          break;
        case ValueType::STRING:
          put_array<std::string>(out, v, key);
          break;
        case ValueType::ARRAY:
          bad_value(key, "nested arrays are not supported");
      }
      break;
    }
    default:
      bad_value(key, "unknown value type");
  }
}

Value scalar(ValueType t, decltype(Value::data) data) {
  Value v;
  v.type = t;
  v.data = std::move(data);
  return v;
}

template <class T>
Value array(ValueType elem, std::vector<T> values) {
  Value v;
  v.type = ValueType::ARRAY;
  v.array_type = elem;
  v.data = Value::Array{std::move(values)};
  return v;
}

}  // namespace

Writer& Writer::set(std::string key, Value value) {
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return *this;
    }
  }
  metadata_.emplace_back(std::move(key), std::move(value));
  return *this;
}

Writer& Writer::set_string(std::string key, std::string v) {
  return set(std::move(key), scalar(ValueType::STRING, std::move(v)));
}
Writer& Writer::set_u32(std::string key, uint32_t v) {
  return set(std::move(key), scalar(ValueType::UINT32, uint64_t{v}));
}
Writer& Writer::set_i32(std::string key, int32_t v) {
  return set(std::move(key), scalar(ValueType::INT32, int64_t{v}));
}
Writer& Writer::set_u64(std::string key, uint64_t v) {
  return set(std::move(key), scalar(ValueType::UINT64, v));
}
Writer& Writer::set_f32(std::string key, float v) {
  return set(std::move(key), scalar(ValueType::FLOAT32, double{v}));
}
Writer& Writer::set_bool(std::string key, bool v) {
  return set(std::move(key), scalar(ValueType::BOOL, v));
}
Writer& Writer::set_string_array(std::string key, std::vector<std::string> v) {
  return set(std::move(key), array(ValueType::STRING, std::move(v)));
}
Writer& Writer::set_f32_array(std::string key, std::vector<float> v) {
  return set(std::move(key), array(ValueType::FLOAT32, std::move(v)));
}
Writer& Writer::set_i32_array(std::string key, std::vector<int32_t> v) {
  return set(std::move(key), array(ValueType::INT32, std::move(v)));
}

Writer& Writer::add_tensor(std::string name, kernels::DType dtype, std::vector<int64_t> shape,
                           std::vector<std::byte> data) {
  const size_t size = data.size();
  add_tensor(std::move(name), dtype, std::move(shape), TensorBytes{});
  PendingTensor& t = tensors_.back();
  if (size != t.bytes) {
    const std::string message = "tensor '" + t.name + "': data is " + std::to_string(size) +
                                " bytes, expected " + std::to_string(t.bytes);
    tensors_.pop_back();
    throw Error(kContext, message);
  }
  t.data = std::move(data);
  return *this;
}

Writer& Writer::add_tensor(std::string name, kernels::DType dtype, std::vector<int64_t> shape,
                           TensorBytes produce) {
  const std::string what = "tensor '" + name + "'";
  if (!formats::ggml_type_info(static_cast<uint32_t>(dtype))) {
    throw Error(kContext, what + ": unknown dtype");
  }
  if (shape.size() > 4) throw Error(kContext, what + ": more than 4 dimensions");
  uint64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(kContext, what + ": negative dimension");
    numel *= static_cast<uint64_t>(d);
  }
  const auto expected = formats::tensor_bytes(dtype, numel);
  if (!shape.empty() && shape.back() % formats::ggml_type_info(dtype).block_elems != 0) {
    throw Error(kContext, what + ": rows are not a whole number of blocks");
  }
  if (!expected) throw Error(kContext, what + ": its size overflows");
  for (const PendingTensor& t : tensors_) {
    if (t.name == name) throw Error(kContext, "duplicate " + what);
  }
  tensors_.push_back({std::move(name), dtype, std::move(shape), *expected, {}, std::move(produce)});
  return *this;
}

std::vector<std::byte> Writer::tensor_bytes(const PendingTensor& t) const {
  if (!t.produce || t.bytes == 0) return t.data;
  std::vector<std::byte> bytes = t.produce();
  if (bytes.size() != t.bytes)
    throw Error(kContext, "tensor '" + t.name + "': produced " + std::to_string(bytes.size()) +
                              " bytes, expected " + std::to_string(t.bytes));
  return bytes;
}

void Writer::set_alignment(size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 ||
      alignment > std::numeric_limits<uint32_t>::max()) {
    throw Error(kContext, "alignment " + std::to_string(alignment) + " is not a power of two");
  }
  alignment_ = alignment;
  set_u32("general.alignment", static_cast<uint32_t>(alignment));
}

std::vector<std::byte> Writer::header() const {
  Out out;
  out.bytes.insert(out.bytes.end(),
                   {std::byte{'G'}, std::byte{'G'}, std::byte{'U'}, std::byte{'F'}});
  out.pod<uint32_t>(3);
  out.pod<uint64_t>(tensors_.size());
  out.pod<uint64_t>(metadata_.size());
  for (const auto& [key, value] : metadata_) {
    out.string(key);
    out.pod<uint32_t>(static_cast<uint32_t>(value.type));
    put_value(out, value, key);
  }
  uint64_t offset = 0;
  for (const PendingTensor& t : tensors_) {
    out.string(t.name);
    out.pod<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (size_t d = t.shape.size(); d-- > 0;) out.pod<uint64_t>(static_cast<uint64_t>(t.shape[d]));
    out.pod<uint32_t>(static_cast<uint32_t>(t.dtype));
    out.pod<uint64_t>(offset);
    offset += (t.bytes + alignment_ - 1) / alignment_ * alignment_;
  }
  out.pad_to(alignment_);
  return std::move(out.bytes);
}

std::vector<std::byte> Writer::to_bytes() const {
  Out out;
  out.bytes = header();
  for (const PendingTensor& t : tensors_) {
    out.raw(tensor_bytes(t));
    out.pad_to(alignment_);
  }
  return std::move(out.bytes);
}

void Writer::write(const std::filesystem::path& path) const {
  std::filesystem::path part = path;
  part += ".part";
  try {
    std::ofstream f(part, std::ios::binary | std::ios::trunc);
    if (!f) throw Error(part.string(), "cannot open for writing");
    const auto put = [&](const std::vector<std::byte>& bytes) {
      f.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    };
    put(header());
    for (const PendingTensor& t : tensors_) {
      put(tensor_bytes(t));
      put(std::vector<std::byte>((alignment_ - t.bytes % alignment_) % alignment_));
      if (!f) throw Error(part.string(), "write failed");
    }
    if (!f.flush()) throw Error(part.string(), "write failed");
    f.close();
    std::error_code ec;
    std::filesystem::rename(part, path, ec);
    if (ec) throw Error(path.string(), "cannot write: " + ec.message());
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(part, ignored);
    throw;
  }
}

}  // namespace oxi::gguf
