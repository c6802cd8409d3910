#include "lib/chat/python_str.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>

#include "lib/tokenizer/unicode.h"

namespace oxi::jinja::py {
namespace {

using tokenizer::str_properties;

std::u32string code_points(std::string_view s) {
  return tokenizer::decode_utf8(s);
}
std::string utf8(std::u32string_view cps) {
  return tokenizer::encode_utf8(cps);
}

constexpr char32_t kCapitalSigma = 0x03A3, kSmallSigma = 0x03C3, kFinalSigma = 0x03C2;

// Python's lowercase of cps[i] in its context: a capital sigma is final (ς) when a cased
// character stands before it and none after it, case-ignorable characters skipped both ways
// (CPython's handle_capital_sigma).
void append_lower_at(std::u32string& out, std::u32string_view cps, size_t i) {
  if (cps[i] != kCapitalSigma) {
    tokenizer::append_lowercase(out, cps[i]);
    return;
  }
  size_t j = i;
  while (j > 0 && str_properties(cps[j - 1]).case_ignorable) --j;
  bool final_sigma = j > 0 && str_properties(cps[j - 1]).cased;
  if (final_sigma) {
    size_t k = i + 1;
    while (k < cps.size() && str_properties(cps[k]).case_ignorable) ++k;
    final_sigma = k == cps.size() || !str_properties(cps[k]).cased;
  }
  out.push_back(final_sigma ? kFinalSigma : kSmallSigma);
}

bool is_space(char32_t c) {
  return str_properties(c).space;
}

// Every character of s satisfies `pred`, and s is not empty.
template <class Pred>
bool all_of_chars(std::string_view s, Pred pred) {
  const std::u32string cps = code_points(s);
  return !cps.empty() && std::all_of(cps.begin(), cps.end(), pred);
}

// str.islower() / isupper(): some cased character, none of the other case (nor titlecase).
bool only_case(std::string_view s, bool lower) {
  bool cased = false;
  for (char32_t c : code_points(s)) {
    const tokenizer::StrProperties p = str_properties(c);
    if (p.titlecase || (lower ? p.uppercase : p.lowercase)) return false;
    cased = cased || (lower ? p.lowercase : p.uppercase);
  }
  return cased;
}

}  // namespace

std::vector<std::string_view> chars(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < s.size();) {
    const size_t n = std::min(tokenizer::decode_code_point(s, i).length, s.size() - i);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

size_t length(std::string_view s) {
  return chars(s).size();
}

int64_t char_index(std::string_view s, size_t byte) {
  return static_cast<int64_t>(chars(s.substr(0, std::min(byte, s.size()))).size());
}

std::string lower(std::string_view s) {
  const std::u32string cps = code_points(s);
  std::u32string out;
  for (size_t i = 0; i < cps.size(); ++i) append_lower_at(out, cps, i);
  return utf8(out);
}

std::string upper(std::string_view s) {
  std::u32string out;
  for (char32_t c : code_points(s)) tokenizer::append_uppercase(out, c);
  return utf8(out);
}

// CPython's do_title: a character after a cased one is lowercased, any other titlecased.
std::string title(std::string_view s) {
  const std::u32string cps = code_points(s);
  std::u32string out;
  bool previous_cased = false;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (previous_cased)
      append_lower_at(out, cps, i);
    else
      tokenizer::append_titlecase(out, cps[i]);
    previous_cased = str_properties(cps[i]).cased;
  }
  return utf8(out);
}

// Since Python 3.8 the first character is titlecased (not uppercased), the rest lowercased.
std::string capitalize(std::string_view s) {
  const std::u32string cps = code_points(s);
  std::u32string out;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (i == 0)
      tokenizer::append_titlecase(out, cps[i]);
    else
      append_lower_at(out, cps, i);
  }
  return utf8(out);
}

bool islower(std::string_view s) {
  return only_case(s, true);
}
bool isupper(std::string_view s) {
  return only_case(s, false);
}
bool isalpha(std::string_view s) {
  return all_of_chars(s, [](char32_t c) { return tokenizer::is_letter(c); });
}
bool isdigit(std::string_view s) {
  return all_of_chars(s, [](char32_t c) { return str_properties(c).digit; });
}
bool isnumeric(std::string_view s) {
  return all_of_chars(s, [](char32_t c) { return str_properties(c).numeric; });
}
bool isdecimal(std::string_view s) {  // Numeric_Type=Decimal, which is exactly category Nd
  return all_of_chars(s,
                      [](char32_t c) { return tokenizer::category(c) == tokenizer::Category::Nd; });
}
// isalpha, isdecimal, isdigit or isnumeric (each contains the one before it: numeric)
bool isalnum(std::string_view s) {
  return all_of_chars(
      s, [](char32_t c) { return tokenizer::is_letter(c) || str_properties(c).numeric; });
}
bool isspace(std::string_view s) {
  return all_of_chars(s, is_space);
}

