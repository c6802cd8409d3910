#include "lib/chat/python_format.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "lib/chat/python_str.h"
#include "lib/tokenizer/unicode.h"

namespace oxi::jinja {
namespace {

[[noreturn]] void fail(const std::string& message) {
  throw PercentFormatError(message);
}

bool is_int(const Value& v) {
  return v.kind == Value::Kind::data &&
         (v.data.is_number_integer() || v.data.is_number_unsigned() || v.data.is_boolean());
}
int64_t int_of(const Value& v) {
  return v.data.is_boolean() ? int64_t{v.data.get<bool>()} : v.data.get<int64_t>();
}
bool is_real(const Value& v) {
  return is_int(v) || (v.kind == Value::Kind::data && v.data.is_number_float());
}
double real_of(const Value& v) {
  return is_int(v) ? static_cast<double>(int_of(v)) : v.data.get<double>();
}

// |x| in `base` (2, 8, 10, 16), the sign left to the caller.
std::string magnitude_digits(int64_t x, int base, bool upper) {
  uint64_t m = x < 0 ? uint64_t{0} - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), digits[m % static_cast<uint64_t>(base)]);
    m /= static_cast<uint64_t>(base);
  } while (m);
  return out;
}

// The first n characters of text (a precision on text counts characters).
std::string first_chars(const std::string& text, int64_t n) {
  if (n < 0 || static_cast<int64_t>(py::length(text)) <= n) return text;
  std::string cut;
  for (std::string_view ch : py::chars(text)) {
    if (n-- == 0) break;
    cut += ch;
  }
  return cut;
}

// printf of one double, sized to fit
std::string printf_double(const char* spec, double x) {
  std::string out(static_cast<size_t>(std::snprintf(nullptr, 0, spec, x)), '\0');
  std::snprintf(out.data(), out.size() + 1, spec, x);
  return out;
}

// prefix (sign, 0x) + body in `width` characters of `fill`: '<' left, '>' right, '^' centred,
// '=' the fill between prefix and body. Both formatting styles pad through it.
std::string aligned(std::string_view fill, char align, int64_t width, std::string_view prefix,
                    std::string_view body) {
  const int64_t len = static_cast<int64_t>(py::length(prefix) + py::length(body));
  const int64_t n = width > len ? width - len : 0;
  const auto fills = [fill](int64_t count) {
    std::string out;
    for (int64_t k = 0; k < count; ++k) out += fill;
    return out;
  };
  const std::string p(prefix), b(body);
  switch (align) {
    case '<':
      return p + b + fills(n);
    case '^':
      return fills(n / 2) + p + b + fills(n - n / 2);
    case '=':
      return p + fills(n) + b;
    default:
      return fills(n) + p + b;
  }
}

// "-" for a negative number, else what the sign option asks ('+', ' ' or nothing for '-').
std::string sign_text(bool negative, char sign) {
  return negative ? "-" : sign == '+' ? "+" : sign == ' ' ? " " : "";
}

// Python's spelling of inf and nan (upper case for E / F / G), without the sign.
std::string nonfinite_text(double x, char type) {
  const bool upper = type == 'E' || type == 'F' || type == 'G';
  return std::isnan(x) ? (upper ? "NAN" : "nan") : (upper ? "INF" : "inf");
}

// chr(cp) as UTF-8, Python's error beyond Unicode.
std::string code_point_text(int64_t cp) {
  if (cp < 0 || cp > 0x10FFFF) fail("%c arg not in range(0x110000)");
  std::string c;
  tokenizer::append_utf8(c, static_cast<char32_t>(cp));
  return c;
}

struct Spec {
  bool alt = false, zero = false, left = false, plus = false, space = false;
  int64_t width = -1, precision = -1;
  char type = 's';
};

// sign + body padded to the width: spaces on the left, on the right with '-', or zeros between
// the sign (and prefix) and the digits with '0' (numbers only).
std::string pad(const Spec& s, std::string_view sign, std::string_view body, bool numeric) {
  const bool zeros = s.zero && numeric && !s.left;
  return aligned(zeros ? "0" : " ", s.left ? '<' : zeros ? '=' : '>', s.width, sign, body);
}

std::string sign_of(bool negative, const Spec& s) {
  return sign_text(negative, s.plus ? '+' : s.space ? ' ' : '-');
}

