// A Hugging Face model directory (a snapshot of a hub repo): which of the usual config and
// tokenizer files are present, the parsed configs, and the weights — single-file or sharded
// safetensors or torch checkpoints — merged into one tensor table by name.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/formats/tensor_entry.h"

namespace oxi::hf {

struct Directory {
  std::filesystem::path dir;

  // Paths of the files that exist.
  std::optional<std::filesystem::path> config_json, generation_config_json, tokenizer_json,
      tokenizer_config_json, vocab_json, merges_txt, special_tokens_map_json, added_tokens_json,
      preprocessor_config_json;
  // Parsed JSON files; null when absent.
  nlohmann::json config, generation_config, tokenizer_config, preprocessor_config,
      special_tokens_map;

  std::string weights_format;           // "safetensors", "torch", or "" when there are no weights
  std::filesystem::path weights_index;  // the *.index.json when sharded
  std::vector<std::filesystem::path> weight_files;  // in load order
  std::vector<formats::TensorEntry> tensors;        // merged, in file order

  const formats::TensorEntry* find_tensor(std::string_view name) const;
  // Throws oxi::Error naming the directory and tensor when absent or unusable.
  TensorView tensor(std::string_view name) const;

  // The open files the tensor views point into.
  std::vector<std::shared_ptr<const void>> owners;
  std::map<std::string, size_t, std::less<>> index;
};

// Throws oxi::Error naming the directory (or the file inside it) and the problem.
Directory open_directory(const std::filesystem::path& dir);

// Loads the shards a *.index.json weight_map names (safetensors or torch) and merges them;
// fills weights_format, weights_index, weight_files, tensors, owners and index of `out`.
void load_sharded_weights(const std::filesystem::path& index_json, Directory& out);

// Parses a JSON file; throws oxi::Error naming it when unreadable or malformed.
nlohmann::json read_json_file(const std::filesystem::path& path);

// A size or count of a config file: an integer in 0 .. INT_MAX (nlohmann's get<int> would wrap
// a larger one and truncate a float). Throws oxi::Error(context, "<what> is <value>, ...").
int json_size(const nlohmann::json& value, const std::string& what, const std::string& context);

}  // namespace oxi::hf
