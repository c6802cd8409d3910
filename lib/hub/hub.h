// Hugging Face Hub downloads into a local cache, and turning a "-m MODEL" argument into a
// local path.
//
//   HubOptions options = HubOptions::from_environment();
//   fs::path gguf = resolve_model("org/name-GGUF:Q4_K_M", options);   // the .gguf file
//   fs::path dir = resolve_model("org/name", options);                // the snapshot directory
//   fs::path same = resolve_model("/models/local.gguf", options);     // local paths win
//
// Online, each call asks the Hub API which commit the revision points at (one small request)
// and downloads only files the cache lacks; when the API cannot be reached, a cached revision
// is used with a warning. Offline, only the cache is read.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "lib/hub/hub_options.h"
#include "lib/hub/repo_spec.h"

namespace oxi::hub {

// Downloads files of `spec` into the cache and returns the snapshot directory. `patterns` are
// file names or globs ("*.json", "tokenizer.*"); spec.quant adds the GGUF file of that quant.
// With neither, downloads what a model needs (see resolve_model). Throws oxi::Error.
std::filesystem::path download(const RepoSpec& spec, const std::vector<std::string>& patterns,
                               const HubOptions& options);

// The local path of a model argument:
//  - an existing file or directory: itself;
//  - "org/name:QUANT[@rev]": the GGUF file of that quant (downloaded if needed);
//  - "org/name[@rev]": the snapshot directory holding config/tokenizer files and weights
//    (model.safetensors or its shards, else pytorch_model.bin or its shards); a repo with a
//    single GGUF model gives that file, one with several needs :QUANT.
// Throws oxi::Error when the spec is neither a path nor a repo id, or the download fails.
std::filesystem::path resolve_model(std::string_view spec, const HubOptions& options);

// resolve_model for a parsed repo spec: always the Hub (or its cache), never a local path.
std::filesystem::path resolve_model(const RepoSpec& spec, const HubOptions& options);

}  // namespace oxi::hub