std::string format_int(const Spec& s, const Value& v) {
  const char t = s.type;
  int64_t x = 0;
  if (is_int(v)) {
    x = int_of(v);
  } else if (v.kind == Value::Kind::data && v.data.is_number_float() &&
             (t == 'd' || t == 'i' || t == 'u')) {
    const double d = v.data.get<double>();
    if (std::isnan(d)) fail("cannot convert float NaN to integer");
    if (std::isinf(d)) fail("cannot convert float infinity to integer");
    if (std::fabs(d) >= 9.2e18) fail("%d format: integer beyond 64 bits is not supported");
    x = static_cast<int64_t>(d);  // truncation, as int()
  } else if (t == 'd' || t == 'i' || t == 'u') {
    fail(std::string("%") + t + " format: a real number is required, not " + python_type(v));
  } else {
    fail(std::string("%") + t + " format: an integer is required, not " + python_type(v));
  }
  const bool negative = x < 0;
  const int base = (t == 'x' || t == 'X') ? 16 : t == 'o' ? 8 : 10;
  std::string body = magnitude_digits(x, base, t == 'X');
  if (s.precision > static_cast<int64_t>(body.size()))
    body.insert(0, static_cast<size_t>(s.precision) - body.size(), '0');
  std::string sign = sign_of(negative, s);
  if (s.alt && base == 16) sign += t == 'X' ? "0X" : "0x";
  if (s.alt && base == 8) sign += "0o";
  return pad(s, sign, body, true);
}

std::string format_float(const Spec& s, const Value& v) {
  if (!is_real(v)) fail("must be real number, not " + python_type(v));
  const double x = real_of(v);
  if (!std::isfinite(x))  // Python zero-pads inf and nan like numbers
    return pad(s, sign_of(!std::isnan(x) && x < 0, s), nonfinite_text(x, s.type), true);
  const int precision = static_cast<int>(s.precision < 0 ? 6 : s.precision);
  char spec[16];
  std::snprintf(spec, sizeof(spec), "%%%s.%d%c", s.alt ? "#" : "", precision, s.type);
  return pad(s, sign_of(std::signbit(x), s), printf_double(spec, std::fabs(x)), true);
}

std::string format_char(const Spec& s, const Value& v) {
  std::string c;
  if (is_int(v)) {
    c = code_point_text(int_of(v));
  } else if (v.is_string() && py::length(v.data.get_ref<const std::string&>()) == 1) {
    c = v.data.get<std::string>();
  } else {
    fail("%c requires an int or a unicode character, not " + python_type(v));
  }
  return pad(s, "", c, false);
}

std::string format_text(const Spec& s, const Value& v) {
  std::string text = s.type == 's'                 ? to_python_str(v)
                     : v.kind == Value::Kind::data ? to_python_repr(v.data)
                     : v.is_undefined()            ? "Undefined"
                                                   : to_python_str(v);
  return pad(s, "", first_chars(text, s.precision), false);
}

}  // namespace

std::string python_type(const Value& v) {
  if (v.kind != Value::Kind::data) return v.is_undefined() ? "Undefined" : "object";
  const Json& j = v.data;
  if (j.is_null()) return "NoneType";
  if (j.is_boolean()) return "bool";
  if (j.is_number_integer() || j.is_number_unsigned()) return "int";
  if (j.is_number_float()) return "float";
  if (j.is_string()) return "str";
  if (j.is_array()) return "list";
  return "dict";
}

