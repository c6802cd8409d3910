#include "lib/hub/repo_listing.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "lib/core/ascii.h"
#include "lib/core/error.h"
#include "lib/hub/repo_spec.h"

namespace oxi::hub {

const RepoFile* RepoListing::find(std::string_view path) const {
  const auto it = std::find_if(files.begin(), files.end(),
                               [&](const RepoFile& file) { return file.path == path; });
  return it == files.end() ? nullptr : &*it;
}

bool is_safe_repo_path(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.find('\\') != std::string_view::npos ||
      path.find('\0') != std::string_view::npos) {
    return false;
  }
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

RepoListing parse_repo_listing(std::string_view json_text, std::string_view context) {
  const nlohmann::json doc = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    throw Error(context, "the Hub API answered with something that is not a JSON object");
  }
  RepoListing listing;
  const auto sha = doc.find("sha");
  if (sha == doc.end() || !sha->is_string()) {
    throw Error(context, "the Hub API answer has no commit hash ('sha')");
  }
  listing.commit = ascii_lower(sha->get<std::string>());
  if (!is_commit_hash(listing.commit)) {
    throw Error(context,
                "the Hub API answered with an invalid commit hash '" + listing.commit + "'");
  }
  const auto siblings = doc.find("siblings");
  if (siblings == doc.end() || !siblings->is_array()) {
    throw Error(context, "the Hub API answer has no file list ('siblings')");
  }
  for (const nlohmann::json& sibling : *siblings) {
    const auto name = sibling.find("rfilename");
    if (!sibling.is_object() || name == sibling.end() || !name->is_string()) {
      throw Error(context, "the Hub API file list has an entry without 'rfilename'");
    }
    RepoFile file;
    file.path = name->get<std::string>();
    if (!is_safe_repo_path(file.path)) {
      throw Error(context, "the Hub API lists an unsafe file path '" + file.path + "'");
    }
    if (const auto size = sibling.find("size");
        size != sibling.end() && size->is_number_unsigned()) {
      file.size = size->get<uint64_t>();
    }
    if (const auto lfs = sibling.find("lfs"); lfs != sibling.end() && lfs->is_object()) {
      if (const auto hash = lfs->find("sha256"); hash != lfs->end() && hash->is_string()) {
        file.sha256 = ascii_lower(hash->get<std::string>());
      }
      // The LFS size is the real file size; "size" may be the pointer's on old API versions.
      if (const auto size = lfs->find("size"); size != lfs->end() && size->is_number_unsigned()) {
        file.size = size->get<uint64_t>();
      }
    }
    listing.files.push_back(std::move(file));
  }
  return listing;
}

}  // namespace oxi::hub
