// hf::Directory: file discovery, config parsing and weight merging for HF model directories.
#include "lib/formats/hf_dir.h"

#include <limits>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "lib/core/error.h"
#include "lib/formats/safetensors.h"
#include "lib/formats/torch_zip.h"

namespace oxi::hf {

namespace fs = std::filesystem;

namespace {

std::optional<fs::path> existing(const fs::path& dir, const char* name) {
  std::error_code ec;
  fs::path p = dir / name;
  if (fs::is_regular_file(p, ec)) return p;
  return std::nullopt;
}

void add_tensors(Directory& out, const std::vector<formats::TensorEntry>& tensors,
                 const fs::path& from) {
  for (const formats::TensorEntry& t : tensors) {
    if (!out.index.emplace(t.name, out.tensors.size()).second) {
      throw Error(from.string(), "tensor '" + t.name + "' also appears in another weight file");
    }
    out.tensors.push_back(t);
  }
}

void load_weight_file(const fs::path& path, Directory& out) {
  if (path.extension() == ".safetensors") {
    auto f = std::make_shared<const safetensors::File>(path);
    add_tensors(out, f->tensors(), path);
    out.owners.push_back(f);
  } else {
    auto a = std::make_shared<const torch::Archive>(path);
    add_tensors(out, a->tensors(), path);
    out.owners.push_back(a);
  }
  out.weight_files.push_back(path);
}

}  // namespace

nlohmann::json read_json_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string(), "cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(path.string(), std::string("invalid JSON: ") + e.what());
  }
}

void load_sharded_weights(const fs::path& index_json, Directory& out) {
  const nlohmann::json index = read_json_file(index_json);
  const auto wm = index.find("weight_map");
  if (!index.is_object() || wm == index.end() || !wm->is_object()) {
    throw Error(index_json.string(), "no 'weight_map' object");
  }
  // Shard file names in first-mention order; they must stay inside the directory.
  std::vector<std::string> shards;
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    if (!it.value().is_string()) {
      throw Error(index_json.string(), "weight_map entry '" + it.key() + "' is not a file name");
    }
    const std::string file = it.value().get<std::string>();
    if (file.empty() || file.find('/') != std::string::npos || file == "..") {
      throw Error(index_json.string(), "weight_map names an unsafe shard path '" + file + "'");
    }
    if (std::find(shards.begin(), shards.end(), file) == shards.end()) shards.push_back(file);
  }
  std::sort(shards.begin(), shards.end());
  const fs::path dir = index_json.parent_path();
  out.weights_index = index_json;
  const bool torch_shards = index_json.filename().string().starts_with("pytorch_model");
  out.weights_format = torch_shards ? "torch" : "safetensors";
  for (const std::string& shard : shards) load_weight_file(dir / shard, out);
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    if (!out.find_tensor(it.key())) {
      throw Error(index_json.string(), "weight_map lists tensor '" + it.key() + "' in " +
                                           it.value().get<std::string>() + ", which lacks it");
    }
  }
}

Directory open_directory(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(dir.string(), "not a directory");
  Directory d;
  d.dir = dir;
  d.config_json = existing(dir, "config.json");
  d.generation_config_json = existing(dir, "generation_config.json");
  d.tokenizer_json = existing(dir, "tokenizer.json");
  d.tokenizer_config_json = existing(dir, "tokenizer_config.json");
  d.vocab_json = existing(dir, "vocab.json");
  d.merges_txt = existing(dir, "merges.txt");
  d.special_tokens_map_json = existing(dir, "special_tokens_map.json");
  d.added_tokens_json = existing(dir, "added_tokens.json");
  d.preprocessor_config_json = existing(dir, "preprocessor_config.json");
  if (d.config_json) d.config = read_json_file(*d.config_json);
  if (d.generation_config_json) d.generation_config = read_json_file(*d.generation_config_json);
  if (d.tokenizer_config_json) d.tokenizer_config = read_json_file(*d.tokenizer_config_json);
  if (d.preprocessor_config_json) {
    d.preprocessor_config = read_json_file(*d.preprocessor_config_json);
  }
  if (d.special_tokens_map_json) d.special_tokens_map = read_json_file(*d.special_tokens_map_json);

  if (auto idx = existing(dir, "model.safetensors.index.json")) {
    load_sharded_weights(*idx, d);
  } else if (auto st = existing(dir, "model.safetensors")) {
    d.weights_format = "safetensors";
    load_weight_file(*st, d);
  } else if (auto pidx = existing(dir, "pytorch_model.bin.index.json")) {
    load_sharded_weights(*pidx, d);
  } else if (auto pt = existing(dir, "pytorch_model.bin")) {
    d.weights_format = "torch";
    load_weight_file(*pt, d);
  } else {
    // Other names (e.g. "consolidated.safetensors"): every *.safetensors file, sorted.
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.is_regular_file() && entry.path().extension() == ".safetensors") {
        files.push_back(entry.path());
      }
    }
    std::sort(files.begin(), files.end());
    if (!files.empty()) d.weights_format = "safetensors";
    for (const fs::path& f : files) load_weight_file(f, d);
  }
  return d;
}

const formats::TensorEntry* Directory::find_tensor(std::string_view name) const {
  auto it = index.find(name);
  return it == index.end() ? nullptr : &tensors[it->second];
}

TensorView Directory::tensor(std::string_view name) const {
  const formats::TensorEntry* e = find_tensor(name);
  if (!e) throw Error(dir.string(), "tensor '" + std::string(name) + "' not found");
  return e->view(dir.string());
}

int json_size(const nlohmann::json& value, const std::string& what, const std::string& context) {
  const bool fits = value.is_number_integer() &&
                    (value.is_number_unsigned() || value.get<int64_t>() >= 0) &&
                    value.get<uint64_t>() <= uint64_t{std::numeric_limits<int>::max()};
  if (!fits) throw Error(context, what + " is " + value.dump() + ", not a size or count");
  return static_cast<int>(value.get<int64_t>());
}

}  // namespace oxi::hf