std::string percent_format(std::string_view fmt, const std::vector<Value>& args,
                           const Json* mapping) {
  std::string out;
  size_t next = 0;  // the next positional argument
  const auto take = [&]() -> const Value& {
    if (next >= args.size()) fail("not enough arguments for format string");
    return args[next++];
  };
  size_t i = 0;
  while (i < fmt.size()) {
    const size_t pct = fmt.find('%', i);
    if (pct == std::string_view::npos) {
      out.append(fmt.substr(i));
      break;
    }
    out.append(fmt.substr(i, pct - i));
    i = pct + 1;
    if (i >= fmt.size()) fail("incomplete format");
    Value keyed;
    bool has_key = false;
    if (fmt[i] == '(') {
      if (!mapping) fail("format requires a mapping");
      int depth = 1;
      const size_t start = ++i;
      while (i < fmt.size() && depth > 0) {
        if (fmt[i] == '(') ++depth;
        if (fmt[i] == ')') --depth;
        ++i;
      }
      if (depth > 0) fail("incomplete format key");
      const std::string key(fmt.substr(start, i - 1 - start));
      const auto it = mapping->find(key);
      if (it == mapping->end()) fail("'" + key + "'");  // KeyError
      keyed = Value::of(*it);
      has_key = true;
    }
    Spec s;
    for (; i < fmt.size(); ++i) {
      const char f = fmt[i];
      if (f == '#')
        s.alt = true;
      else if (f == '0')
        s.zero = true;
      else if (f == '-')
        s.left = true;
      else if (f == '+')
        s.plus = true;
      else if (f == ' ')
        s.space = true;
      else
        break;
    }
    // A width or precision: digits, or '*' taking an int argument. Bounded, like the
    // renderer's other sizes (Python takes any).
    constexpr int64_t kMaxField = 100000;
    const auto number = [&](int64_t& field, const char* what) {
      if (i < fmt.size() && fmt[i] == '*') {
        const Value& v = take();
        if (!is_int(v)) fail(std::string("* wants int"));
        field = int_of(v);
        ++i;
      } else if (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') {
        field = 0;
        while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9' && field <= kMaxField)
          field = field * 10 + (fmt[i++] - '0');
      }
      if (field > kMaxField || field < -kMaxField) fail(std::string(what) + " too big");
    };
    number(s.width, "width");
    if (s.width < -1) s.left = true, s.width = -s.width;  // a negative '*' width left-justifies
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      s.precision = 0;
      number(s.precision, "precision");
      if (s.precision < 0) s.precision = 0;  // a negative '*' precision, as Python
    }
    while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
    if (i >= fmt.size()) fail("incomplete format");
    s.type = fmt[i++];
    // "%%"; with anything between, Python takes an argument and then refuses '%'
    if (s.type == '%' && i == pct + 2) {
      out += '%';
      continue;
    }
    const Value& v = has_key ? keyed : take();
    switch (s.type) {
      case 's':
      case 'r':
      case 'a':
        out += format_text(s, v);
        break;
      case 'd':
      case 'i':
      case 'u':
      case 'x':
      case 'X':
      case 'o':
        out += format_int(s, v);
        break;
      case 'e':
      case 'E':
      case 'f':
      case 'F':
      case 'g':
      case 'G':
        out += format_float(s, v);
        break;
      case 'c':
        out += format_char(s, v);
        break;
      default: {
        char hex[8];
        std::snprintf(hex, sizeof(hex), "0x%x", static_cast<unsigned char>(s.type));
        fail(std::string("unsupported format character '") + s.type + "' (" + hex + ") at index " +
             std::to_string(i - 1));
      }
    }
  }
  if (!mapping && next < args.size()) fail("not all arguments converted during string formatting");
  return out;
}

}  // namespace oxi::jinja

// ---- str.format ----

