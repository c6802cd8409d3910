// Which files of a repo to download: glob patterns, a GGUF quant tag, or "what a model needs".
// Pure functions over a file list, so the same rules apply to the Hub listing online and to
// the cached snapshot offline.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lib/hub/repo_listing.h"

namespace oxi::hub {

// Paths matching a glob (fnmatch rules; '*' also matches '/'), in listing order.
std::vector<std::string> files_matching(const std::vector<RepoFile>& files,
                                        std::string_view pattern);

// One GGUF model, possibly split into "-00001-of-00003.gguf" parts.
struct GgufChoice {
  std::vector<std::string> files;  // every part, in order
  std::string primary;             // the file to open: the only one or part 1
};

// The GGUF file whose name contains `quant` (case-insensitive; a match bounded by
// non-alphanumerics wins over a bare substring, so "Q4_0" does not pick "IQ4_0"). Throws
// oxi::Error naming `context` and listing the GGUF files when none or several match.
GgufChoice select_quant_gguf(const std::vector<RepoFile>& files, std::string_view quant,
                             std::string_view context);

// What running a model from a repo needs.
struct ModelFiles {
  // Small top-level files: config, generation, preprocessor and tokenizer JSON / text,
  // *.tiktoken, chat templates, tokenizer.model.
  std::vector<std::string> support;
  // Weights: "model.safetensors", or an index ("model.safetensors.index.json") whose shards
  // shards_from_index() names, or pytorch_model.bin the same way, or a lone GGUF model.
  std::vector<std::string> weights;
  std::string weights_index;  // set when the shards come from this index file
  std::string gguf_primary;   // set when the weights are a GGUF model
};

// Throws oxi::Error naming `context` when the repo has no weights oxinfer can load, or only
// several GGUF models (asking for a :QUANT tag and listing them).
ModelFiles select_model_files(const std::vector<RepoFile>& files, std::string_view context);

// The shard files an index ("weight_map": {"tensor": "file", ...}) refers to, sorted and
// unique; throws oxi::Error naming `context` on malformed JSON or unsafe names.
std::vector<std::string> shards_from_index(std::string_view index_json, std::string_view context);

}  // namespace oxi::hub
