#include "lib/chat/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <vector>

#include "lib/core/json_string.h"
#include "lib/tokenizer/unicode.h"

namespace oxi::jinja {

bool Value::truthy() const {
  switch (kind) {
    case Kind::undefined:
      return false;
    case Kind::ns:
    case Kind::macro:
    case Kind::builtin:
      return true;
    case Kind::data:
      break;
  }
  if (data.is_null()) return false;
  if (data.is_boolean()) return data.get<bool>();
  if (data.is_number_integer()) return data.get<int64_t>() != 0;
  if (data.is_number_float()) return data.get<double>() != 0.0;
  if (data.is_string()) return !data.get_ref<const std::string&>().empty();
  return !data.empty();  // arrays and objects
}

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // Shortest round-trip digits, then Python's layout: scientific when exp < -4 or >= 16.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string s(buf, res.ptr);
  const size_t e = s.find('e');
  std::string mant = s.substr(0, e);
  const int exp = std::stoi(s.substr(e + 1));
  bool neg = false;
  if (!mant.empty() && mant[0] == '-') {
    neg = true;
    mant.erase(0, 1);
  }
  std::string digits;
  for (char c : mant) {
    if (c != '.') digits += c;
  }
  std::string out;
  if (exp < -4 || exp >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out.append(".").append(digits, 1);
    char eb[16];
    std::snprintf(eb, sizeof(eb), "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  } else if (exp < 0) {
    out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  } else {
    const size_t int_len = static_cast<size_t>(exp) + 1;
    if (digits.size() <= int_len) {
      out = digits + std::string(int_len - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, int_len) + "." + digits.substr(int_len);
    }
  }
  return neg ? "-" + out : out;
}

namespace {

// Python's str.isprintable() for one character: not a control, format, surrogate, private-use,
// unassigned or separator character (the space excepted).
bool python_printable(char32_t c) {
  using tokenizer::Category;
  if (c == ' ') return true;
  switch (tokenizer::category(c)) {
    case Category::Cc:
    case Category::Cf:
    case Category::Cs:
    case Category::Co:
    case Category::Cn:
    case Category::Zl:
    case Category::Zp:
    case Category::Zs:
      return false;
    default:
      return true;
  }
}

// Python's repr() of a str: quoted with ' (or " when only ' occurs), backslash escapes for
// \\, the quote, \t \n \r, and \xhh / \uhhhh / \Uhhhhhhhh for what is not printable.
std::string python_str_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : tokenizer::decode_utf8(s)) {
    if (c == '\\')
      out += "\\\\";
    else if (c == static_cast<char32_t>(quote))
      out += std::string("\\") + quote;
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7f || (c >= 0x80 && !python_printable(c))) {
      char b[16];
      const unsigned v = static_cast<unsigned>(c);
      std::snprintf(b, sizeof(b), c <= 0xff ? "\\x%02x" : c <= 0xffff ? "\\u%04x" : "\\U%08x", v);
      out += b;
    } else {
      tokenizer::append_utf8(out, c);
    }
  }
  out += quote;
  return out;
}

// A JSON string as json.dumps writes it; with ensure_ascii every character outside ' '..'~' as
// \\uXXXX (a surrogate pair above U+FFFF), the named escapes kept.
void append_dumped_string(std::string& out, const std::string& s, bool ensure_ascii) {
  if (!ensure_ascii) {
    append_json_string(out, s);
    return;
  }
  out += '"';
  for (char32_t c : tokenizer::decode_utf8(s)) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
      continue;
    }
    if (c < 0x80) {  // the named escapes and \u00XX as without ensure_ascii; DEL as \u007f
      std::string one;
      append_json_string(one, std::string(1, static_cast<char>(c)));
      out += c == 0x7f ? std::string("\\u007f") : one.substr(1, one.size() - 2);
      continue;
    }
    char b[16];
    if (c > 0xFFFF) {
      const char32_t v = c - 0x10000;
      std::snprintf(b, sizeof(b), "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                    static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
    } else {
      std::snprintf(b, sizeof(b), "\\u%04x", static_cast<unsigned>(c));
    }
    out += b;
  }
  out += '"';
}