namespace oxi::jinja {
namespace {

struct BraceSpec {
  std::string fill = " ";  // one character (UTF-8)
  bool fill_given = false;
  char align = 0;     // 0: the type's default ('=' with the '0' flag for numbers)
  bool zero = false;  // the '0' flag
  char sign = '-';
  bool sign_given = false;
  bool alt = false;
  int64_t width = -1, precision = -1;
  char grouping = 0;
  char type = 0;
};

BraceSpec parse_brace_spec(std::string_view spec) {
  BraceSpec b;
  size_t i = 0;
  const auto is_align = [](char c) { return c == '<' || c == '>' || c == '=' || c == '^'; };
  const std::vector<std::string_view> chars =
      py::chars(spec.substr(0, std::min<size_t>(spec.size(), 8)));
  if (chars.size() >= 2 && chars[1].size() == 1 && is_align(chars[1][0])) {
    b.fill = std::string(chars[0]), b.fill_given = true, b.align = chars[1][0];
    i = chars[0].size() + 1;
  } else if (!spec.empty() && is_align(spec[0])) {
    b.align = spec[0], i = 1;
  }
  if (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' '))
    b.sign = spec[i++], b.sign_given = true;
  if (i < spec.size() && spec[i] == '#') b.alt = true, ++i;
  if (i < spec.size() && spec[i] == '0') {
    b.zero = true;
    if (!b.fill_given) b.fill = "0";
    ++i;
  }
  const auto digits = [&](int64_t& field) {
    if (i < spec.size() && spec[i] >= '0' && spec[i] <= '9') {
      field = 0;
      while (i < spec.size() && spec[i] >= '0' && spec[i] <= '9') {
        field = field * 10 + (spec[i++] - '0');
        if (field > 100000) fail("Too many decimal digits in format string");
      }
    }
  };
  digits(b.width);
  if (i < spec.size() && (spec[i] == ',' || spec[i] == '_')) b.grouping = spec[i++];
  if (i < spec.size() && spec[i] == '.') {
    ++i;
    b.precision = -2;
    digits(b.precision);
    if (b.precision == -2) fail("Format specifier missing precision");
  }
  if (i < spec.size()) b.type = spec[i++];
  if (i < spec.size()) fail("Invalid format specifier");
  return b;
}

// digits with `sep` every `interval` from the right; with min_width > 0 (zero padding, '0'
// fill with '=' alignment) leading zeros are added, grouped too, until the text is that wide and
// does not start with a separator (Python: format(1234, '08,') == '0,001,234').
std::string group_digits(const std::string& d, char sep, int interval, int64_t min_width) {
  std::string rev;
  size_t next = d.size();
  int in_group = 0;
  while (next > 0 || static_cast<int64_t>(rev.size()) < min_width ||
         (!rev.empty() && rev.back() == sep)) {
    if (in_group == interval) {
      rev += sep, in_group = 0;
      continue;
    }
    rev += next > 0 ? d[--next] : '0';
    ++in_group;
  }
  return std::string(rev.rbegin(), rev.rend());
}

// sign + prefix + body aligned in the width; '=' pads between the prefix and the body
std::string align_in(const BraceSpec& b, char default_align, const std::string& sign_prefix,
                     const std::string& body) {
  const char align = b.align ? b.align : b.zero && default_align == '>' ? '=' : default_align;
  return aligned(b.fill, align, b.width, sign_prefix, body);
}

// Python's float format with a precision and no type (x >= 0, finite): p significant digits,
// scientific from exponent p - 1 on (not p, as 'g'), at least one digit after the point in
// fixed notation, trailing zeros dropped unless `alt`.
std::string general_with_dot(double x, int p, bool alt) {
  const int digits = std::max(p, 1);
  char spec[16];
  std::snprintf(spec, sizeof(spec), "%%.%de", digits - 1);
  const std::string sci = printf_double(spec, x);
  const int exponent = std::atoi(sci.c_str() + sci.find('e') + 1);
  if (exponent >= -4 && exponent < digits - 1) {
    std::snprintf(spec, sizeof(spec), "%%.%df", digits - 1 - exponent);
    std::string body = printf_double(spec, x);
    if (body.find('.') == std::string::npos) body += ".0";
    if (!alt) {
      while (body.back() == '0' && body[body.size() - 2] != '.') body.pop_back();
    }
    return body;
  }
  const size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  if (!alt && mantissa.find('.') != std::string::npos) {
    while (mantissa.back() == '0') mantissa.pop_back();
    if (mantissa.back() == '.') mantissa.pop_back();
  } else if (alt && mantissa.find('.') == std::string::npos) {
    mantissa += '.';
  }
  return mantissa + sci.substr(e);
}

// Whether a number's padding is zeros between the sign and the digits, which grouping spans.
bool zero_grouped(const BraceSpec& b) {
  return b.fill == "0" && (b.align == '=' || (!b.align && b.zero));
}

std::string format_float_spec(const BraceSpec& b, double x, const std::string& type_name) {
  char type = b.type;
  if (type && !std::strchr("eEfFgGn%", type))
    fail(std::string("Unknown format code '") + type + "' for object of type '" + type_name + "'");
  const bool percent = type == '%';
  if (percent) x *= 100, type = 'f';
  if (type == 'n') type = 'g';
  std::string body;
  if (!type && b.precision >= 0 && std::isfinite(x)) {
    body = general_with_dot(std::fabs(x), static_cast<int>(b.precision), b.alt);
  } else if (!type) {
    body = python_float_repr(std::fabs(x));
    // '#': the shortest repr keeps its decimal point (1e-07 -> 1.e-07)
    if (b.alt && std::isfinite(x) && body.find('.') == std::string::npos) {
      const size_t e = body.find('e');
      body.insert(e == std::string::npos ? body.size() : e, ".");
    }
  } else if (!std::isfinite(x)) {
    body = nonfinite_text(x, type);
  } else {
    char spec[16];
    std::snprintf(spec, sizeof(spec), "%%%s.%d%c", b.alt ? "#" : "",
                  static_cast<int>(b.precision < 0 ? 6 : b.precision), type);
    body = printf_double(spec, std::fabs(x));
  }
  if (percent) body += '%';
  const std::string sign = sign_text(std::signbit(x) && !std::isnan(x), b.sign);
  if (b.grouping && !std::isnan(x) && !std::isinf(x)) {
    size_t end = 0;
    while (end < body.size() && body[end] >= '0' && body[end] <= '9') ++end;
    const std::string rest = body.substr(end);
    body = group_digits(
               body.substr(0, end), b.grouping, 3,
               zero_grouped(b) ? b.width - static_cast<int64_t>(sign.size() + rest.size()) : 0) +
           rest;
  }
  return align_in(b, '>', sign, body);
}

std::string format_int_spec(const BraceSpec& b, int64_t x, const std::string& type_name) {
  const char t = b.type;
  if (t == 'e' || t == 'E' || t == 'f' || t == 'F' || t == 'g' || t == 'G' || t == '%')
    return format_float_spec(b, static_cast<double>(x), type_name);
  if (b.precision >= 0) fail("Precision not allowed in integer format specifier");
  if (t == 'c') return align_in(b, '>', "", code_point_text(x));
  int base = 10;
  const char* prefix = "";
  if (t == 'b')
    base = 2, prefix = "0b";
  else if (t == 'o')
    base = 8, prefix = "0o";
  else if (t == 'x')
    base = 16, prefix = "0x";
  else if (t == 'X')
    base = 16, prefix = "0X";
  else if (t != 0 && t != 'd' && t != 'n')
    fail(std::string("Unknown format code '") + t + "' for object of type '" + type_name + "'");
  const bool negative = x < 0;
  std::string body = magnitude_digits(x, base, t == 'X');
  const std::string sign = sign_text(negative, b.sign) + (b.alt ? prefix : "");
  if (b.grouping)
    body = group_digits(body, b.grouping, base == 10 ? 3 : 4,
                        zero_grouped(b) ? b.width - static_cast<int64_t>(sign.size()) : 0);
  return align_in(b, '>', sign, body);
}

// format(value, spec)
std::string format_value(const Value& v, std::string_view spec) {
  if (v.kind != Value::Kind::data || v.data.is_null() || v.data.is_array() || v.data.is_object() ||
      (v.data.is_boolean() && spec.empty())) {
    if (!spec.empty())
      fail("unsupported format string passed to " + python_type(v) + ".__format__");
    return to_python_str(v);
  }
  const BraceSpec b = parse_brace_spec(spec);
  const char shown_type = b.type ? b.type : v.is_string() ? 's' : 0;
  if (b.grouping && (shown_type == 's' || shown_type == 'n' || shown_type == 'c' ||
                     (b.grouping == ',' && std::strchr("bxXo", shown_type) && shown_type)))
    fail(std::string("Cannot specify '") + b.grouping + "' with '" + shown_type + "'.");
  if (is_int(v) && b.type == 'c' && b.sign_given)
    fail("Sign not allowed with integer format specifier 'c'");
  if (is_int(v) && b.type == 'c' && b.alt)
    fail("Alternate form (#) not allowed with integer format specifier 'c'");
  if (v.is_string()) {
    if (b.type && b.type != 's')
      fail(std::string("Unknown format code '") + b.type + "' for object of type 'str'");
    if (b.sign_given) fail("Sign not allowed in string format specifier");
    if (b.alt) fail("Alternate form (#) not allowed in string format specifier");
    if (b.align == '=') fail("'=' alignment not allowed in string format specifier");
    return align_in(b, '<', "", first_chars(v.data.get<std::string>(), b.precision));
  }
  if (is_int(v)) return format_int_spec(b, int_of(v), python_type(v));
  return format_float_spec(b, v.data.get<double>(), "float");
}

}  // namespace

