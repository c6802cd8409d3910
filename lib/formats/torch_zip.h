// PyTorch zip checkpoints (torch.save since 1.6: pytorch_model.bin, .pt, .pth): a stored zip
// holding <archive>/data.pkl (the pickled object tree) and one <archive>/data/<key> entry per
// storage. Tensors are views into the mapping; nothing in the pickle is executed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/formats/pickle.h"
#include "lib/formats/tensor_entry.h"
#include "lib/formats/zip.h"

namespace oxi::torch {

class Archive {
 public:
  // Throws oxi::Error naming the file and the problem.
  explicit Archive(const std::filesystem::path& path);
  explicit Archive(std::shared_ptr<const MappedFile> file);

  const std::filesystem::path& path() const { return zip_.path(); }
  const std::string& archive_name() const { return prefix_; }  // "archive", "model", ...

  // The unpickled object: a state dict, or e.g. {'dims': {...}, 'model_state_dict': {...}}.
  const pickle::Object& root() const { return doc_.root(); }

  // Every tensor reachable through string-keyed dicts from the root, named by its key path
  // joined with '.' ("model_state_dict.encoder.conv1.weight"; a plain state dict gives the
  // bare keys), in pickle order.
  const std::vector<formats::TensorEntry>& tensors() const { return tensors_; }
  const formats::TensorEntry* find_tensor(std::string_view name) const;
  // Throws oxi::Error naming the file and the tensor when absent or unusable
  // (non-contiguous, unsupported dtype).
  TensorView tensor(std::string_view name) const;
  // The entry of a Tensor object of the tree (e.g. root().get("model_state_dict")->get(k)).
  formats::TensorEntry entry_of(const pickle::Object& tensor, std::string name) const;

 private:
  void load();
  void collect(const pickle::Object& o, const std::string& prefix, int depth);

  zip::Archive zip_;
  std::string prefix_;
  pickle::Document doc_;
  std::vector<formats::TensorEntry> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
};

// torch storage type name ("HalfStorage") for a dtype; throws for dtypes torch lacks.
std::string_view storage_type_name(kernels::DType dtype);

// Writes checkpoints in torch.save's layout: a protocol-2 pickle of an OrderedDict of tensors,
// optionally nested in a plain dict next to dicts of ints (OpenAI Whisper's
// {'dims': {...}, 'model_state_dict': {...}}).
class Writer {
 public:
  // `shape` outermost first; `data` holds the contiguous little-endian elements.
  Writer& add_tensor(std::string name, kernels::DType dtype, std::vector<int64_t> shape,
                     std::vector<std::byte> data);
  // Puts the state dict under `key` of a top-level dict instead of at the root.
  Writer& nest_under(std::string key);
  // A top-level dict of ints beside the nested state dict (needs nest_under).
  Writer& add_int_dict(std::string key, std::vector<std::pair<std::string, int64_t>> values);
  Writer& set_archive_name(std::string name);

  std::vector<std::byte> to_bytes() const;
  void write(const std::filesystem::path& path) const;

 private:
  struct PendingTensor {
    std::string name;
    kernels::DType dtype;
    std::vector<int64_t> shape;
    std::vector<std::byte> data;
  };
  std::vector<PendingTensor> tensors_;
  std::string nest_key_;
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, int64_t>>>> int_dicts_;
  std::string archive_name_ = "archive";
};

}  // namespace oxi::torch
