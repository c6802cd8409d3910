#include "lib/hub/file_selection.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>

#include <fnmatch.h>

#include <nlohmann/json.hpp>

#include "lib/core/ascii.h"
#include "lib/core/error.h"

namespace oxi::hub {

namespace {

std::string_view base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool is_gguf(std::string_view path) {
  return ascii_lower(path).ends_with(".gguf");
}

// Multimodal projector files sit beside the model GGUFs but are not models themselves.
bool is_projector(std::string_view path) {
  return ascii_lower(base_name(path)).starts_with("mmproj");
}

bool is_alnum(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

// `tag` occurs in `name` (both lowercase) with no letter or digit right before or after it.
bool contains_bounded(std::string_view name, std::string_view tag) {
  for (size_t at = name.find(tag); at != std::string_view::npos; at = name.find(tag, at + 1)) {
    const bool left = at == 0 || !is_alnum(name[at - 1]);
    const size_t end = at + tag.size();
    const bool right = end == name.size() || !is_alnum(name[end]);
    if (left && right) return true;
  }
  return false;
}

std::string join_list(const std::vector<std::string>& names) {
  if (names.empty()) return "(none)";
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

std::vector<std::string> gguf_paths(const std::vector<RepoFile>& files) {
  std::vector<std::string> paths;
  for (const RepoFile& file : files) {
    if (is_gguf(file.path)) paths.push_back(file.path);
  }
  return paths;
}

// Groups GGUF paths into models: split parts "<stem>-00001-of-00003.gguf" form one model.
std::vector<GgufChoice> group_gguf_models(const std::vector<std::string>& paths) {
  static const std::regex kSplitPart(R"((.*)-(\d{5})-of-(\d{5})\.gguf)", std::regex::icase);
  std::map<std::string, GgufChoice> split_models;
  std::vector<GgufChoice> models;
  for (const std::string& path : paths) {
    std::smatch match;
    if (std::regex_match(path, match, kSplitPart)) {
      GgufChoice& model = split_models[match[1].str() + "/" + match[3].str()];
      model.files.push_back(path);
      if (std::stoi(match[2].str()) == 1) model.primary = path;
    } else {
      models.push_back({{path}, path});
    }
  }
  for (auto& [key, model] : split_models) {
    std::sort(model.files.begin(), model.files.end());
    if (model.primary.empty()) model.primary = model.files.front();
    models.push_back(std::move(model));
  }
  return models;
}

}  // namespace

std::vector<std::string> files_matching(const std::vector<RepoFile>& files,
                                        std::string_view pattern) {
  const std::string glob(pattern);
  std::vector<std::string> matches;
  for (const RepoFile& file : files) {
    if (::fnmatch(glob.c_str(), file.path.c_str(), 0) == 0) matches.push_back(file.path);
  }
  return matches;
}

GgufChoice select_quant_gguf(const std::vector<RepoFile>& files, std::string_view quant,
                             std::string_view context) {
  const std::vector<std::string> ggufs = gguf_paths(files);
  const std::string tag = ascii_lower(quant);
  std::vector<std::string> bounded, loose;
  for (const std::string& path : ggufs) {
    const std::string name = ascii_lower(path);
    if (name.find(tag) == std::string::npos) continue;
    (contains_bounded(name, tag) ? bounded : loose).push_back(path);
  }
  std::vector<std::string> matches = bounded.empty() ? loose : bounded;
  // A projector only counts when it is all that matches.
  if (std::any_of(matches.begin(), matches.end(), [](const auto& p) { return !is_projector(p); })) {
    std::erase_if(matches, [](const std::string& path) { return is_projector(path); });
  }
  const std::vector<GgufChoice> models = group_gguf_models(matches);
  if (models.size() == 1) return models.front();
  if (models.empty()) {
    throw Error(context, "no GGUF file matches the quant tag '" + std::string(quant) +
                             "'; GGUF files: " + join_list(ggufs));
  }
  throw Error(context, "the quant tag '" + std::string(quant) + "' matches several GGUF files (" +
                           join_list(matches) + "); use a more specific tag");
}

ModelFiles select_model_files(const std::vector<RepoFile>& files, std::string_view context) {
  ModelFiles chosen;
  const auto has = [&](std::string_view path) {
    return std::any_of(files.begin(), files.end(),
                       [&](const RepoFile& f) { return f.path == path; });
  };
  for (const RepoFile& file : files) {
    if (file.path.find('/') != std::string::npos) continue;  // top level only
    const std::string name = ascii_lower(file.path);
    if (name.ends_with(".index.json")) continue;  // weight indexes come with their weights
    if (name.ends_with(".json") || name.ends_with(".txt") || name.ends_with(".tiktoken") ||
        name.ends_with(".jinja") || name == "tokenizer.model") {
      chosen.support.push_back(file.path);
    }
  }
  // Safetensors before pickled PyTorch files: safer to load and memory-mappable.
  for (const std::string stem : {"model.safetensors", "pytorch_model.bin"}) {
    if (has(stem)) {
      chosen.weights = {stem};
      return chosen;
    }
    if (has(stem + ".index.json")) {
      chosen.weights_index = stem + ".index.json";
      return chosen;
    }
  }
  std::vector<std::string> model_ggufs = gguf_paths(files);
  std::erase_if(model_ggufs, [](const std::string& path) { return is_projector(path); });
  const std::vector<GgufChoice> models = group_gguf_models(model_ggufs);
  if (models.size() == 1) {
    chosen.weights = models.front().files;
    chosen.gguf_primary = models.front().primary;
    return chosen;
  }
  if (models.size() > 1) {
    throw Error(context, "the repo holds several GGUF models; pick one with :QUANT (e.g. " +
                             std::string(context) +
                             ":Q4_K_M); GGUF files: " + join_list(model_ggufs));
  }
  std::vector<std::string> names;
  for (const RepoFile& file : files) names.push_back(file.path);
  throw Error(context,
              "no model weights found (model.safetensors, pytorch_model.bin, their "
              "*.index.json shards, or a GGUF file); files: " +
                  join_list(names));
}

std::vector<std::string> shards_from_index(std::string_view index_json, std::string_view context) {
  const nlohmann::json doc = nlohmann::json::parse(index_json, nullptr, false);
  const auto map = doc.is_object() ? doc.find("weight_map") : doc.end();
  if (doc.is_discarded() || !doc.is_object() || map == doc.end() || !map->is_object()) {
    throw Error(context, "weight index is not JSON with a 'weight_map' object");
  }
  std::set<std::string> shards;
  for (const auto& [tensor, file] : map->items()) {
    if (!file.is_string() || !is_safe_repo_path(file.get<std::string>())) {
      throw Error(context, "weight index maps '" + tensor + "' to an invalid file name");
    }
    shards.insert(file.get<std::string>());
  }
  if (shards.empty()) throw Error(context, "weight index lists no shard files");
  return {shards.begin(), shards.end()};
}

}  // namespace oxi::hub
