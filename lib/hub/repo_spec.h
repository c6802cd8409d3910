// A Hugging Face model named on the command line: "org/name", "org/name:Q4_K_M",
// "org/name@v1.0", "org/name:Q4_K_M@0123abc...".
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace oxi::hub {

struct RepoSpec {
  std::string repo_id;            // "org/name"
  std::string quant;              // GGUF quant tag such as "Q4_K_M"; empty when not given
  std::string revision = "main";  // branch, tag or commit hash

  // "org/name[:QUANT][@revision]", the revision only when it is not "main".
  std::string to_string() const;
};

// Parses "org/name[:QUANT][@revision]" (the "@revision:QUANT" order is accepted too).
// Throws oxi::Error naming the spec when it is not a valid repo id.
RepoSpec parse_repo_spec(std::string_view spec);

// parse_repo_spec without the exception: nullopt when `spec` is not a repo id.
std::optional<RepoSpec> try_parse_repo_spec(std::string_view spec);

// True for a full 40-digit lowercase hex git commit hash.
bool is_commit_hash(std::string_view revision);

}  // namespace oxi::hub