std::string strip(std::string_view s, const std::string* chars_arg, bool left, bool right) {
  const std::u32string cps = code_points(s);
  const std::u32string strip_set = chars_arg ? code_points(*chars_arg) : std::u32string();
  const auto stripped = [&](char32_t c) {
    return chars_arg ? strip_set.find(c) != std::u32string::npos : is_space(c);
  };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && stripped(cps[b])) ++b;
  if (right)
    while (e > b && stripped(cps[e - 1])) --e;
  return utf8(std::u32string_view(cps).substr(b, e - b));
}

std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (!sep) {
    const std::u32string cps = code_points(s);
    size_t i = 0;
    while (i < cps.size()) {
      while (i < cps.size() && is_space(cps[i])) ++i;
      if (i >= cps.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        out.push_back(utf8(std::u32string_view(cps).substr(i)));  // the rest as it is
        return out;
      }
      size_t j = i;
      while (j < cps.size() && !is_space(cps[j])) ++j;
      out.push_back(utf8(std::u32string_view(cps).substr(i, j - i)));
      i = j;
    }
    return out;
  }
  size_t start = 0;
  for (;;) {
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) break;
    const size_t k = s.find(*sep, start);
    if (k == std::string_view::npos) break;
    out.emplace_back(s.substr(start, k - start));
    start = k + sep->size();
  }
  out.emplace_back(s.substr(start));
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::string* sep, int64_t maxsplit) {
  if (maxsplit < 0) return split(s, sep, maxsplit);  // the same parts from either end
  std::vector<std::string> out;
  if (!sep) {
    const std::u32string cps = code_points(s);
    size_t e = cps.size();
    while (e > 0) {
      while (e > 0 && is_space(cps[e - 1])) --e;
      if (e == 0) break;
      if (static_cast<int64_t>(out.size()) == maxsplit) {
        out.push_back(utf8(std::u32string_view(cps).substr(0, e)));  // the rest as it is
        break;
      }
      size_t b = e;
      while (b > 0 && !is_space(cps[b - 1])) --b;
      out.push_back(utf8(std::u32string_view(cps).substr(b, e - b)));
      e = b;
    }
  } else {
    size_t end = s.size();
    while (static_cast<int64_t>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      const size_t k = s.rfind(*sep, end - sep->size());
      if (k == std::string_view::npos) break;
      out.emplace_back(s.substr(k + sep->size(), end - k - sep->size()));
      end = k;
    }
    out.emplace_back(s.substr(0, end));
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> splitlines(std::string_view s) {
  std::vector<std::string> lines;
  std::string line;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = 0;  // length of a line break at i
    if (c == '\r')
      n = i + 1 < s.size() && s[i + 1] == '\n' ? 2 : 1;
    else if (c == '\n' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e))
      n = 1;
    else if (s.compare(i, 2, "\xC2\x85") == 0)
      n = 2;
    else if (s.compare(i, 3, "\xE2\x80\xA8") == 0 || s.compare(i, 3, "\xE2\x80\xA9") == 0)
      n = 3;
    if (n == 0) {
      line += s[i++];
      continue;
    }
    lines.push_back(std::move(line));
    line.clear();
    i += n;
  }
  if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

std::string replace(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
  std::string out;
  int64_t done = 0;
  if (from.empty()) {  // `to` before every character and at the end
    for (std::string_view c : chars(s)) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      out += c;
    }
    if (count < 0 || done < count) out += to;
    return out;
  }
  size_t pos = 0;
  for (size_t k; (count < 0 || done < count) && (k = s.find(from, pos)) != std::string_view::npos;
       ++done) {
    out += s.substr(pos, k - pos);
    out += to;
    pos = k + from.size();
  }
  out += s.substr(pos);
  return out;
}

int64_t count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(length(s)) + 1;
  int64_t n = 0;
  for (size_t k = 0; (k = s.find(sub, k)) != std::string_view::npos; k += sub.size()) ++n;
  return n;
}

int64_t find(std::string_view s, std::string_view sub) {
  const size_t k = s.find(sub);
  return k == std::string_view::npos ? -1 : char_index(s, k);
}

