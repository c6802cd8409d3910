// One entry point for every model file format: open_model_file() detects GGUF, safetensors,
// torch zip checkpoints, shard indexes and HF directories, and returns their metadata (as
// JSON values) and tensor table in one shape — what `oxinfer inspect` prints.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/formats/tensor_entry.h"

namespace oxi::formats {

struct MetadataEntry {
  std::string key;
  std::string type;  // "u32", "string", "f32", "array[string]", "json", ...
  nlohmann::ordered_json value;
};

struct ModelFile {
  std::filesystem::path path;
  std::string format;   // "gguf", "safetensors", "torch", "hf-directory"
  std::string version;  // "3" for GGUF v3; empty when the format has no version
  std::vector<MetadataEntry> metadata;
  std::vector<TensorEntry> tensors;
  std::vector<std::shared_ptr<const void>> owners;  // keeps the mappings behind views alive

  const TensorEntry* find_tensor(std::string_view name) const;
  uint64_t total_bytes() const;
};

// Throws oxi::Error naming the path and the problem.
ModelFile open_model_file(const std::filesystem::path& path);

// The format open_model_file() would use for `path` ("gguf", ... or "" when unknown).
std::string detect_format(const std::filesystem::path& path);

}  // namespace oxi::formats
