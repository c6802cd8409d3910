#include "lib/chat/jinja_text_filters.h"

#include <algorithm>
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

namespace {

using Chars = std::vector<std::string_view>;

// The character classes of textwrap's patterns: its whitespace is ASCII's alone; \w is a
// letter, a digit of any kind or "_"; a "letter" is \w without the decimal digits.
bool wrap_space(std::string_view c) {
  return c.size() == 1 && std::string_view("\t\n\x0b\x0c\r ").find(c[0]) != std::string_view::npos;
}
bool word_char(std::string_view c) {
  return c == "_" || py::isalnum(c);
}
bool letter(std::string_view c) {
  return word_char(c) && !py::isdecimal(c);
}
bool word_punct(std::string_view c) {
  return word_char(c) ||
         (c.size() == 1 && std::string_view("!\"'&.,?").find(c[0]) != std::string_view::npos);
}

// textwrap.TextWrapper.wordsep_re at position p of chars (break_on_hyphens): the length of the
// match there. Its alternatives in order: a run of whitespace; an em-dash ("--" or longer)
// between a word character and \w; the shortest run of non-whitespace that ends a word (before
// whitespace or the end), ends right after a hyphen between letters ("well-", of "well-known";
// not in "a-b"), or ends before an em-dash.
size_t wordsep_match(const Chars& c, size_t p) {
  const size_t n = c.size();
  const auto at = [&](size_t i) { return i < n ? c[i] : std::string_view(); };
  const auto dashes_then_word = [&](size_t q) {  // (?=-{2,}\w) at q
    size_t r = q;
    while (r < n && c[r] == "-") ++r;
    return r - q >= 2 && r < n && word_char(c[r]) ? r - q : 0;
  };
  if (wrap_space(c[p])) {
    size_t q = p;
    while (q < n && wrap_space(c[q])) ++q;
    return q - p;
  }
  if (p > 0 && word_punct(c[p - 1])) {
    if (const size_t dashes = dashes_then_word(p)) return dashes;
  }
  for (size_t q = p + 1;; ++q) {  // c[p, q) is non-whitespace
    if (q < n && at(q) == "-") {
      const bool after_letters =
          (q >= 2 && letter(c[q - 2]) && letter(c[q - 1])) ||
          (q >= 3 && letter(c[q - 3]) && c[q - 2] == "-" && letter(c[q - 1]));
      const bool before_letters =
          letter(at(q + 1)) && (letter(at(q + 2)) || (at(q + 2) == "-" && letter(at(q + 3))));
      if (after_letters && before_letters) return q + 1 - p;
    }
    if (q == n || wrap_space(c[q])) return q - p;
    if (word_punct(c[q - 1]) && dashes_then_word(q)) return q - p;
  }
}

// TextWrapper._split: the chunks of a line, words and whitespace runs apart.
std::vector<Chars> wrap_chunks(const Chars& c, bool break_on_hyphens) {
  std::vector<Chars> chunks;
  for (size_t p = 0; p < c.size();) {
    size_t len = 0;
    if (break_on_hyphens) {
      len = wordsep_match(c, p);
    } else {  // wordsep_simple_re: runs of whitespace and what lies between them
      const bool space = wrap_space(c[p]);
      while (p + len < c.size() && wrap_space(c[p + len]) == space) ++len;
    }
    chunks.emplace_back(c.begin() + static_cast<ptrdiff_t>(p),
                        c.begin() + static_cast<ptrdiff_t>(p + len));
    p += len;
  }
  return chunks;
}

std::string joined(const Chars& c) {
  std::string s;
  for (std::string_view x : c) s += x;
  return s;
}
bool blank(const Chars& c) {  // chunk.strip() == ''
  return c.empty() || py::isspace(joined(c));
}

// TextWrapper._wrap_chunks with no indents, drop_whitespace and no line limit.
std::vector<std::string> wrap_line(const Chars& text, size_t width, bool break_long_words,
                                   bool break_on_hyphens) {
  std::vector<Chars> chunks = wrap_chunks(text, break_on_hyphens);
  std::reverse(chunks.begin(), chunks.end());
  std::vector<std::string> lines;
  while (!chunks.empty()) {
    std::vector<Chars> line;
    size_t len = 0;
    if (blank(chunks.back()) && !lines.empty()) chunks.pop_back();
    while (!chunks.empty() && len + chunks.back().size() <= width) {
      len += chunks.back().size();
      line.push_back(std::move(chunks.back()));
      chunks.pop_back();
    }
    if (!chunks.empty() && chunks.back().size() > width) {  // _handle_long_word
      Chars& chunk = chunks.back();
      const size_t space_left = width - len;  // >= 1: the chunk did not fit
      if (break_long_words) {
        size_t end = space_left;
        if (break_on_hyphens && chunk.size() > space_left) {
          // the last hyphen within reach, when something other than hyphens precedes it
          for (size_t h = space_left; h-- > 1;) {
            if (chunk[h] != "-") continue;
            if (std::any_of(chunk.begin(), chunk.begin() + static_cast<ptrdiff_t>(h),
                            [](std::string_view x) { return x != "-"; }))
              end = h + 1;
            break;
          }
        }
        line.emplace_back(chunk.begin(), chunk.begin() + static_cast<ptrdiff_t>(end));
        chunk.erase(chunk.begin(), chunk.begin() + static_cast<ptrdiff_t>(end));
      } else if (line.empty()) {
        line.push_back(std::move(chunk));
        chunks.pop_back();
      }
    }
    if (!line.empty() && blank(line.back())) line.pop_back();
    if (!line.empty()) {
      std::string out;
      for (const Chars& x : line) out += joined(x);
      lines.push_back(std::move(out));
    }
  }
  return lines;
}

}  // namespace

std::string wordwrap(std::string_view s, int64_t width, bool break_long_words,
                     std::string_view wrapstring, bool break_on_hyphens) {
  std::string out;
  bool first = true;
  for (const std::string& line : py::splitlines(s)) {
    if (!first) out += wrapstring;
    first = false;
    const Chars chars = py::chars(line);
    bool first_piece = true;
    for (const std::string& piece :
         wrap_line(chars, static_cast<size_t>(width), break_long_words, break_on_hyphens)) {
      if (!first_piece) out += wrapstring;
      first_piece = false;
      out += piece;
    }
  }
  return out;
}

}  // namespace oxi::jinja
