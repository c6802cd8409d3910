// gguf::Reader: parses and validates the header, metadata and tensor table of a mapped GGUF
// file. Every count and length is checked against the bytes left before anything is
// allocated, so a corrupt or hostile file fails with one oxi::Error instead of a crash.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "lib/core/error.h"
#include "lib/formats/byte_cursor.h"
#include "lib/formats/ggml_types.h"
#include "lib/formats/gguf.h"
#include "lib/formats/utf8.h"

namespace oxi::gguf {

namespace {

using formats::ByteCursor;

constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS
constexpr uint64_t kMaxI64 = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

bool is_known_type(uint32_t t) {
  return t <= static_cast<uint32_t>(ValueType::FLOAT64);
}

// Smallest encoded size of one value of `t`, used to reject counts the file cannot hold.
size_t min_encoded_size(ValueType t) {
  switch (t) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::BOOL:
      return 1;
    case ValueType::UINT16:
    case ValueType::INT16:
      return 2;
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::FLOAT32:
      return 4;
    case ValueType::UINT64:
    case ValueType::INT64:
    case ValueType::FLOAT64:
    case ValueType::STRING:
      return 8;  // the length prefix
    case ValueType::ARRAY:
      return 12;  // element type + count
  }
  return 1;
}

std::string read_string(ByteCursor& c, std::string_view what) {
  const size_t at = c.pos();
  const uint64_t len = c.read<uint64_t>(what);
  if (len > c.remaining()) {
    c.fail(std::string(what) + " at offset " + std::to_string(at) + " has length " +
           std::to_string(len) + ", past the end of the file (" + std::to_string(c.remaining()) +
           " bytes left)");
  }
  std::string s(c.take_chars(len, what));
  if (!formats::is_valid_utf8(s)) {
    c.fail(std::string(what) + " at offset " + std::to_string(at) + " is not valid UTF-8");
  }
  return s;
}

template <class T>
std::vector<T> read_pod_array(ByteCursor& c, uint64_t n, std::string_view what) {
  auto bytes = c.take(n * sizeof(T), what);  // n was checked against the bytes left
  std::vector<T> v(n);
  if (n) std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

Value read_value(ByteCursor& c, ValueType type, const std::string& key) {
  Value v;
  v.type = type;
  const std::string what = "value of '" + key + "'";
  switch (type) {
    case ValueType::UINT8:
      v.data = uint64_t{c.read<uint8_t>(what)};
      break;
    case ValueType::INT8:
      v.data = int64_t{c.read<int8_t>(what)};
      break;
    case ValueType::UINT16:
      v.data = uint64_t{c.read<uint16_t>(what)};
      break;
    case ValueType::INT16:
      v.data = int64_t{c.read<int16_t>(what)};
      break;
    case ValueType::UINT32:
      v.data = uint64_t{c.read<uint32_t>(what)};
      break;
    case ValueType::INT32:
      v.data = int64_t{c.read<int32_t>(what)};
      break;
    case ValueType::UINT64:
      v.data = c.read<uint64_t>(what);
      break;
    case ValueType::INT64:
      v.data = c.read<int64_t>(what);
      break;
    case ValueType::FLOAT32:
      v.data = double{c.read<float>(what)};
      break;
    case ValueType::FLOAT64:
      v.data = c.read<double>(what);
      break;
    case ValueType::BOOL:
      v.data = c.read<uint8_t>(what) != 0;
      break;
    case ValueType::STRING:
      v.data = read_string(c, what);
      break;
    case ValueType::ARRAY: {
      const uint32_t raw_elem = c.read<uint32_t>(what + " (array element type)");
      if (!is_known_type(raw_elem)) {
        c.fail("metadata key '" + key + "': unknown array element type " +
               std::to_string(raw_elem));
      }
      const auto elem = static_cast<ValueType>(raw_elem);
      if (elem == ValueType::ARRAY) {
        c.fail("metadata key '" + key + "': nested arrays (arrays of arrays) are not supported");
      }
      const uint64_t n = c.read<uint64_t>(what + " (array length)");
      if (n > c.remaining() / min_encoded_size(elem)) {
        c.fail("metadata key '" + key + "': array length " + std::to_string(n) +
               " cannot fit in the " + std::to_string(c.remaining()) + " bytes left");
      }
      v.array_type = elem;
      switch (elem) {
        case ValueType::UINT8:
        case ValueType::BOOL:
          v.data = Value::Array{read_pod_array<uint8_t>(c, n, what)};
          break;
        case ValueType::INT8:
          v.data = Value::Array{read_pod_array<int8_t>(c, n, what)};
          break;
        case ValueType::UINT16:
          v.data = Value::Array{read_pod_array<uint16_t>(c, n, what)};
          break;
        case ValueType::INT16:
          v.data = Value::Array{read_pod_array<int16_t>(c, n, what)};
          break;
        case ValueType::UINT32:
          v.data = Value::Array{read_pod_array<uint32_t>(c, n, what)};
          break;
        case ValueType::INT32:
          v.data = Value::Array{read_pod_array<int32_t>(c, n, what)};
          break;
        case ValueType::FLOAT32:
          v.data = Value::Array{read_pod_array<float>(c, n, what)};
          break;
        case ValueType::UINT64:
          v.data = Value::Array{read_pod_array<uint64_t>(c, n, what)};
          break;
        case ValueType::INT64:
          v.data = Value::Array{read_pod_array<int64_t>(c, n, what)};
          break;
        case ValueType::FLOAT64:
          v.data = Value::Array{read_pod_array<double>(c, n, what)};
          break;
        case ValueType::STRING: {
          std::vector<std::string> strings;
          strings.reserve(n);
          for (uint64_t i = 0; i < n; ++i) strings.push_back(read_string(c, what + " (element)"));
          v.data = Value::Array{std::move(strings)};
          break;
        }
        case ValueType::ARRAY:
          break;  // rejected above
      }
      break;
    }
  }
  return v;
}

bool is_integer(ValueType t) {
  switch (t) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::UINT16:
    case ValueType::INT16:
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::UINT64:
    case ValueType::INT64:
      return true;
    default:
      return false;
  }
}

// The value of an integer-typed Value as a 128-bit-safe pair: negative flag + magnitude.
struct IntValue {
  bool negative = false;
  uint64_t magnitude = 0;
};

IntValue int_value(const Value& v) {
  if (const auto* u = std::get_if<uint64_t>(&v.data)) return {false, *u};
  const int64_t s = std::get<int64_t>(v.data);
  if (s < 0) return {true, static_cast<uint64_t>(-(s + 1)) + 1};
  return {false, static_cast<uint64_t>(s)};
}

}  // namespace

