#include "lib/chat/python_format.h"

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

struct Spec {
  bool alt = false, zero = false, left = false, plus = false, space = false;
  int64_t width = -1, precision = -1;
  char type = 's';
};

// sign + body padded to the width: spaces on the left, on the right with '-', or zeros between
// the sign (and prefix) and the digits with '0' (numbers only).
std::string pad(const Spec& s, std::string_view sign, std::string_view body, bool numeric) {
  const int64_t len =
      static_cast<int64_t>(py::length(sign)) + static_cast<int64_t>(py::length(body));
  const int64_t fill = s.width > len ? s.width - len : 0;
  std::string out;
  if (s.left) {
    out.append(sign).append(body).append(static_cast<size_t>(fill), ' ');
  } else if (s.zero && numeric) {
    out.append(sign).append(static_cast<size_t>(fill), '0').append(body);
  } else {
    out.append(static_cast<size_t>(fill), ' ').append(sign).append(body);
  }
  return out;
}

std::string sign_of(bool negative, const Spec& s) {
  return negative ? "-" : s.plus ? "+" : s.space ? " " : "";
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
  uint64_t magnitude = negative ? uint64_t{0} - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
  const int base = (t == 'x' || t == 'X') ? 16 : t == 'o' ? 8 : 10;
  const char* digits = t == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string body;
  do {
    body.insert(body.begin(), digits[magnitude % static_cast<uint64_t>(base)]);
    magnitude /= static_cast<uint64_t>(base);
  } while (magnitude);
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
  const bool upper = s.type == 'E' || s.type == 'F' || s.type == 'G';
  std::string body;
  if (std::isnan(x) || std::isinf(x)) {
    body = std::isnan(x) ? "nan" : "inf";
    if (upper) body = body == "nan" ? "NAN" : "INF";
    // Python zero-pads inf and nan like numbers
    return pad(s, sign_of(!std::isnan(x) && x < 0, s), body, true);
  }
  const int precision = static_cast<int>(s.precision < 0 ? 6 : s.precision);
  char spec[16];
  std::snprintf(spec, sizeof(spec), "%%%s.%d%c", s.alt ? "#" : "", precision, s.type);
  std::string buf(static_cast<size_t>(std::snprintf(nullptr, 0, spec, std::fabs(x))), '\0');
  std::snprintf(buf.data(), buf.size() + 1, spec, std::fabs(x));
  return pad(s, sign_of(std::signbit(x), s), buf, true);
}

std::string format_char(const Spec& s, const Value& v) {
  std::string c;
  if (is_int(v)) {
    const int64_t cp = int_of(v);
    if (cp < 0 || cp > 0x10FFFF) fail("%c arg not in range(0x110000)");
    tokenizer::append_utf8(c, static_cast<char32_t>(cp));
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
  if (s.precision >= 0 && static_cast<int64_t>(py::length(text)) > s.precision) {
    std::string cut;
    for (std::string_view ch : py::chars(text)) {
      if (static_cast<int64_t>(py::length(cut)) == s.precision) break;
      cut += ch;
    }
    text = std::move(cut);
  }
  return pad(s, "", text, false);
}

}  // namespace

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
