#include "lib/chat/jinja_text_filters.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <vector>

#include "lib/chat/python_str.h"

namespace oxi::jinja {

std::string title_filter(std::string_view s) {
  const auto separator = [](std::string_view c) {
    return c.size() == 1
               ? std::string_view("-({[<").find(c[0]) != std::string_view::npos || py::isspace(c)
               : py::isspace(c);
  };
  std::string out;
  const std::vector<std::string_view> chars = py::chars(s);
  for (size_t i = 0; i < chars.size();) {
    const bool sep = separator(chars[i]);
    size_t j = i + 1;
    while (j < chars.size() && separator(chars[j]) == sep) ++j;
    std::string piece;
    for (size_t k = i + 1; k < j; ++k) piece += chars[k];
    out += py::upper(chars[i]) + py::lower(piece);
    i = j;
  }
  return out;
}

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string truncate_text(std::string_view s, int64_t length, bool killwords, std::string_view end,
                          int64_t leeway) {
  const std::vector<std::string_view> chars = py::chars(s);
  if (static_cast<int64_t>(chars.size()) <= length + leeway) return std::string(s);
  const int64_t keep = length - static_cast<int64_t>(py::length(end));
  std::string head;
  for (int64_t i = 0; i < keep; ++i) head += chars[static_cast<size_t>(i)];
  if (!killwords) {  // head.rsplit(" ", 1)[0]
    const size_t space = head.rfind(' ');
    if (space != std::string::npos) head.resize(space);
  }
  return head + std::string(end);
}

std::string url_quote(std::string_view s, bool for_qs) {
  std::string out;
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-' || c == '~';
    if (unreserved || (c == '/' && !for_qs)) {
      out += ch;
    } else if (c == ' ' && for_qs) {
      out += '+';
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

std::string filesize_format(double bytes, bool binary) {
  if (bytes == 1) return "1 Byte";
  const double base = binary ? 1024 : 1000;
  char text[400];
  if (bytes < base) {
    std::snprintf(text, sizeof text, "%.0f Bytes", std::trunc(bytes) + 0.0);  // int(bytes), no -0
    return text;
  }
  static constexpr std::array<const char*, 8> kDecimal = {"kB", "MB", "GB", "TB",
                                                          "PB", "EB", "ZB", "YB"};
  static constexpr std::array<const char*, 8> kBinary = {"KiB", "MiB", "GiB", "TiB",
                                                         "PiB", "EiB", "ZiB", "YiB"};
  // Python compares the float with the exact int base ** (i + 2): long double holds 1000^9 and
  // 1024^9 exactly; the division rounds the power to a double, as float / int does
  size_t i = 0;
  long double unit = static_cast<long double>(base) * base;
  while (i + 1 < kDecimal.size() && !(static_cast<long double>(bytes) < unit)) {
    ++i;
    unit *= base;
  }
  std::snprintf(text, sizeof text, "%.1f %s", base * bytes / static_cast<double>(unit),
                binary ? kBinary[i] : kDecimal[i]);
  return text;
}

}  // namespace oxi::jinja
