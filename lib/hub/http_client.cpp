#include "lib/hub/http_client.h"

#include <cctype>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>

#include <curl/curl.h>

#include "lib/core/version.h"
#include "lib/hub/url.h"

namespace oxi::hub {

namespace {

struct CurlEasyDeleter {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
struct CurlSlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
using CurlEasy = std::unique_ptr<CURL, CurlEasyDeleter>;
using CurlSlist = std::unique_ptr<curl_slist, CurlSlistDeleter>;
using FileHandle = std::unique_ptr<std::FILE, FileCloser>;

constexpr size_t kMaxErrorBody = 4096;

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool is_redirect(long status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

void append_header(CurlSlist& list, const std::string& header) {
  curl_slist* extended = curl_slist_append(list.get(), header.c_str());
  if (extended == nullptr) throw Error("http", "out of memory building request headers");
  list.release();
  list.reset(extended);
}

// "Content-Range: bytes 100-199/200" -> 100.
std::optional<uint64_t> content_range_start(std::string_view header) {
  const size_t bytes = header.find("bytes ");
  if (bytes == std::string_view::npos) return std::nullopt;
  uint64_t start = 0;
  size_t i = bytes + 6;
  if (i >= header.size() || header[i] < '0' || header[i] > '9') return std::nullopt;
  for (; i < header.size() && header[i] >= '0' && header[i] <= '9'; ++i) {
    start = start * 10 + static_cast<uint64_t>(header[i] - '0');
  }
  return start;
}

}  // namespace

// State of one request, shared with the libcurl callbacks.
struct HttpClient::Transfer {
  CURL* curl = nullptr;
  long status = 0;
  std::string redirect_url;
  std::optional<uint64_t> range_start;  // from Content-Range
  // Memory mode: the body; file mode: the body of a non-2xx answer.
  std::string body;
  size_t max_body = kMaxErrorBody;
  bool body_too_large = false;
  // File mode (path set): opened at the first body byte, once the status is known.
  const std::filesystem::path* path = nullptr;
  uint64_t offset = 0;
  FileHandle file;
  uint64_t bytes_in_file = 0;
  const ProgressFn* progress = nullptr;
  std::string write_problem;

  long current_status() const {
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    return code;
  }

  // Returns false to abort the transfer.
  bool write(const char* data, size_t size) {
    const long code = current_status();
    const bool file_body = path != nullptr && (code == 200 || code == 206);
    if (!file_body) {
      if (is_redirect(code)) return true;  // redirect bodies are noise
      if (body.size() + size > max_body) {
        body_too_large = true;
        return path != nullptr;  // error bodies are truncated, memory bodies abort
      }
      body.append(data, size);
      return true;
    }
    if (!file) {
      if (code == 206 && range_start != offset) {
        write_problem = "server resumed at byte " +
                        (range_start ? std::to_string(*range_start) : std::string("?")) +
                        " instead of " + std::to_string(offset);
        return false;
      }
      // 206 continues the partial file; 200 means the server sent everything again.
      const bool append = code == 206;
      file.reset(std::fopen(path->c_str(), append ? "ab" : "wb"));
      if (!file) {
        write_problem = "cannot open " + path->string() + " for writing";
        return false;
      }
      bytes_in_file = append ? offset : 0;
    }
    if (std::fwrite(data, 1, size, file.get()) != size) {
      write_problem = "write error on " + path->string() + " (disk full?)";
      return false;
    }
    bytes_in_file += size;
    if (progress != nullptr && *progress) (*progress)(bytes_in_file);
    return true;
  }

  static size_t on_body(char* data, size_t size, size_t count, void* self) {
    return static_cast<Transfer*>(self)->write(data, size * count) ? size * count : 0;
  }

