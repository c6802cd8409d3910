#include "lib/hub/hub_cache.h"

#include <algorithm>
#include <cctype>
#include <fstream>

#include "lib/core/error.h"
#include "lib/hub/repo_spec.h"

namespace oxi::hub {

namespace fs = std::filesystem;

fs::path HubCache::repo_dir(std::string_view repo_id) const {
  std::string name = "models--";
  for (char c : repo_id) {
    if (c == '/')
      name += "--";
    else
      name.push_back(c);
  }
  return root_ / name;
}

fs::path HubCache::snapshot_dir(std::string_view repo_id, std::string_view commit) const {
  return repo_dir(repo_id) / "snapshots" / std::string(commit);
}

std::optional<std::string> HubCache::read_ref(std::string_view repo_id,
                                              std::string_view revision) const {
  std::ifstream in(repo_dir(repo_id) / "refs" / std::string(revision));
  std::string commit;
  if (in && std::getline(in, commit)) {
    while (!commit.empty() && std::isspace(static_cast<unsigned char>(commit.back()))) {
      commit.pop_back();
    }
    if (is_commit_hash(commit)) return commit;
  }
  std::error_code ec;
  if (is_commit_hash(revision) && fs::is_directory(snapshot_dir(repo_id, revision), ec)) {
    return std::string(revision);
  }
  return std::nullopt;
}

void HubCache::write_ref(std::string_view repo_id, std::string_view revision,
                         std::string_view commit) const {
  const fs::path ref = repo_dir(repo_id) / "refs" / std::string(revision);
  std::error_code ec;
  fs::create_directories(ref.parent_path(), ec);
  // Write beside and rename, so a reader never sees a half-written ref.
  const fs::path temp = ref.string() + ".tmp";
  {
    std::ofstream out(temp, std::ios::trunc);
    out << commit << '\n';
    if (!out) throw Error(temp.string(), "cannot write the cached revision");
  }
  fs::rename(temp, ref, ec);
  if (ec) throw Error(ref.string(), "cannot record the cached revision: " + ec.message());
}

std::vector<RepoFile> HubCache::snapshot_files(std::string_view repo_id,
                                               std::string_view commit) const {
  std::vector<RepoFile> files;
  const fs::path dir = snapshot_dir(repo_id, commit);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string relative = it->path().lexically_relative(dir).generic_string();
    if (relative.ends_with(kIncompleteSuffix)) continue;
    files.push_back({relative, static_cast<uint64_t>(it->file_size(ec)), ""});
  }
  std::sort(files.begin(), files.end(),
            [](const RepoFile& a, const RepoFile& b) { return a.path < b.path; });
  return files;
}

}  // namespace oxi::hub
