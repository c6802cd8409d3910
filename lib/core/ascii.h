// ASCII case mapping for identifiers, file names, hashes and protocol words: unlike
// std::tolower it does not follow the C locale (which GStreamer's init sets from the
// environment), and bytes of UTF-8 text pass through unchanged.
#pragma once

#include <string>
#include <string_view>

namespace oxi {

inline std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace oxi