  static size_t on_header(char* data, size_t size, size_t count, void* self) {
    auto* transfer = static_cast<Transfer*>(self);
    const std::string_view line(data, size * count);
    constexpr std::string_view kContentRange = "content-range:";
    if (line.size() > kContentRange.size()) {
      bool matches = true;
      for (size_t i = 0; i < kContentRange.size() && matches; ++i) {
        matches = std::tolower(static_cast<unsigned char>(line[i])) == kContentRange[i];
      }
      if (matches) transfer->range_start = content_range_start(line.substr(kContentRange.size()));
    }
    return size * count;
  }
};

HttpClient::HttpClient(const std::string& auth_url, std::string token)
    : auth_origin_(url_origin(auth_url).value_or("")), token_(std::move(token)) {
  init_curl_once();
}

void HttpClient::perform(const std::string& url, uint64_t range_start, Transfer& transfer) {
  const CurlEasy curl(curl_easy_init());
  if (!curl) throw TransportError(url, "cannot create a libcurl handle");
  transfer.curl = curl.get();

  CurlSlist headers;
  // The token only travels to the endpoint's origin, never to a host a redirect names.
  if (!token_.empty() && !auth_origin_.empty() && url_origin(url) == auth_origin_) {
    append_header(headers, "Authorization: Bearer " + token_);
  }
  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_USERAGENT, (std::string("oxinfer/") + version()).c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
  // A stalled transfer (under 1 byte/s for 60 s) fails instead of hanging forever.
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &Transfer::on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &Transfer::on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &transfer);
  const std::string range = std::to_string(range_start) + "-";
  if (range_start > 0) curl_easy_setopt(h, CURLOPT_RANGE, range.c_str());

  char error_text[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_text);
  const CURLcode code = curl_easy_perform(h);
  transfer.status = transfer.current_status();
  transfer.file.reset();  // flush what arrived, even on failure: the next try resumes from it
  transfer.curl = nullptr;
  if (!transfer.write_problem.empty()) throw Error(url, transfer.write_problem);
  if (code != CURLE_OK) {
    throw TransportError(url, *error_text != '\0' ? error_text : curl_easy_strerror(code));
  }
  if (is_redirect(transfer.status)) {
    char* location = nullptr;
    curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &location);
    transfer.redirect_url = location != nullptr ? location : "";
  }
}

HttpResponse HttpClient::get(const std::string& url, size_t max_body) {
  std::string current = url;
  for (int hop = 0; hop <= kMaxRedirects; ++hop) {
    Transfer transfer;
    transfer.max_body = max_body;
    perform(current, 0, transfer);
    if (transfer.body_too_large) {
      throw Error(current, "response larger than " + std::to_string(max_body) + " bytes");
    }
    if (!is_redirect(transfer.status)) return {transfer.status, std::move(transfer.body), current};
    if (transfer.redirect_url.empty()) throw Error(current, "redirect without a Location header");
    current = transfer.redirect_url;
  }
  throw Error(url, "more than " + std::to_string(kMaxRedirects) + " redirects");
}

HttpResponse HttpClient::get_to_file(const std::string& url, const std::filesystem::path& path,
                                     uint64_t offset, const ProgressFn& progress) {
  std::string current = url;
  for (int hop = 0; hop <= kMaxRedirects; ++hop) {
    Transfer transfer;
    transfer.path = &path;
    transfer.offset = offset;
    transfer.progress = &progress;
    perform(current, offset, transfer);
    if (!is_redirect(transfer.status)) {
      // An empty 200 body never opens the file: it must still end up empty.
      if (transfer.status == 200 && transfer.bytes_in_file == 0) {
        const FileHandle truncate(std::fopen(path.c_str(), "wb"));
        if (!truncate) throw Error(path.string(), "cannot open for writing");
      }
      return {transfer.status, std::move(transfer.body), current};
    }
    if (transfer.redirect_url.empty()) throw Error(current, "redirect without a Location header");
    current = transfer.redirect_url;
  }
  throw Error(url, "more than " + std::to_string(kMaxRedirects) + " redirects");
}

}  // namespace oxi::hub