void dump_json(std::string& out, const Json& j, const JsonStyle& style, int depth) {
  const bool pretty = style.indent >= 0;
  const std::string& item_sep = !style.item_separator.empty() ? style.item_separator
                                : pretty                      ? ","
                                                              : ", ";
  const std::string& key_sep = !style.key_separator.empty() ? style.key_separator : ": ";
  auto newline = [&](int d) {
    out += '\n';
    out.append(static_cast<size_t>(style.indent * d), ' ');
  };
  if (j.is_null())
    out += "null";
  else if (j.is_boolean())
    out += j.get<bool>() ? "true" : "false";
  else if (j.is_number_integer())
    out += std::to_string(j.get<int64_t>());
  else if (j.is_number_unsigned())
    out += std::to_string(j.get<uint64_t>());
  else if (j.is_number_float()) {
    const double d = j.get<double>();
    out += std::isnan(d)   ? "NaN"
           : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity")
                           : python_float_repr(d);
  } else if (j.is_string())
    append_dumped_string(out, j.get_ref<const std::string&>(), style.ensure_ascii);
  else if (j.is_array()) {
    if (j.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    bool first = true;
    for (const Json& e : j) {
      if (!first) out += item_sep;
      first = false;
      if (pretty) newline(depth + 1);
      dump_json(out, e, style, depth + 1);
    }
    if (pretty) newline(depth);
    out += ']';
  } else if (j.is_object()) {
    if (j.empty()) {
      out += "{}";
      return;
    }
    std::vector<Json::const_iterator> members;
    for (auto it = j.begin(); it != j.end(); ++it) members.push_back(it);
    if (style.sort_keys)
      std::stable_sort(members.begin(), members.end(),
                       [](const auto& a, const auto& b) { return a.key() < b.key(); });
    out += '{';
    bool first = true;
    for (const auto& it : members) {
      if (!first) out += item_sep;
      first = false;
      if (pretty) newline(depth + 1);
      append_dumped_string(out, it.key(), style.ensure_ascii);
      out += key_sep;
      dump_json(out, it.value(), style, depth + 1);
    }
    if (pretty) newline(depth);
    out += '}';
  }
}

}  // namespace

std::string to_python_repr(const Json& j) {
  if (j.is_null()) return "None";
  if (j.is_boolean()) return j.get<bool>() ? "True" : "False";
  if (j.is_number_integer()) return std::to_string(j.get<int64_t>());
  if (j.is_number_unsigned()) return std::to_string(j.get<uint64_t>());
  if (j.is_number_float()) return python_float_repr(j.get<double>());
  if (j.is_string()) return python_str_repr(j.get_ref<const std::string&>());
  std::string out;
  if (j.is_array()) {
    out = "[";
    bool first = true;
    for (const Json& e : j) {
      if (!first) out += ", ";
      first = false;
      out += to_python_repr(e);
    }
    return out + "]";
  }
  out = "{";
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!first) out += ", ";
    first = false;
    out += python_str_repr(it.key()) + ": " + to_python_repr(it.value());
  }
  return out + "}";
}

std::string to_python_str(const Value& v) {
  if (v.kind == Value::Kind::undefined) return "";
  if (v.kind == Value::Kind::ns) return "<Namespace>";
  if (v.kind == Value::Kind::macro) return "<Macro>";
  if (v.kind == Value::Kind::builtin) return "<function>";
  if (v.data.is_string()) return v.data.get<std::string>();
  return to_python_repr(v.data);
}

std::string to_json_text(const Json& j, const JsonStyle& style) {
  std::string out;
  dump_json(out, j, style, 0);
  return out;
}

}  // namespace oxi::jinja