Reader::Reader(const std::filesystem::path& path) : Reader(MappedFile::open(path)) {}

Reader::Reader(std::shared_ptr<const MappedFile> file)
    : path_(file->path()), file_(std::move(file)) {
  parse();
}

void Reader::parse() {
  ByteCursor c(file_->bytes(), path_.string());
  if (c.size() < 4) c.fail("not a GGUF file (only " + std::to_string(c.size()) + " bytes)");
  if (std::memcmp(c.take(4, "magic").data(), "GGUF", 4) != 0) {
    c.fail("not a GGUF file (bad magic; expected \"GGUF\")");
  }
  version_ = c.read<uint32_t>("version");
  if (version_ == 1) c.fail("GGUF version 1 is not supported (only versions 2 and 3 are)");
  if (version_ != 2 && version_ != 3) {
    std::string hint = (version_ & 0xFFFF) == 0 ? " (a big-endian file?)" : "";
    c.fail("unsupported GGUF version " + std::to_string(version_) + hint);
  }
  const uint64_t n_tensors = c.read<uint64_t>("tensor count");
  const uint64_t n_kv = c.read<uint64_t>("metadata count");
  // A key/value pair takes at least 8 + 1 + 4 + 1 bytes, a tensor info at least 8+1+4+8+4+8.
  if (n_kv > c.remaining() / 14) {
    c.fail("metadata count " + std::to_string(n_kv) + " cannot fit in the file");
  }
  if (n_tensors > c.remaining() / 33) {
    c.fail("tensor count " + std::to_string(n_tensors) + " cannot fit in the file");
  }

  metadata_.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = read_string(c, "metadata key");
    if (key.empty()) c.fail("metadata key " + std::to_string(i) + " is empty");
    const uint32_t raw_type = c.read<uint32_t>("type of '" + key + "'");
    if (!is_known_type(raw_type)) {
      c.fail("metadata key '" + key + "' has unknown value type " + std::to_string(raw_type));
    }
    Value v = read_value(c, static_cast<ValueType>(raw_type), key);
    if (!metadata_index_.emplace(key, metadata_.size()).second) {
      c.fail("duplicate metadata key '" + key + "'");
    }
    metadata_.emplace_back(std::move(key), std::move(v));
  }

  if (const Value* a = find("general.alignment")) {
    if (!is_integer(a->type)) c.fail("general.alignment is not an integer");
    const IntValue iv = int_value(*a);
    if (iv.negative || iv.magnitude == 0 || (iv.magnitude & (iv.magnitude - 1)) != 0 ||
        iv.magnitude > (uint64_t{1} << 30)) {
      c.fail("general.alignment " + std::string(iv.negative ? "-" : "") +
             std::to_string(iv.magnitude) + " is not a power of two up to 2^30");
    }
    alignment_ = static_cast<size_t>(iv.magnitude);
  }

  struct RawTensor {
    uint64_t offset;
    uint64_t bytes;
  };
  std::vector<RawTensor> raw;
  raw.reserve(n_tensors);
  tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorView t;
    t.name = read_string(c, "tensor name");
    const std::string what = "tensor '" + t.name + "'";
    const uint32_t n_dims = c.read<uint32_t>(what + " dimension count");
    if (n_dims > kMaxDims) {
      c.fail(what + " has " + std::to_string(n_dims) + " dimensions (at most 4 are allowed)");
    }
    uint64_t ne[kMaxDims] = {1, 1, 1, 1};
    uint64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      ne[d] = c.read<uint64_t>(what + " shape");
      if (ne[d] > kMaxI64 || formats::mul_overflows(numel, ne[d], &numel) || numel > kMaxI64) {
        c.fail(what + " has a shape whose element count overflows");
      }
    }
    const uint32_t type = c.read<uint32_t>(what + " type");
    const auto info = formats::ggml_type_info(type);
    if (!info) {
      c.fail(what + " has tensor type " + std::to_string(type) + " (" +
             std::string(formats::ggml_type_name_any(type)) +
             "), which this build does not support");
    }
    t.dtype = static_cast<kernels::DType>(type);
    if (n_dims > 0 && ne[0] % info->block_elems != 0) {
      c.fail(what + " has rows of " + std::to_string(ne[0]) + " elements, not a whole number of " +
             std::string(info->name) + " blocks (" + std::to_string(info->block_elems) + ")");
    }
    const auto bytes = formats::tensor_bytes(t.dtype, numel);
    if (!bytes) c.fail(what + " has a byte size that overflows");
    const uint64_t offset = c.read<uint64_t>(what + " offset");
    if (offset % alignment_ != 0) {
      c.fail(what + " offset " + std::to_string(offset) + " is not a multiple of the alignment " +
             std::to_string(alignment_));
    }
    for (uint32_t d = n_dims; d-- > 0;) t.shape.push_back(static_cast<int64_t>(ne[d]));
    if (!tensor_index_.emplace(t.name, tensors_.size()).second) {
      c.fail("duplicate tensor name '" + t.name + "'");
    }
    tensors_.push_back(std::move(t));
    raw.push_back({offset, *bytes});
  }

  // The data section starts at the next multiple of the alignment; a file without tensor
  // bytes may end before it.
  const size_t pad = (alignment_ - c.pos() % alignment_) % alignment_;
  data_offset_ = c.pos() + pad;
  const uint64_t data_size = data_offset_ <= c.size() ? c.size() - data_offset_ : 0;
  const auto all = file_->bytes();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    uint64_t end;
    if (formats::add_overflows(raw[i].offset, raw[i].bytes, &end) || end > data_size) {
      c.fail("tensor '" + tensors_[i].name + "' extends past the end of the file (offset " +
             std::to_string(raw[i].offset) + " + " + std::to_string(raw[i].bytes) + " > " +
             std::to_string(data_size) + " bytes of tensor data)");
    }
    tensors_[i].data = raw[i].bytes ? all.subspan(data_offset_ + raw[i].offset, raw[i].bytes)
                                    : std::span<const std::byte>{};
  }
}

