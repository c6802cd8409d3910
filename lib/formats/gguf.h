// GGUF (v2 and v3) model files: a memory-mapped reader and a writer.
//
// Layout (little-endian): magic "GGUF", version u32, tensor count u64, metadata count u64,
// metadata key/value pairs, tensor infos (name, n_dims u32, ne[] u64, type u32, offset u64),
// padding to `general.alignment` (default 32), then tensor data; offsets are relative to the
// start of the data section.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lib/formats/mapped_file.h"
#include "lib/formats/tensor_view.h"

namespace oxi::gguf {

enum class ValueType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};

std::string_view value_type_name(ValueType t) noexcept;

// One metadata value. Arrays hold their element type and the elements as a vector of the
// matching C++ type (strings as std::string, bools as uint8_t).
struct Value {
  using Array = std::variant<std::vector<uint8_t>, std::vector<int8_t>, std::vector<uint16_t>,
                             std::vector<int16_t>, std::vector<uint32_t>, std::vector<int32_t>,
                             std::vector<float>, std::vector<uint64_t>, std::vector<int64_t>,
                             std::vector<double>, std::vector<std::string>>;
  ValueType type = ValueType::UINT8;
  ValueType array_type = ValueType::UINT8;  // element type when type == ARRAY
  std::variant<uint64_t, int64_t, double, bool, std::string, Array> data;

  size_t array_size() const;  // 0 for non-arrays
};

class Reader {
 public:
  // Maps and validates the whole file; throws oxi::Error naming the file and the problem.
  explicit Reader(const std::filesystem::path& path);
  // Parses bytes already in memory (tests, fuzzers); errors name file->path().
  explicit Reader(std::shared_ptr<const MappedFile> file);

  const std::filesystem::path& path() const { return path_; }
  uint32_t version() const { return version_; }
  size_t alignment() const { return alignment_; }
  // File offset of the tensor data section (tensor offsets are relative to it).
  size_t data_offset() const { return data_offset_; }
  // The mapping the tensor views point into; holding it keeps them valid.
  const std::shared_ptr<const MappedFile>& file() const { return file_; }

  // Metadata in file order.
  const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }
  const Value* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed getters: throw oxi::Error (file + key) when the key is missing or has another type.
  // Integer getters accept any integer type whose value fits; get_f32 accepts float types.
  std::string get_string(std::string_view key) const;
  uint64_t get_u64(std::string_view key) const;
  int64_t get_i64(std::string_view key) const;
  uint32_t get_u32(std::string_view key) const;
  float get_f32(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  std::vector<std::string> get_string_array(std::string_view key) const;
  std::vector<float> get_f32_array(std::string_view key) const;
  std::vector<int32_t> get_i32_array(std::string_view key) const;
  // The same with a fallback when the key is absent (a present key of the wrong type throws).
  std::string get_string_or(std::string_view key, std::string fallback) const;
  uint64_t get_u64_or(std::string_view key, uint64_t fallback) const;
  float get_f32_or(std::string_view key, float fallback) const;
  bool get_bool_or(std::string_view key, bool fallback) const;

  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* find_tensor(std::string_view name) const;
  // Throws oxi::Error naming the file and tensor when absent.
  const TensorView& tensor(std::string_view name) const;

 private:
  void parse();
  const Value& require(std::string_view key) const;
  [[noreturn]] void fail_key(std::string_view key, std::string_view problem) const;

  std::filesystem::path path_;
  std::shared_ptr<const MappedFile> file_;
  uint32_t version_ = 0;
  size_t alignment_ = 32;
  size_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::map<std::string, size_t, std::less<>> metadata_index_;
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

// Builds a GGUF file in memory or on disk (v3). Tests and tools use it to write models.
class Writer {
 public:
  Writer& set(std::string key, Value value);
  Writer& set_string(std::string key, std::string v);
  Writer& set_u32(std::string key, uint32_t v);
  Writer& set_i32(std::string key, int32_t v);
  Writer& set_u64(std::string key, uint64_t v);
  Writer& set_f32(std::string key, float v);
  Writer& set_bool(std::string key, bool v);
  Writer& set_string_array(std::string key, std::vector<std::string> v);
  Writer& set_f32_array(std::string key, std::vector<float> v);
  Writer& set_i32_array(std::string key, std::vector<int32_t> v);
  // `shape` in PyTorch order; `data` must be row_bytes(dtype, numel) bytes (already encoded).
  Writer& add_tensor(std::string name, kernels::DType dtype, std::vector<int64_t> shape,
                     std::vector<std::byte> data);
  // A tensor whose bytes `produce` makes when the file is written, one tensor at a time, so
  // that a file larger than memory can be written (oxinfer quantize). produce() must return
  // row_bytes(dtype, numel) bytes; it may throw, and write() then leaves no file.
  using TensorBytes = std::function<std::vector<std::byte>()>;
  Writer& add_tensor(std::string name, kernels::DType dtype, std::vector<int64_t> shape,
                     TensorBytes produce);
  void set_alignment(size_t alignment);
  std::vector<std::byte> to_bytes() const;
  // Streams the file to PATH.part and renames it PATH when whole; throws oxi::Error on I/O
  // failure (no PATH written, PATH.part removed).
  void write(const std::filesystem::path& path) const;

 private:
  struct PendingTensor {
    std::string name;
    kernels::DType dtype;
    std::vector<int64_t> shape;
    size_t bytes = 0;
    std::vector<std::byte> data;  // or, where empty and produce is set, made when written
    TensorBytes produce;
  };
  std::vector<std::byte> header() const;
  std::vector<std::byte> tensor_bytes(const PendingTensor& t) const;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<PendingTensor> tensors_;
  size_t alignment_ = 32;
};

}  // namespace oxi::gguf
