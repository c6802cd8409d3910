#include "lib/hub/file_download.h"

#include <chrono>
#include <thread>

#include <spdlog/spdlog.h>

#include "lib/core/error.h"
#include "lib/hub/hub_cache.h"
#include "lib/hub/progress_bar.h"
#include "lib/hub/sha256.h"

namespace oxi::hub {

namespace fs = std::filesystem;

namespace {

uint64_t size_or_zero(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0 : static_cast<uint64_t>(size);
}

void remove_quietly(const fs::path& path) {
  std::error_code ec;
  fs::remove(path, ec);
}

bool is_retryable_status(long status) {
  return status == 429 || status >= 500;
}

std::string http_problem(long status, const std::string& url) {
  std::string text = "HTTP " + std::to_string(status) + " from " + url;
  if (status == 401 || status == 403) text += " (private or gated file: set HF_TOKEN)";
  return text;
}

// Transfers into `partial` until the server has sent the whole file, resuming after drops.
void transfer_with_retries(HttpClient& client, const std::string& url, const RepoFile& file,
                           const fs::path& partial, const std::string& context,
                           const FileDownloadOptions& options) {
  const int attempts = std::max(1, options.max_attempts);
  std::string last_problem;
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    if (attempt > 1) {
      spdlog::warn("{}: {}; retrying ({}/{})", context, last_problem, attempt, attempts);
      std::this_thread::sleep_for(
          std::chrono::milliseconds(options.retry_delay_ms * (attempt - 1)));
    }
    uint64_t offset = size_or_zero(partial);
    if (file.size && offset > *file.size) {
      remove_quietly(partial);  // longer than the file can be: start over
      offset = 0;
    }
    // A partial file that already has every byte only needs checking.
    if (file.size && offset == *file.size && offset > 0) return;
    if (offset > 0) spdlog::info("{}: resuming at byte {}", context, offset);

    ProgressBar bar(file.path, file.size.value_or(0), offset, options.progress);
    HttpResponse response;
    try {
      response =
          client.get_to_file(url, partial, offset, [&bar](uint64_t bytes) { bar.update(bytes); });
    } catch (const TransportError& e) {
      last_problem = e.what();
      continue;
    }
    if (response.status == 200 || response.status == 206) {
      bar.finish();
      return;
    }
    if (response.status == 416) {  // our offset is past the server's file: start over
      remove_quietly(partial);
      last_problem = "server rejected the resume offset (HTTP 416)";
      continue;
    }
    if (is_retryable_status(response.status)) {
      last_problem = http_problem(response.status, response.final_url);
      continue;
    }
    throw Error(context, http_problem(response.status, response.final_url));
  }
  throw Error(context,
              "download failed after " + std::to_string(attempts) + " attempts: " + last_problem);
}

}  // namespace

void download_verified_file(HttpClient& client, const std::string& url, const RepoFile& file,
                            const fs::path& dest, const std::string& context,
                            const FileDownloadOptions& options) {
  std::error_code ec;
  fs::create_directories(dest.parent_path(), ec);
  if (ec) throw Error(dest.parent_path().string(), "cannot create directory: " + ec.message());
  const fs::path partial = dest.string() + std::string(kIncompleteSuffix);

  transfer_with_retries(client, url, file, partial, context, options);

  const uint64_t got = size_or_zero(partial);
  if (file.size && got != *file.size) {
    remove_quietly(partial);
    throw Error(context, "size mismatch: downloaded " + std::to_string(got) +
                             " bytes, the Hub lists " + std::to_string(*file.size) +
                             "; the partial file was deleted, run again to retry");
  }
  if (!file.sha256.empty()) {
    const std::string actual = sha256_file_hex(partial);
    if (actual != file.sha256) {
      remove_quietly(partial);
      throw Error(context, "SHA-256 mismatch: expected " + file.sha256 + ", got " + actual +
                               "; the corrupt download was deleted, run again to retry");
    }
  }
  fs::rename(partial, dest, ec);
  if (ec)
    throw Error(dest.string(), "cannot move the finished download into place: " + ec.message());
}

}  // namespace oxi::hub