const Value* Reader::find(std::string_view key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

const TensorView* Reader::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorView& Reader::tensor(std::string_view name) const {
  if (const TensorView* t = find_tensor(name)) return *t;
  throw Error(path_.string(), "tensor '" + std::string(name) + "' not found");
}

void Reader::fail_key(std::string_view key, std::string_view problem) const {
  throw Error(path_.string(), "metadata key '" + std::string(key) + "' " + std::string(problem));
}

const Value& Reader::require(std::string_view key) const {
  const Value* v = find(key);
  if (!v) fail_key(key, "not found");
  return *v;
}

std::string Reader::get_string(std::string_view key) const {
  const Value& v = require(key);
  if (v.type != ValueType::STRING) {
    fail_key(key, "is " + std::string(value_type_name(v.type)) + ", not string");
  }
  return std::get<std::string>(v.data);
}

uint64_t Reader::get_u64(std::string_view key) const {
  const Value& v = require(key);
  if (!is_integer(v.type)) {
    fail_key(key, "is " + std::string(value_type_name(v.type)) + ", not an integer");
  }
  const IntValue iv = int_value(v);
  if (iv.negative) fail_key(key, "is negative where an unsigned integer is expected");
  return iv.magnitude;
}

int64_t Reader::get_i64(std::string_view key) const {
  const Value& v = require(key);
  if (!is_integer(v.type)) {
    fail_key(key, "is " + std::string(value_type_name(v.type)) + ", not an integer");
  }
  if (const auto* s = std::get_if<int64_t>(&v.data)) return *s;
  const uint64_t u = std::get<uint64_t>(v.data);
  if (u > kMaxI64) fail_key(key, "value " + std::to_string(u) + " does not fit in i64");
  return static_cast<int64_t>(u);
}

uint32_t Reader::get_u32(std::string_view key) const {
  const uint64_t u = get_u64(key);
  if (u > std::numeric_limits<uint32_t>::max()) {
    fail_key(key, "value " + std::to_string(u) + " does not fit in u32");
  }
  return static_cast<uint32_t>(u);
}

float Reader::get_f32(std::string_view key) const {
  const Value& v = require(key);
  if (v.type != ValueType::FLOAT32 && v.type != ValueType::FLOAT64) {
    fail_key(key, "is " + std::string(value_type_name(v.type)) + ", not a float");
  }
  return static_cast<float>(std::get<double>(v.data));
}

bool Reader::get_bool(std::string_view key) const {
  const Value& v = require(key);
  if (v.type != ValueType::BOOL) {
    fail_key(key, "is " + std::string(value_type_name(v.type)) + ", not bool");
  }
  return std::get<bool>(v.data);
}

std::vector<std::string> Reader::get_string_array(std::string_view key) const {
  const Value& v = require(key);
  if (v.type != ValueType::ARRAY || v.array_type != ValueType::STRING) {
    fail_key(key, "is not an array of strings");
  }
  return std::get<std::vector<std::string>>(std::get<Value::Array>(v.data));
}

std::vector<float> Reader::get_f32_array(std::string_view key) const {
  const Value& v = require(key);
  if (v.type == ValueType::ARRAY) {
    const auto& a = std::get<Value::Array>(v.data);
    if (const auto* f = std::get_if<std::vector<float>>(&a)) return *f;
    if (const auto* d = std::get_if<std::vector<double>>(&a)) return {d->begin(), d->end()};
  }
  fail_key(key, "is not an array of floats");
}

std::vector<int32_t> Reader::get_i32_array(std::string_view key) const {
  const Value& v = require(key);
  if (v.type != ValueType::ARRAY || !is_integer(v.array_type)) {
    fail_key(key, "is not an array of integers");
  }
  std::vector<int32_t> out;
  bool fits = true;
  std::visit(
      [&](const auto& vec) {
        using T = typename std::decay_t<decltype(vec)>::value_type;
        if constexpr (std::is_integral_v<T>) {
          out.reserve(vec.size());
          for (T x : vec) {
            if (!std::in_range<int32_t>(x)) fits = false;
            out.push_back(static_cast<int32_t>(x));
          }
        }
      },
      std::get<Value::Array>(v.data));
  if (!fits) fail_key(key, "has elements that do not fit in i32");
  return out;
}

std::string Reader::get_string_or(std::string_view key, std::string fallback) const {
  return has(key) ? get_string(key) : std::move(fallback);
}
uint64_t Reader::get_u64_or(std::string_view key, uint64_t fallback) const {
  return has(key) ? get_u64(key) : fallback;
}
float Reader::get_f32_or(std::string_view key, float fallback) const {
  return has(key) ? get_f32(key) : fallback;
}
bool Reader::get_bool_or(std::string_view key, bool fallback) const {
  return has(key) ? get_bool(key) : fallback;
}

}  // namespace oxi::gguf
