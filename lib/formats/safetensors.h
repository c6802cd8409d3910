// safetensors files: an 8-byte little-endian header size, a JSON header mapping tensor names
// to {dtype, shape, data_offsets} (plus an optional "__metadata__" of strings), then the raw
// tensor bytes. Sharded checkpoints (model.safetensors.index.json) are merged by hf_dir.h.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/formats/mapped_file.h"
#include "lib/formats/tensor_entry.h"

namespace oxi::safetensors {

class File {
 public:
  // Maps and validates the file; throws oxi::Error naming the file and the problem. Tensors
  // of dtypes oxinfer lacks (BOOL, U8, F8_*) are listed and fail only when used.
  explicit File(const std::filesystem::path& path);
  explicit File(std::shared_ptr<const MappedFile> file);

  const std::filesystem::path& path() const { return file_->path(); }
  const std::shared_ptr<const MappedFile>& file() const { return file_; }

  const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }
  // In header order.
  const std::vector<formats::TensorEntry>& tensors() const { return tensors_; }
  const formats::TensorEntry* find_tensor(std::string_view name) const;
  // Throws oxi::Error naming the file and tensor when absent or of an unsupported dtype.
  TensorView tensor(std::string_view name) const;

 private:
  void parse();

  std::shared_ptr<const MappedFile> file_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  std::vector<formats::TensorEntry> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
};

// The safetensors dtype spelling ("F16", "BF16") of a DType; throws for block-quantized types.
std::string_view dtype_name(kernels::DType dtype);

class Writer {
 public:
  Writer& add_tensor(std::string name, kernels::DType dtype, std::vector<int64_t> shape,
                     std::vector<std::byte> data);
  // Any dtype spelling ("BOOL", "U8"), for tests of types oxinfer does not compute with.
  Writer& add_raw_tensor(std::string name, std::string dtype, std::vector<int64_t> shape,
                         std::vector<std::byte> data);
  Writer& set_metadata(std::string key, std::string value);
  std::vector<std::byte> to_bytes() const;
  void write(const std::filesystem::path& path) const;

 private:
  struct PendingTensor {
    std::string name;
    std::string dtype;
    std::vector<int64_t> shape;
    std::vector<std::byte> data;
  };
  std::vector<PendingTensor> tensors_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

}  // namespace oxi::safetensors
