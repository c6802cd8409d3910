// Python's value rules the template interpreter follows (jinja_renderer.h): type names,
// ints and bools as numbers, divmod, round, slices and `%` formatting.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "lib/chat/jinja_renderer.h"
#include "lib/chat/python_format.h"
#include "lib/chat/python_str.h"

namespace oxi::jinja {

std::string type_name(const Value& v) {
  if (v.is_undefined()) return "undefined";
  if (v.kind == Value::Kind::ns) return "namespace";
  if (v.kind == Value::Kind::macro) return "macro";
  if (v.kind == Value::Kind::builtin) return "function";
  if (v.is_none()) return "none";
  return python_type(v);  // data: Python's names
}

bool is_int(const Json& j) {
  return j.is_number_integer() || j.is_number_unsigned();
}

bool is_int_like(const Json& j) {
  return is_int(j) || j.is_boolean();
}

bool is_number_like(const Json& j) {
  return j.is_number() || j.is_boolean();
}

int64_t int_value(const Json& j) {
  return j.is_boolean() ? int64_t{j.get<bool>()} : j.get<int64_t>();
}

double float_value(const Json& j) {
  return j.is_boolean() ? double(j.get<bool>()) : j.get<double>();
}

int64_t int_arg(const Value* v, int64_t dflt, const char* what, int line) {
  if (!v || v->is_undefined() || v->is_none()) return dflt;
  if (v->kind != Value::Kind::data || !is_int_like(v->data))
    eval_error(line, std::string(what) + " must be an integer, got " + type_name(*v));
  return int_value(v->data);
}

std::string percent_format_or_error(const std::string& text, const std::vector<Value>& items,
                                    const Json* mapping, int line) {
  try {
    return percent_format(text, items, mapping);
  } catch (const PercentFormatError& err) {
    eval_error(line, std::string("string formatting: ") + err.what());
  }
}

std::pair<int64_t, int64_t> python_int_divmod(int64_t x, int64_t y) {
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
  return {q, x - q * y};
}

Value fold_case_key(Value key, bool case_sensitive) {
  if (case_sensitive || !key.is_string()) return key;
  return Value::of(py::lower(key.data.get_ref<const std::string&>()));
}

std::pair<double, double> python_float_divmod(double x, double y) {
  double mod = std::fmod(x, y);
  double div = (x - mod) / y;
  if (mod != 0) {
    if ((y < 0) != (mod < 0)) {
      mod += y;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, y);
  }
  double floordiv;
  if (div != 0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, x / y);
  }
  return {floordiv, mod};
}

Value python_round(const Json& x, int64_t digits) {
  if (is_int_like(x)) {
    const int64_t v = int_value(x);
    if (digits >= 0 || digits < -18) return Value::of(digits >= 0 ? v : int64_t{0});
    int64_t unit = 1;
    for (int64_t i = 0; i < -digits; ++i) unit *= 10;
    int64_t q = v / unit, r = v % unit;
    if (r < 0) {
      --q;
      r += unit;
    }
    if (2 * r > unit || (2 * r == unit && q % 2 != 0)) ++q;
    return Value::of(q * unit);
  }
  const double v = float_value(x);
  if (!std::isfinite(v) || digits > 300) return Value::of(v);
  if (digits < 0) {
    const double unit = std::pow(10.0, static_cast<double>(-digits));
    return Value::of(std::nearbyint(v / unit) * unit);
  }
  char text[400];
  std::snprintf(text, sizeof text, "%.*f", static_cast<int>(digits), v);
  return Value::of(std::strtod(text, nullptr));
}

Json slice_json(const Json& seq, const Value* start, const Value* stop, const Value* step_v,
                int line) {
  const std::vector<std::string_view> chars = seq.is_string()
                                                  ? py::chars(seq.get_ref<const std::string&>())
                                                  : std::vector<std::string_view>();
  const int64_t n =
      seq.is_string() ? static_cast<int64_t>(chars.size()) : static_cast<int64_t>(seq.size());
  int64_t step = 1;
  step = int_arg(step_v, 1, "a slice step", line);
  if (step == 0) eval_error(line, "slice step cannot be zero");
  auto norm = [&](const Value* v, int64_t dflt, bool is_start) -> int64_t {
    if (!v || v->is_undefined() || v->is_none()) return dflt;
    int64_t i = int_arg(v, dflt, "a slice index", line);
    if (i < 0) i += n;
    if (step > 0) return std::clamp<int64_t>(i, 0, n);
    (void)is_start;
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t b = norm(start, step > 0 ? 0 : n - 1, true);
  const int64_t e = norm(stop, step > 0 ? n : -1, false);
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = b; step > 0 ? i < e : i > e; i += step) out += chars[static_cast<size_t>(i)];
    return out;
  }
  Json out = Json::array();
  for (int64_t i = b; step > 0 ? i < e : i > e; i += step)
    out.push_back(seq[static_cast<size_t>(i)]);
  return out;
}

}  // namespace oxi::jinja
