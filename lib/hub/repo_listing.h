// The file list of one repo revision, as the Hub API reports it:
// GET {endpoint}/api/models/{repo}/revision/{rev}?blobs=true
//   {"sha": "<commit>", "siblings": [{"rfilename": "config.json", "size": 1234,
//     "lfs": {"sha256": "...", "size": 1234}}, ...]}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oxi::hub {

struct RepoFile {
  std::string path;              // relative to the repo root, '/'-separated
  std::optional<uint64_t> size;  // bytes; unknown for listings built from the cache
  std::string sha256;            // lowercase hex for LFS files, empty otherwise
};

struct RepoListing {
  std::string commit;  // the 40-hex commit the revision resolved to
  std::vector<RepoFile> files;

  const RepoFile* find(std::string_view path) const;
};

// Parses the API answer; throws oxi::Error naming `context` (the repo) when it is not the
// expected JSON or names a file path that could escape the snapshot directory.
RepoListing parse_repo_listing(std::string_view json_text, std::string_view context);

// True for a relative '/'-separated path without empty, "." or ".." components: safe to join
// below a snapshot directory.
bool is_safe_repo_path(std::string_view path);

}  // namespace oxi::hub