int64_t rfind(std::string_view s, std::string_view sub) {
  const size_t k = s.rfind(sub);
  return k == std::string_view::npos ? -1 : char_index(s, k);
}

std::string justify(std::string_view s, int64_t width, std::string_view fill, Justify how) {
  const int64_t margin = width - static_cast<int64_t>(length(s));
  if (margin <= 0) return std::string(s);
  // CPython's pad(): center puts the odd character left when both margin and width are odd
  const int64_t left = how == Justify::right    ? margin
                       : how == Justify::center ? margin / 2 + (margin & width & 1)
                                                : 0;
  std::string out;
  out.reserve(s.size() + static_cast<size_t>(margin) * fill.size());
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (int64_t i = left; i < margin; ++i) out += fill;
  return out;
}

std::string zfill(std::string_view s, int64_t width) {
  std::string out = justify(s, width, "0", Justify::right);
  const size_t zeros = out.size() - s.size();
  if (zeros > 0 && !s.empty() && (s[0] == '+' || s[0] == '-')) {  // the sign before the zeros
    out[0] = s[0];
    out[zeros] = '0';
  }
  return out;
}

// text with every Unicode decimal digit (category Nd) as its ASCII digit, as int() and float()
// read them: Nd digits come in runs of whole 0-9 sets, so a digit's value is its distance from
// the start of its run, modulo 10.
std::string ascii_digits(std::string_view text) {
  std::u32string cps = code_points(text);
  for (char32_t& c : cps) {
    if (c < 0x80 || tokenizer::category(c) != tokenizer::Category::Nd) continue;
    char32_t start = c;
    while (start > 0 && tokenizer::category(start - 1) == tokenizer::Category::Nd) --start;
    c = U'0' + (c - start) % 10;
  }
  return utf8(cps);
}

std::optional<int64_t> parse_int(std::string_view text) {
  const std::string t = ascii_digits(strip(text, nullptr, true, true));
  size_t i = 0;
  const bool negative = !t.empty() && t[0] == '-';
  if (!t.empty() && (t[0] == '-' || t[0] == '+')) ++i;
  if (i == t.size()) return std::nullopt;
  uint64_t value = 0;
  bool digit_before = false;
  for (; i < t.size(); ++i) {
    if (t[i] == '_' && digit_before && i + 1 < t.size() && t[i + 1] >= '0' && t[i + 1] <= '9') {
      digit_before = false;
      continue;
    }
    if (t[i] < '0' || t[i] > '9') return std::nullopt;
    const uint64_t next = value * 10 + static_cast<uint64_t>(t[i] - '0');
    if (value > (uint64_t{1} << 63) / 10 || next > (uint64_t{1} << 63)) return std::nullopt;
    value = next;
    digit_before = true;
  }
  if (!negative && value > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return negative ? static_cast<int64_t>(0 - value) : static_cast<int64_t>(value);
}

std::optional<double> parse_float(std::string_view text) {
  std::string t = ascii_digits(strip(text, nullptr, true, true));
  // Python's syntax: digits with single "_" between them, ".", an exponent; or inf / infinity
  // / nan with a sign. strtod would also take hex floats and "nan(...)": checked first.
  std::string plain;
  size_t i = 0;
  if (!t.empty() && (t[0] == '-' || t[0] == '+')) plain += t[i++];
  std::string rest = t.substr(i);
  for (char& c : rest) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (rest == "inf" || rest == "infinity" || rest == "nan") return std::strtod(t.c_str(), nullptr);
  bool digits = false, dot = false, exponent = false;
  for (size_t k = 0; k < rest.size(); ++k) {
    const char c = rest[k];
    if (c >= '0' && c <= '9') {
      digits = true;
    } else if (c == '_' && k > 0 && k + 1 < rest.size() &&
               std::isdigit(static_cast<unsigned char>(rest[k - 1])) &&
               std::isdigit(static_cast<unsigned char>(rest[k + 1]))) {
      continue;
    } else if (c == '.' && !dot && !exponent) {
      dot = true;
    } else if (c == 'e' && digits && !exponent) {
      exponent = true;
      digits = false;
      if (k + 1 < rest.size() && (rest[k + 1] == '+' || rest[k + 1] == '-')) plain += rest[k++];
    } else {
      return std::nullopt;
    }
    plain += rest[k];
  }
  if (!digits) return std::nullopt;
  return std::strtod(plain.c_str(), nullptr);
}

}  // namespace oxi::jinja::py
