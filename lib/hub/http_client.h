// A small libcurl HTTP client for the Hub: GET into memory or into a (resumed) file.
//
// Redirects are followed here, not by libcurl, so that the access token goes only to the
// endpoint's own origin: the Hub answers file requests with a redirect to a CDN host, which
// must never see the token.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "lib/core/error.h"

namespace oxi::hub {

// The request never got a complete HTTP answer (connection refused or dropped, timeout,
// DNS failure): worth retrying, and what offline fallback looks for.
class TransportError : public Error {
 public:
  using Error::Error;
};

struct HttpResponse {
  long status = 0;
  std::string body;       // for get_to_file: the body of an error answer only (truncated)
  std::string final_url;  // after redirects
};

// Called with the number of bytes the destination file holds so far.
using ProgressFn = std::function<void(uint64_t bytes_in_file)>;

class HttpClient {
 public:
  // `token` is sent as "Authorization: Bearer <token>" to URLs of `auth_url`'s origin only.
  HttpClient(const std::string& auth_url, std::string token);

  // GET, following up to kMaxRedirects redirects; throws TransportError, and oxi::Error when
  // the body exceeds max_body bytes.
  HttpResponse get(const std::string& url, size_t max_body = 64u << 20);

  // GET into `path`. With offset > 0 the request asks for "Range: bytes=offset-" and appends
  // on 206; a 200 answer (Range ignored) rewrites the file from the start. The file is only
  // touched by a 200/206 answer; other statuses are returned with their body. Bytes received
  // before a dropped connection stay in the file, so the caller can resume from its size.
  HttpResponse get_to_file(const std::string& url, const std::filesystem::path& path,
                           uint64_t offset, const ProgressFn& progress);

  static constexpr int kMaxRedirects = 10;

 private:
  struct Transfer;
  // One request without redirects: performs it and fills `transfer`; throws TransportError.
  void perform(const std::string& url, uint64_t range_start, Transfer& transfer);

  std::string auth_origin_;
  std::string token_;
};

}  // namespace oxi::hub
