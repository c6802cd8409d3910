// The on-disk download cache (layout in lib/hub/README.md):
//   <root>/models--<org>--<name>/refs/<revision>            the commit hash the revision had
//   <root>/models--<org>--<name>/snapshots/<commit>/<file>  the files of that commit
// A file being downloaded is "<file>.incomplete" beside its final name.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/hub/repo_listing.h"

namespace oxi::hub {

inline constexpr std::string_view kIncompleteSuffix = ".incomplete";

class HubCache {
 public:
  explicit HubCache(std::filesystem::path root) : root_(std::move(root)) {}

  const std::filesystem::path& root() const { return root_; }
  // <root>/models--org--name
  std::filesystem::path repo_dir(std::string_view repo_id) const;
  std::filesystem::path snapshot_dir(std::string_view repo_id, std::string_view commit) const;

  // The commit `revision` resolved to when last online; a commit hash whose snapshot exists
  // resolves to itself. nullopt when nothing is cached for it.
  std::optional<std::string> read_ref(std::string_view repo_id, std::string_view revision) const;
  // Records revision -> commit (written atomically). Throws oxi::Error on I/O failure.
  void write_ref(std::string_view repo_id, std::string_view revision,
                 std::string_view commit) const;

  // The complete files of a cached snapshot (no *.incomplete), with their sizes, sorted.
  std::vector<RepoFile> snapshot_files(std::string_view repo_id, std::string_view commit) const;

 private:
  std::filesystem::path root_;
};

}  // namespace oxi::hub
