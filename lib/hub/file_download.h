// Downloads one repo file into the cache safely: into "<dest>.incomplete", resuming what an
// earlier attempt left there, checked against the listed size and SHA-256, then renamed into
// place so <dest> only ever holds a complete, verified file.
#pragma once

#include <filesystem>
#include <string>

#include "lib/hub/http_client.h"
#include "lib/hub/repo_listing.h"

namespace oxi::hub {

struct FileDownloadOptions {
  bool progress = true;
  int max_attempts = 4;      // transport failures and 5xx answers are retried, resuming
  int retry_delay_ms = 250;  // grows linearly with the attempt number
};

// `context` names the file for errors, e.g. "org/name/model.safetensors". Throws oxi::Error
// on HTTP errors, exhausted retries, and size or SHA-256 mismatches (after deleting the
// partial file).
void download_verified_file(HttpClient& client, const std::string& url, const RepoFile& file,
                            const std::filesystem::path& dest, const std::string& context,
                            const FileDownloadOptions& options);

}  // namespace oxi::hub