std::string brace_format(std::string_view fmt, const std::vector<Value>& args,
                         const std::map<std::string, Value>& kwargs) {
  std::string out;
  int auto_index = 0;  // -1 once a field has named its index
  bool manual = false;
  // The value of a field name: arg_name then .attr / [key] lookups.
  const auto lookup = [&](std::string_view name) -> Value {
    size_t i = 0;
    while (i < name.size() && name[i] != '.' && name[i] != '[') ++i;
    const std::string_view first = name.substr(0, i);
    Value v;
    if (first.empty() ||
        std::all_of(first.begin(), first.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      size_t index = 0;
      // (one message both ways, as string.Formatter, which jinja2's sandbox formats with, says it)
      if (first.empty()) {
        if (manual)
          fail("cannot switch from manual field specification to automatic field numbering");
        index = static_cast<size_t>(auto_index++);
      } else {
        if (auto_index > 0)
          fail("cannot switch from manual field specification to automatic field numbering");
        manual = true;
        if (first.size() > 6) fail("Too many decimal digits in format string");
        index = static_cast<size_t>(std::stoul(std::string(first)));
      }
      if (index >= args.size())
        fail("tuple index out of range");  // Python 3.11's words (3.12: "Replacement index ...")
      v = args[index];
    } else {
      const auto it = kwargs.find(std::string(first));
      if (it == kwargs.end()) fail("'" + std::string(first) + "'");
      v = it->second;
    }
    while (i < name.size()) {
      std::string key;
      bool item = name[i] == '[';
      ++i;
      if (item) {
        const size_t close = name.find(']', i);
        if (close == std::string_view::npos) fail("Missing ']' in format string");
        key = std::string(name.substr(i, close - i));
        i = close + 1;
      } else {
        const size_t start = i;
        while (i < name.size() && name[i] != '.' && name[i] != '[') ++i;
        key = std::string(name.substr(start, i - start));
        if (key.empty()) fail("Empty attribute in format string");
      }
      if (v.kind == Value::Kind::data && v.data.is_object() && v.data.contains(key)) {
        v = Value::of(v.data[key]);
      } else if (item && v.kind == Value::Kind::data && v.data.is_array() && !key.empty() &&
                 std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                 key.size() < 10 && std::stoul(key) < v.data.size()) {
        v = Value::of(v.data[std::stoul(key)]);
      } else {  // a missing attribute or item is jinja2's Undefined (the sandbox's lookups)
        v = Value::undefined();
      }
    }
    return v;
  };
  // One replacement field's text (between its braces), its spec's nested fields replaced first.
  const auto field = [&](std::string_view inside, auto& self) -> std::string {
    size_t i = 0;
    int depth = 0;
    while (i < inside.size() && !(depth == 0 && (inside[i] == '!' || inside[i] == ':'))) {
      if (inside[i] == '[') ++depth;
      if (inside[i] == ']') --depth;
      ++i;
    }
    Value v = lookup(inside.substr(0, i));
    if (i < inside.size() && inside[i] == '!') {
      if (i + 1 >= inside.size()) fail("end of string while looking for conversion specifier");
      const char c = inside[i + 1];
      if (c == 'r' || c == 'a')
        v = Value::of(v.kind == Value::Kind::data ? to_python_repr(v.data) : to_python_str(v));
      else if (c == 's')
        v = Value::of(to_python_str(v));
      else
        fail(std::string("Unknown conversion specifier ") + c);
      i += 2;
      if (i < inside.size() && inside[i] != ':') fail("expected ':' after conversion specifier");
    }
    std::string spec;
    if (i < inside.size()) {  // ':' spec, which may hold {fields}
      const std::string_view raw = inside.substr(i + 1);
      for (size_t k = 0; k < raw.size(); ++k) {
        if (raw[k] != '{') {
          spec += raw[k];
          continue;
        }
        const size_t close = raw.find('}', k);
        if (close == std::string_view::npos) fail("unmatched '{' in format spec");
        spec += self(raw.substr(k + 1, close - k - 1), self);
        k = close;
      }
    }
    return format_value(v, spec);
  };
  size_t i = 0;
  while (i < fmt.size()) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}', i += 2;
        continue;
      }
      fail("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c, ++i;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{', i += 2;
      continue;
    }
    // the field runs to its matching '}' (a spec may nest one level of {})
    size_t k = i + 1;
    int depth = 1;
    while (k < fmt.size() && depth > 0) {
      if (fmt[k] == '{') ++depth;
      if (fmt[k] == '}') --depth;
      ++k;
    }
    if (depth > 0) fail("expected '}' before end of string");
    out += field(fmt.substr(i + 1, k - i - 2), field);
    i = k;
  }
  return out;
}

}  // namespace oxi::jinja
