#include "lib/hub/url.h"

#include <cctype>
#include <memory>

#include <curl/curl.h>

#include "lib/core/ascii.h"

namespace oxi::hub {

namespace {

struct CurlUrlDeleter {
  void operator()(CURLU* handle) const { curl_url_cleanup(handle); }
};
struct CurlStringDeleter {
  void operator()(char* text) const { curl_free(text); }
};

std::optional<std::string> url_part(CURLU* handle, CURLUPart part, unsigned int flags) {
  char* raw = nullptr;
  if (curl_url_get(handle, part, &raw, flags) != CURLUE_OK) return std::nullopt;
  const std::unique_ptr<char, CurlStringDeleter> owned(raw);
  return std::string(owned.get());
}

}  // namespace

std::string url_encode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string encoded;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      encoded.push_back(static_cast<char>(c));
    } else {
      encoded.push_back('%');
      encoded.push_back(kHex[c >> 4]);
      encoded.push_back(kHex[c & 15]);
    }
  }
  return encoded;
}

std::optional<std::string> url_origin(const std::string& url) {
  const std::unique_ptr<CURLU, CurlUrlDeleter> handle(curl_url());
  if (!handle || curl_url_set(handle.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) {
    return std::nullopt;
  }
  auto scheme = url_part(handle.get(), CURLUPART_SCHEME, 0);
  auto host = url_part(handle.get(), CURLUPART_HOST, 0);
  auto port = url_part(handle.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT);
  if (!scheme || !host || !port) return std::nullopt;
  return ascii_lower(*scheme + "://" + *host + ":" + *port);
}

}  // namespace oxi::hub
