// URL helpers for the Hub client: percent-encoding and the origin a token may be sent to.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace oxi::hub {

// Percent-encodes everything but RFC 3986 unreserved characters (and '/' when keep_slash).
std::string url_encode(std::string_view text, bool keep_slash = false);

// "scheme://host:port" in lowercase with the default port filled in, e.g.
// "https://huggingface.co:443"; nullopt when `url` cannot be parsed. Two URLs may share
// credentials only when their origins are equal.
std::optional<std::string> url_origin(const std::string& url);

}  // namespace oxi::hub
