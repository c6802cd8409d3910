// Evaluates the syntax tree of jinja_parser.cpp. Semantics follow jinja2 as transformers
// configures it: Python truthiness and str(), undefined values that render as "", loops that
// scope their variables, namespaces shared by reference.
#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <optional>
#include <vector>

#include "lib/chat/jinja.h"
#include "lib/chat/jinja_parser.h"
#include "lib/chat/jinja_text_filters.h"
#include "lib/chat/python_format.h"
#include "lib/chat/python_str.h"
#include "lib/core/error.h"

namespace oxi::jinja {
namespace {

[[noreturn]] void eval_error(int line, const std::string& message) {
  throw Error("chat template", "line " + std::to_string(line) + ": " + message);
}

enum class Flow { normal, break_, continue_ };

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

// Python's bool is an int: True == 1, True + 1 == 2, -True == -1, False < 1.
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
// An argument that must be an int (a bool counts): its value, `dflt` when absent or none.
int64_t int_arg(const Value* v, int64_t dflt, const char* what, int line) {
  if (!v || v->is_undefined() || v->is_none()) return dflt;
  if (v->kind != Value::Kind::data || !is_int_like(v->data))
    eval_error(line, std::string(what) + " must be an integer, got " + type_name(*v));
  return int_value(v->data);
}

// text % items (python_format.h), Python's error as the template's.
std::string percent_format_or_error(const std::string& text, const std::vector<Value>& items,
                                    const Json* mapping, int line) {
  try {
    return percent_format(text, items, mapping);
  } catch (const PercentFormatError& err) {
    eval_error(line, std::string("string formatting: ") + err.what());
  }
}

// Python's divmod of ints (y != 0): the quotient floored toward negative infinity, the
// remainder with the divisor's sign.
std::pair<int64_t, int64_t> python_int_divmod(int64_t x, int64_t y) {
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
  return {q, x - q * y};
}

// A key that sort, min, max, unique and dictsort compare: a string lowercased unless
// case_sensitive (jinja2's ignore_case).
Value fold_case_key(Value key, bool case_sensitive) {
  if (case_sensitive || !key.is_string()) return key;
  return Value::of(py::lower(key.data.get_ref<const std::string&>()));
}

// Python's divmod of floats (CPython's float_divmod): the remainder has the divisor's sign (a
// zero one too), the quotient is floored and corrected where fmod's remainder is exact.
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

// Python's round(x, digits): ints stay ints (rounded to tens for digits < 0), floats round to
// the nearest decimal of the exact binary value, ties to even (printf does the same).
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

// Python sequence index normalisation for slices.
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

// Templates come from model files, so what one render may do is bounded: a hostile or broken
// template fails with an error instead of running out of memory, stack or time. Real chat
// templates stay far below (a conversation of thousands of messages takes a few passes).
constexpr size_t kMaxText = size_t{64} << 20;  // bytes of any string or of the output
constexpr int64_t kMaxSteps = 1'000'000;       // loop iterations and macro calls, all told
constexpr int kMaxMacroDepth = 100;
constexpr int64_t kMaxRange = 100'000;  // jinja2's sandbox (MAX_RANGE) refuses larger ranges

class Renderer {
 public:
  explicit Renderer(const Json& context) {
    scopes_.emplace_back();
    for (auto it = context.begin(); it != context.end(); ++it) {
      scopes_.back()[it.key()] = Value::of(it.value());
    }
  }
  // A namespace may hold itself (set ns.me = ns): emptying every namespace of the render frees
  // such cycles, which reference counts alone would keep. None outlives the render.
  ~Renderer() {
    for (const auto& ns : namespaces_) ns->clear();
  }
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  Flow exec_body(const Body& body, std::string& out) {
    for (const StmtPtr& s : body) {
      const Flow f = exec(*s, out);
      check_size(out.size(), s->line);
      if (f != Flow::normal) return f;
    }
    return Flow::normal;
  }

 private:
  // ---- variables ----
  // Variables, then the environment's global functions (a variable of the same name hides one).
  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return f->second;
    }
    static const std::array<std::string_view, 5> kBuiltins = {"raise_exception", "strftime_now",
                                                              "namespace", "range", "dict"};
    if (std::find(kBuiltins.begin(), kBuiltins.end(), name) != kBuiltins.end()) {
      Value fn;
      fn.kind = Value::Kind::builtin;
      fn.builtin = name;
      return fn;
    }
    return Value::undefined();
  }
  void assign(const std::string& name, Value v) { scopes_.back()[name] = std::move(v); }

  // ---- statements ----
  Flow exec(const Stmt& s, std::string& out) {
    switch (s.kind) {
      case Stmt::Kind::text:
        out += s.text;
        return Flow::normal;
      case Stmt::Kind::output:
        out += to_python_str(eval(*s.expr));
        return Flow::normal;
      case Stmt::Kind::if_:
        for (size_t i = 0; i < s.conditions.size(); ++i) {
          if (eval(*s.conditions[i]).truthy()) return exec_body(s.branches[i], out);
        }
        if (s.branches.size() > s.conditions.size()) return exec_body(s.branches.back(), out);
        return Flow::normal;
      case Stmt::Kind::for_:
        exec_for(s, out);
        return Flow::normal;
      case Stmt::Kind::set: {
        Value v = eval(*s.expr);
        set_target(s, std::move(v));
        return Flow::normal;
      }
      case Stmt::Kind::set_block: {
        std::string captured;
        exec_body(s.body, captured);
        set_target(s, Value::of(captured));
        return Flow::normal;
      }
      case Stmt::Kind::filter_block: {
        std::string captured;
        exec_body(s.body, captured);
        scopes_.emplace_back();
        assign(kFilterBody, Value::of(std::move(captured)));
        const Value filtered = eval(*s.expr);
        scopes_.pop_back();
        out += to_python_str(filtered);
        return Flow::normal;
      }
      case Stmt::Kind::break_:
        return Flow::break_;
      case Stmt::Kind::continue_:
        return Flow::continue_;
      case Stmt::Kind::macro: {
        Value m;
        m.kind = Value::Kind::macro;
        m.macro = &s;
        assign(s.targets[0], m);
        return Flow::normal;
      }
      case Stmt::Kind::call_block: {
        Value caller;
        caller.kind = Value::Kind::macro;
        caller.macro = &s;
        caller.scope_depth = scopes_.size();
        scopes_.emplace_back();
        assign("caller", std::move(caller));
        out += to_python_str(eval(*s.expr));
        scopes_.pop_back();
        return Flow::normal;
      }
      case Stmt::Kind::with: {
        // every value from the enclosing scope (b = a reads the outer a, as in jinja2)
        std::vector<Value> values;
        for (const ExprPtr& v : s.defaults) values.push_back(eval(*v));
        scopes_.emplace_back();
        for (size_t i = 0; i < values.size(); ++i) assign(s.params[i], std::move(values[i]));
        const Flow f = exec_body(s.body, out);
        scopes_.pop_back();
        return f;
      }
    }
    return Flow::normal;
  }

  void set_target(const Stmt& s, Value v) {
    if (s.unpack) {  // set a, b = pair
      const std::vector<Value> items = iterate(v, s.line);
      if (items.size() != s.targets.size())
        eval_error(s.line, "cannot unpack " + std::to_string(items.size()) + " values into " +
                               std::to_string(s.targets.size()) + " names");
      for (size_t i = 0; i < items.size(); ++i) assign(s.targets[i], items[i]);
      return;
    }
    if (s.targets.size() == 1) {
      assign(s.targets[0], std::move(v));
      return;
    }
    Value obj = lookup(s.targets[0]);
    if (obj.kind != Value::Kind::ns) {
      eval_error(s.line, "cannot assign attribute '" + s.targets[1] + "' of " + type_name(obj) +
                             " (only namespace() objects)");
    }
    (*obj.ns)[s.targets[1]] = std::move(v);
  }

  std::vector<Value> iterate(const Value& v, int line) {
    std::vector<Value> items;
    if (v.is_undefined()) return items;  // jinja2 iterates an undefined as empty
    if (v.kind != Value::Kind::data) eval_error(line, "cannot iterate over " + type_name(v));
    const Json& j = v.data;
    if (j.is_array()) {
      for (const Json& e : j) {
        items.push_back(Value::of(e));
        if (v.tuple == Value::Tuple::groups) items.back().tuple = Value::Tuple::group;
      }
    } else if (j.is_object()) {
      for (auto it = j.begin(); it != j.end(); ++it) items.push_back(Value::of(it.key()));
    } else if (j.is_string()) {
      for (std::string_view c : py::chars(j.get_ref<const std::string&>()))
        items.push_back(Value::of(std::string(c)));
    } else {
      eval_error(line, "cannot iterate over " + type_name(v));
    }
    return items;
  }

  void bind_targets(const Stmt& s, const Value& item) {
    if (s.targets.size() == 1) {
      assign(s.targets[0], item);
      return;
    }
    if (item.kind != Value::Kind::data || !item.data.is_array() ||
        item.data.size() != s.targets.size()) {
      eval_error(s.line, "cannot unpack " + type_name(item) + " into " +
                             std::to_string(s.targets.size()) + " names");
    }
    for (size_t i = 0; i < s.targets.size(); ++i) assign(s.targets[i], Value::of(item.data[i]));
  }

  void exec_for(const Stmt& s, std::string& out) {
    std::vector<Value> all = iterate(eval(*s.expr), s.line);
    std::vector<Value> items;
    if (s.loop_filter) {
      // The filter sees the loop variables, evaluated in a scratch scope.
      for (Value& v : all) {
        scopes_.emplace_back();
        bind_targets(s, v);
        const bool keep = eval(*s.loop_filter).truthy();
        scopes_.pop_back();
        if (keep) items.push_back(std::move(v));
      }
    } else {
      items = std::move(all);
    }
    if (items.empty()) {
      exec_body(s.else_body, out);
      return;
    }
    const int64_t n = static_cast<int64_t>(items.size());
    loops_.emplace_back();
    for (int64_t i = 0; i < n; ++i) {
      step(s.line);
      scopes_.emplace_back();
      loops_.back().index0 = i;
      // depth: loops here are not recursive, so every one is at depth 1
      Json loop = {{"index", i + 1},         {"index0", i}, {"first", i == 0},
                   {"last", i == n - 1},     {"length", n}, {"revindex", n - i},
                   {"revindex0", n - i - 1}, {"depth", 1},  {"depth0", 0}};
      if (i > 0 && items[i - 1].kind == Value::Kind::data) loop["previtem"] = items[i - 1].data;
      if (i + 1 < n && items[i + 1].kind == Value::Kind::data) loop["nextitem"] = items[i + 1].data;
      assign("loop", Value::of(std::move(loop)));
      bind_targets(s, items[static_cast<size_t>(i)]);
      const Flow f = exec_body(s.body, out);
      scopes_.pop_back();
      if (f == Flow::break_) break;
    }
    loops_.pop_back();
  }

  // ---- expressions ----
  // The value of e, which an attribute or item is taken from: jinja2's Undefined raises there
  // (a missing key reads as undefined; a key of that does not).
  Value defined(const Expr& e) {
    Value v = eval(e);
    if (v.is_undefined()) {
      eval_error(e.line,
                 (e.kind == Expr::Kind::name ? "'" + e.name + "'" : std::string("a value")) +
                     " is undefined");
    }
    return v;
  }

  Value eval(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::literal:
        return Value::of(e.value);
      case Expr::Kind::name:
        return lookup(e.name);
      case Expr::Kind::attr:
        return get_attr(defined(*e.a), e.name);
      case Expr::Kind::subscript:
        return get_item(defined(*e.a), eval(*e.args[0]), e.line);
      case Expr::Kind::slice: {
        Value seq = eval(*e.a);
        Value parts[3];
        for (int i = 0; i < 3; ++i) {
          if (e.args[static_cast<size_t>(i)]) parts[i] = eval(*e.args[static_cast<size_t>(i)]);
        }
        if (seq.kind != Value::Kind::data || !(seq.data.is_array() || seq.data.is_string())) {
          eval_error(e.line, "cannot slice " + type_name(seq));
        }
        return Value::of(slice_json(seq.data, &parts[0], &parts[1], &parts[2], e.line));
      }
      case Expr::Kind::call:
        return call(e);
      case Expr::Kind::filter:
        return apply_filter(e);
      case Expr::Kind::test: {
        const bool r = apply_test(e);
        return Value::of(e.negated ? !r : r);
      }
      case Expr::Kind::unary: {
        Value v = eval(*e.a);
        if (e.name == "not") return Value::of(!v.truthy());
        if (v.kind != Value::Kind::data || !is_number_like(v.data))
          eval_error(e.line, "bad operand for unary " + e.name);
        if (is_int_like(v.data))
          return Value::of(e.name == "+" ? int_value(v.data) : -int_value(v.data));
        return Value::of(e.name == "+" ? float_value(v.data) : -float_value(v.data));
      }
      case Expr::Kind::binary:
        return binary(e);
      case Expr::Kind::ternary:
        if (eval(*e.args[0]).truthy()) return eval(*e.args[1]);
        return e.args[2] ? eval(*e.args[2]) : Value::undefined();
      case Expr::Kind::list:
      case Expr::Kind::tuple: {
        Json arr = Json::array();
        for (const ExprPtr& a : e.args) arr.push_back(data_of(eval(*a), a->line));
        return Value::of(std::move(arr));
      }
      case Expr::Kind::dict: {
        Json obj = Json::object();
        for (size_t i = 0; i < e.keys.size(); ++i) {
          Value k = eval(*e.keys[i]);
          if (!k.is_string()) eval_error(e.line, "dict keys must be strings");
          obj[k.data.get<std::string>()] = data_of(eval(*e.args[i]), e.line);
        }
        return Value::of(std::move(obj));
      }
    }
    return Value::undefined();
  }

  // Undefined inside a container becomes None, as str() of an undefined in a list would fail
  // in jinja2 anyway; namespaces cannot be stored.
  static Json data_of(const Value& v, int line) {
    if (v.kind == Value::Kind::data) return v.data;
    if (v.is_undefined()) return nullptr;
    eval_error(line, "cannot store a " + type_name(v) + " in a container");
  }

  Value get_attr(const Value& obj, const std::string& name) {
    if (obj.tuple == Value::Tuple::group && (name == "grouper" || name == "list"))
      return Value::of(obj.data[name == "grouper" ? 0 : 1]);
    if (obj.kind == Value::Kind::ns) {
      auto it = obj.ns->find(name);
      return it == obj.ns->end() ? Value::undefined() : it->second;
    }
    if (obj.kind == Value::Kind::data && obj.data.is_object()) {
      auto it = obj.data.find(name);
      if (it != obj.data.end()) return Value::of(*it);
    }
    if (obj.kind == Value::Kind::data && obj.data.is_array() && !name.empty() &&
        std::isdigit(static_cast<unsigned char>(name[0]))) {
      const size_t i = std::stoul(name);
      if (i < obj.data.size()) return Value::of(obj.data[i]);
    }
    return Value::undefined();
  }

  Value get_item(const Value& obj, const Value& key, int line) {
    if (obj.kind == Value::Kind::ns && key.is_string())
      return get_attr(obj, key.data.get<std::string>());
    if (obj.kind != Value::Kind::data) return Value::undefined();
    const Json& j = obj.data;
    if (j.is_object() && key.is_string()) {
      auto it = j.find(key.data.get<std::string>());
      return it == j.end() ? Value::undefined() : Value::of(*it);
    }
    if ((j.is_array() || j.is_string()) && key.kind == Value::Kind::data && is_int_like(key.data)) {
      const std::vector<std::string_view> chars = j.is_string()
                                                      ? py::chars(j.get_ref<const std::string&>())
                                                      : std::vector<std::string_view>();
      const int64_t n =
          j.is_string() ? static_cast<int64_t>(chars.size()) : static_cast<int64_t>(j.size());
      int64_t i = int_value(key.data);
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::undefined();
      if (j.is_string()) return Value::of(std::string(chars[static_cast<size_t>(i)]));
      Value item = Value::of(j[static_cast<size_t>(i)]);
      if (obj.tuple == Value::Tuple::groups) item.tuple = Value::Tuple::group;
      return item;
    }
    (void)line;
    return Value::undefined();
  }

  // jinja2's make_attrgetter: x's attribute `attribute`, where "a.b.0" looks up a, then b,
  // then item 0 (parts of digits are indices) and an int is an index; `dflt` (when given)
  // replaces an undefined step. A step from an undefined value fails, as in jinja2.
  Value attribute_of(const Value& x, const Value& attribute, const Value* dflt, int line) {
    std::vector<Value> parts;
    if (attribute.is_string()) {
      for (const std::string& part :
           py::split(attribute.data.get_ref<const std::string&>(), &kDot, -1)) {
        const std::optional<int64_t> index = py::isdigit(part) ? py::parse_int(part) : std::nullopt;
        parts.push_back(index ? Value::of(*index) : Value::of(part));
      }
    } else if (!attribute.is_none()) {
      parts.push_back(attribute);
    }
    Value item = x;
    for (const Value& part : parts) {
      if (item.is_undefined()) eval_error(line, "an attribute of an undefined value");
      item = part.is_string() ? get_attr(item, part.data.get<std::string>())
                              : get_item(item, part, line);
      if (dflt && item.is_undefined()) item = *dflt;
    }
    return item;
  }
  static inline const std::string kDot = ".";

  static int compare_values(const Value& a, const Value& b, int line) {
    if (a.kind != Value::Kind::data || b.kind != Value::Kind::data)
      eval_error(line, "cannot order " + type_name(a));
    if (is_int_like(a.data) && is_int_like(b.data)) {
      const int64_t x = int_value(a.data), y = int_value(b.data);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    if (is_number_like(a.data) && is_number_like(b.data)) {
      const double x = float_value(a.data), y = float_value(b.data);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.data.is_string() && b.data.is_string()) {
      return a.data.get_ref<const std::string&>().compare(b.data.get_ref<const std::string&>());
    }
    if (a.data.is_array() && b.data.is_array()) {  // element by element, then by length
      for (size_t i = 0; i < a.data.size() && i < b.data.size(); ++i) {
        if (equal_values(Value::of(a.data[i]), Value::of(b.data[i]))) continue;
        return compare_values(Value::of(a.data[i]), Value::of(b.data[i]), line);
      }
      return a.data.size() < b.data.size() ? -1 : a.data.size() > b.data.size() ? 1 : 0;
    }
    eval_error(line, "cannot compare " + type_name(a) + " with " + type_name(b));
  }

  static bool equal_values(const Value& a, const Value& b) {
    if (a.kind != b.kind) return false;
    if (a.kind == Value::Kind::undefined) return true;
    if (a.kind == Value::Kind::ns) return a.ns == b.ns;
    if (a.kind == Value::Kind::macro) return a.macro == b.macro;
    if (a.kind == Value::Kind::builtin) return a.builtin == b.builtin;
    if (a.data.is_boolean() != b.data.is_boolean() && is_number_like(a.data) &&
        is_number_like(b.data)) {  // True == 1, False == 0.0
      return float_value(a.data) == float_value(b.data);
    }
    return a.data == b.data;
  }

  bool contains(const Value& hay, const Value& needle, int line) {
    if (hay.is_undefined()) return false;  // jinja2's Undefined iterates as empty
    if (hay.kind != Value::Kind::data) {
      if (hay.kind == Value::Kind::ns && needle.is_string())
        return hay.ns->count(needle.data.get<std::string>()) > 0;
      eval_error(line, "'in' needs a container, got " + type_name(hay));
    }
    const Json& h = hay.data;
    if (h.is_string()) {
      if (!needle.is_string()) eval_error(line, "'in <string>' needs a string");
      return h.get_ref<const std::string&>().find(needle.data.get_ref<const std::string&>()) !=
             std::string::npos;
    }
    if (h.is_object()) return needle.is_string() && h.contains(needle.data.get<std::string>());
    if (h.is_array()) {
      for (const Json& e : h) {
        if (equal_values(Value::of(e), needle)) return true;
      }
      return false;
    }
    eval_error(line, "'in' needs a container, got " + type_name(hay));
  }

  // seq * times (a str or a list repeated; none for times <= 0), bounded like any text.
  static Json repeat(const Json& seq, int64_t times, int line) {
    const size_t unit = seq.is_string() ? seq.get_ref<const std::string&>().size() : seq.size();
    if (times <= 0 || unit == 0) return seq.is_string() ? Json("") : Json::array();
    const size_t limit = seq.is_string() ? kMaxText : kMaxText / 64;
    if (static_cast<uint64_t>(times) > limit / unit) eval_error(line, "repetition too long");
    Json out = seq.is_string() ? Json("") : Json::array();
    for (int64_t i = 0; i < times; ++i) {
      if (seq.is_string())
        out.get_ref<std::string&>() += seq.get_ref<const std::string&>();
      else
        for (const Json& x : seq) out.push_back(x);
    }
    return out;
  }

  // Python's a ** b: an int for ints with b >= 0, else a float (no complex results).
  static Value power(const Json& a, const Json& b, int line) {
    if (is_int_like(a) && is_int_like(b) && int_value(b) >= 0) {
      int64_t base = int_value(a), e = int_value(b), out = 1;
      for (; e > 0; e >>= 1) {
        if (e & 1 && __builtin_mul_overflow(out, base, &out)) eval_error(line, "integer too large");
        if (e > 1 && __builtin_mul_overflow(base, base, &base))
          eval_error(line, "integer too large");
      }
      return Value::of(out);
    }
    const double x = float_value(a), y = float_value(b);
    if (x == 0 && y < 0) eval_error(line, "0.0 cannot be raised to a negative power");
    if (x < 0 && y != std::floor(y)) eval_error(line, "a negative number to a fractional power");
    return Value::of(std::pow(x, y));
  }

  Value binary(const Expr& e) {
    const std::string& op = e.name;
    if (op == "and") {
      Value l = eval(*e.a);
      return l.truthy() ? eval(*e.args[0]) : l;
    }
    if (op == "or") {
      Value l = eval(*e.a);
      return l.truthy() ? l : eval(*e.args[0]);
    }
    Value l = eval(*e.a);
    Value r = eval(*e.args[0]);
    if (op == "==") return Value::of(equal_values(l, r));
    if (op == "!=") return Value::of(!equal_values(l, r));
    if (op == "<") return Value::of(compare_values(l, r, e.line) < 0);
    if (op == ">") return Value::of(compare_values(l, r, e.line) > 0);
    if (op == "<=") return Value::of(compare_values(l, r, e.line) <= 0);
    if (op == ">=") return Value::of(compare_values(l, r, e.line) >= 0);
    if (op == "in") return Value::of(contains(r, l, e.line));
    if (op == "not in") return Value::of(!contains(r, l, e.line));
    // printf-style formatting (python_format.h). A tuple literal's items are the arguments; a
    // dict is the mapping of %(key)s (and the one argument of %s); anything else, a list too,
    // is the one argument. A text without conversions % a list is the text (Python takes a
    // list as a mapping there).
    if (op == "%" && l.is_string()) {
      const std::string& text = l.data.get_ref<const std::string&>();
      std::vector<Value> items;
      const Json* mapping = nullptr;
      if (e.args[0]->kind == Expr::Kind::tuple && r.kind == Value::Kind::data &&
          r.data.is_array()) {
        for (const Json& x : r.data) items.push_back(Value::of(x));
      } else {
        if (r.kind == Value::Kind::data && r.data.is_array() && text.find('%') == std::string::npos)
          return l;
        items.push_back(r);
        if (r.kind == Value::Kind::data && r.data.is_object()) mapping = &r.data;
      }
      return Value::of(percent_format_or_error(text, items, mapping, e.line));
    }
    if (op == "~") {
      std::string joined = to_python_str(l);
      const std::string right = to_python_str(r);
      check_size(joined.size() + right.size(), e.line);
      return Value::of(joined + right);
    }
    if (l.kind != Value::Kind::data || r.kind != Value::Kind::data) {
      eval_error(e.line, "unsupported operand types for " + op + ": " + type_name(l) + " and " +
                             type_name(r));
    }
    const Json& a = l.data;
    const Json& b = r.data;
    if (op == "+") {
      if (a.is_string() && b.is_string()) {
        check_size(a.get_ref<const std::string&>().size() + b.get_ref<const std::string&>().size(),
                   e.line);
        if (!l.markup && !r.markup) return Value::of(a.get<std::string>() + b.get<std::string>());
        const auto& x = a.get_ref<const std::string&>();
        const auto& y = b.get_ref<const std::string&>();
        Value joined = Value::of((l.markup ? x : html_escape(x)) + (r.markup ? y : html_escape(y)));
        joined.markup = true;
        return joined;
      }
      if (a.is_array() && b.is_array()) {
        if (a.size() + b.size() > kMaxText / 64) eval_error(e.line, "list too long");
        Json out = a;
        for (const Json& x : b) out.push_back(x);
        return Value::of(std::move(out));
      }
    }
    if (op == "*" && (a.is_string() || a.is_array() || b.is_string() || b.is_array())) {
      const bool seq_left = a.is_string() || a.is_array();
      const Json& seq = seq_left ? a : b;
      const Json& times_j = seq_left ? b : a;
      if (is_int_like(times_j)) return Value::of(repeat(seq, int_value(times_j), e.line));
    }
    if (is_number_like(a) && is_number_like(b)) {
      const bool ints = is_int_like(a) && is_int_like(b);
      if (op == "/") {
        if (float_value(b) == 0) eval_error(e.line, "division by zero");
        return Value::of(float_value(a) / float_value(b));
      }
      if (op == "**") return power(a, b, e.line);
      if (ints) {
        const int64_t x = int_value(a), y = int_value(b);
        if (op == "+") return Value::of(x + y);
        if (op == "-") return Value::of(x - y);
        if (op == "*") return Value::of(x * y);
        if (y == 0 && (op == "//" || op == "%")) eval_error(e.line, "division by zero");
        if (op == "//" || op == "%") {
          const auto [quotient, rest] = python_int_divmod(x, y);
          return Value::of(op == "//" ? quotient : rest);
        }
      } else {
        const double x = float_value(a), y = float_value(b);
        if (op == "+") return Value::of(x + y);
        if (op == "-") return Value::of(x - y);
        if (op == "*") return Value::of(x * y);
        if (y == 0 && (op == "//" || op == "%")) eval_error(e.line, "division by zero");
        if (op == "//" || op == "%") {
          const auto [quotient, rest] = python_float_divmod(x, y);
          return Value::of(op == "//" ? quotient : rest);
        }
      }
    }
    eval_error(e.line, "unsupported operand types for " + op + ": " + type_name(l) + " and " +
                           type_name(r));
  }

  // Arguments of a call/filter/test, positional then keyword.
  struct Args {
    std::vector<Value> pos;
    std::map<std::string, Value> kw;
    const Value* get(size_t i, const char* name) const {
      if (i < pos.size()) return &pos[i];
      auto it = kw.find(name);
      return it == kw.end() ? nullptr : &it->second;
    }
  };
  Args eval_args(const Expr& e, size_t skip = 0) {
    Args a;
    for (size_t i = skip; i < e.args.size(); ++i) a.pos.push_back(eval(*e.args[i]));
    for (size_t i = 0; i < e.kwnames.size(); ++i) a.kw[e.kwnames[i]] = eval(*e.kwargs[i]);
    return a;
  }
  static std::string str_arg(const Value* v, const std::string& dflt) {
    return v && v->is_string() ? v->data.get<std::string>() : dflt;
  }

  Value call(const Expr& e) {
    Args args = eval_args(e);
    // loop.cycle(a, b, ...): the argument of this iteration, in turn; loop.changed(a, ...):
    // whether the values differ from the last call's in this loop (true the first time).
    if (e.a->kind == Expr::Kind::attr && e.a->a->kind == Expr::Kind::name &&
        e.a->a->name == "loop" && !loops_.empty() &&
        (e.a->name == "cycle" || e.a->name == "changed")) {
      LoopFrame& frame = loops_.back();
      if (e.a->name == "cycle") {
        if (args.pos.empty()) eval_error(e.line, "loop.cycle() needs at least one value");
        return args.pos[static_cast<size_t>(frame.index0) % args.pos.size()];
      }
      Json values = Json::array();
      for (const Value& a : args.pos) values.push_back(data_of(a, e.line));
      const bool changed = !frame.changed_last || *frame.changed_last != values;
      frame.changed_last = std::move(values);
      return Value::of(changed);
    }
    if (e.a->kind == Expr::Kind::attr) {
      Value obj = defined(*e.a->a);
      return call_method(obj, e.a->name, args, e.line);
    }
    Value callee = eval(*e.a);
    if (callee.kind == Value::Kind::macro) return call_macro(callee, args);
    if (callee.kind != Value::Kind::builtin) {
      const std::string what = e.a->kind == Expr::Kind::name ? "'" + e.a->name + "'" : "value";
      eval_error(e.line, what + " is undefined or not callable");
    }
    const std::string& fn = callee.builtin;
    if (fn == "raise_exception") {
      throw Error("chat template",
                  args.pos.empty() ? std::string("raise_exception") : to_python_str(args.pos[0]));
    }
    if (fn == "namespace") {
      Value ns;
      ns.kind = Value::Kind::ns;
      ns.ns = std::make_shared<Namespace>();
      namespaces_.push_back(ns.ns);
      for (auto& [k, v] : args.kw) (*ns.ns)[k] = v;
      return ns;
    }
    if (fn == "range") {
      for (const Value& a : args.pos) {
        if (a.kind != Value::Kind::data || !is_int_like(a.data))
          eval_error(e.line, "range() takes integers, got " + type_name(a));
      }
      int64_t start = 0, stop = 0, step = 1;
      if (args.pos.size() == 1)
        stop = int_value(args.pos[0].data);
      else if (args.pos.size() >= 2) {
        start = int_value(args.pos[0].data);
        stop = int_value(args.pos[1].data);
        if (args.pos.size() >= 3) step = int_value(args.pos[2].data);
      }
      if (step == 0) eval_error(e.line, "range() step cannot be zero");
      const double count =
          (static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step);
      if (count > static_cast<double>(kMaxRange))
        eval_error(e.line, "range too big (more than " + std::to_string(kMaxRange) + ")");
      Json out = Json::array();
      for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(i);
      return Value::of(std::move(out));
    }
    if (fn == "dict") {
      Json obj = Json::object();
      for (auto& [k, v] : args.kw) obj[k] = data_of(v, e.line);
      return Value::of(std::move(obj));
    }
    if (fn == "strftime_now") {
      const std::time_t t = std::time(nullptr);
      std::tm tm{};
      localtime_r(&t, &tm);
      char buf[256];
      const std::string fmt = str_arg(args.get(0, "format"), "%Y-%m-%d");
      const size_t n = std::strftime(buf, sizeof(buf), fmt.c_str(), &tm);
      return Value::of(std::string(buf, n));
    }
    eval_error(e.line, "'" + fn + "' is not callable");
  }

  Value call_macro(const Value& callee, const Args& args) {
    const Stmt& m = *callee.macro;
    step(m.line);
    if (macro_depth_ >= kMaxMacroDepth)
      eval_error(m.line,
                 "macro calls nested more than " + std::to_string(kMaxMacroDepth) + " deep");
    ++macro_depth_;
    // A {% call %} body sees its call site's variables, not those of the macro calling it.
    std::vector<std::map<std::string, Value>> hidden;
    if (callee.scope_depth > 0 && callee.scope_depth < scopes_.size()) {
      const auto first_hidden = scopes_.begin() + static_cast<ptrdiff_t>(callee.scope_depth);
      hidden.assign(std::make_move_iterator(first_hidden), std::make_move_iterator(scopes_.end()));
      scopes_.erase(first_hidden, scopes_.end());
    }
    scopes_.emplace_back();
    for (size_t i = 0; i < m.params.size(); ++i) {
      const Value* v = args.get(i, m.params[i].c_str());
      if (v)
        assign(m.params[i], *v);
      else if (m.defaults[i])
        assign(m.params[i], eval(*m.defaults[i]));
      else
        assign(m.params[i], Value::undefined());
    }
    // what no parameter takes: the extra positional arguments as varargs, the other keyword
    // arguments as kwargs (jinja2 refuses them when the body does not use these names; here
    // they are always there)
    Json varargs = Json::array(), kwargs = Json::object();
    for (size_t i = m.params.size(); i < args.pos.size(); ++i)
      varargs.push_back(data_of(args.pos[i], m.line));
    for (const auto& [name, value] : args.kw) {
      if (std::find(m.params.begin(), m.params.end(), name) == m.params.end())
        kwargs[name] = data_of(value, m.line);
    }
    assign("varargs", Value::of(std::move(varargs)));
    assign("kwargs", Value::of(std::move(kwargs)));
    std::string out;
    exec_body(m.body, out);
    scopes_.pop_back();
    std::move(hidden.begin(), hidden.end(), std::back_inserter(scopes_));
    --macro_depth_;
    return Value::of(out);
  }

  Value call_method(const Value& obj, const std::string& name, const Args& args, int line) {
    if (obj.kind == Value::Kind::data && obj.data.is_string()) {
      const std::string& s = obj.data.get_ref<const std::string&>();
      const Value* a0 = args.get(0, "chars");
      std::string chars_storage;
      const std::string* chars = nullptr;
      if (a0 && a0->is_string()) {
        chars_storage = a0->data.get<std::string>();
        chars = &chars_storage;
      }
      if (name == "strip") return Value::of(py::strip(s, chars, true, true));
      if (name == "lstrip") return Value::of(py::strip(s, chars, true, false));
      if (name == "rstrip") return Value::of(py::strip(s, chars, false, true));
      if (name == "upper") return Value::of(py::upper(s));
      if (name == "lower") return Value::of(py::lower(s));
      if (name == "title") return Value::of(py::title(s));
      if (name == "capitalize") return Value::of(py::capitalize(s));
      if (name == "islower") return Value::of(py::islower(s));
      if (name == "isupper") return Value::of(py::isupper(s));
      if (name == "isalpha") return Value::of(py::isalpha(s));
      if (name == "isdigit") return Value::of(py::isdigit(s));
      if (name == "isnumeric") return Value::of(py::isnumeric(s));
      if (name == "isalnum") return Value::of(py::isalnum(s));
      if (name == "isspace") return Value::of(py::isspace(s));
      if (name == "splitlines") {
        Json out = Json::array();
        for (std::string& line : py::splitlines(s)) out.push_back(std::move(line));
        return Value::of(std::move(out));
      }
      if (name == "format") {
        try {
          return Value::of(brace_format(s, args.pos, args.kw));
        } catch (const PercentFormatError& err) {
          eval_error(line, std::string("str.format: ") + err.what());
        }
      }
      if (name == "startswith" || name == "endswith") {
        auto matches = [&](const std::string& p) {
          if (p.size() > s.size()) return false;
          return name == "startswith" ? s.compare(0, p.size(), p) == 0
                                      : s.compare(s.size() - p.size(), p.size(), p) == 0;
        };
        if (!a0) eval_error(line, name + "() needs an argument");
        if (a0->is_string()) return Value::of(matches(a0->data.get<std::string>()));
        if (a0->kind == Value::Kind::data && a0->data.is_array()) {
          for (const Json& p : a0->data) {
            if (p.is_string() && matches(p.get<std::string>())) return Value::of(true);
          }
          return Value::of(false);
        }
        eval_error(line, name + "() needs a string or tuple");
      }
      if (name == "split" || name == "rsplit") {
        const Value* sep = args.get(0, "sep");
        const Value* maxs = args.get(1, "maxsplit");
        std::string sep_s;
        const std::string* sep_p = nullptr;
        if (sep && sep->is_string()) {
          sep_s = sep->data.get<std::string>();
          if (sep_s.empty()) eval_error(line, "empty separator");
          sep_p = &sep_s;
        }
        const int64_t maxsplit = int_arg(maxs, -1, "maxsplit", line);
        const std::vector<std::string> parts =
            name == "split" ? py::split(s, sep_p, maxsplit) : py::rsplit(s, sep_p, maxsplit);
        Json out = Json::array();
        for (auto& p : parts) out.push_back(p);
        return Value::of(std::move(out));
      }
      if (name == "replace") {
        const Value* b = args.get(1, "new");
        const Value* c = args.get(2, "count");
        return Value::of(
            py::replace(s, str_arg(a0, ""), str_arg(b, ""), int_arg(c, -1, "count", line)));
      }
      if (name == "find") return Value::of(py::find(s, str_arg(a0, "")));
      if (name == "rfind") return Value::of(py::rfind(s, str_arg(a0, "")));
      if (name == "index" || name == "rindex") {
        if (!a0 || !a0->is_string()) eval_error(line, name + "() needs a string");
        const int64_t at = name == "index" ? py::find(s, a0->data.get_ref<const std::string&>())
                                           : py::rfind(s, a0->data.get_ref<const std::string&>());
        if (at < 0) eval_error(line, "substring not found");
        return Value::of(at);
      }
      if (name == "center" || name == "ljust" || name == "rjust" || name == "zfill") {
        const Value* width = args.get(0, "width");
        if (!width) eval_error(line, name + " expected at least 1 argument, got 0");
        const int64_t w = int_arg(width, 0, "width", line);
        const Value* fill = name == "zfill" ? nullptr : args.get(1, "fillchar");
        if (fill &&
            (!fill->is_string() || py::length(fill->data.get_ref<const std::string&>()) != 1))
          eval_error(line, "The fill character must be exactly one character long");
        const std::string fill_char = fill ? fill->data.get<std::string>() : " ";
        if (w > 0) check_size(static_cast<size_t>(w) * fill_char.size(), line);
        if (name == "zfill") return Value::of(py::zfill(s, w));
        const py::Justify how = name == "center"  ? py::Justify::center
                                : name == "ljust" ? py::Justify::left
                                                  : py::Justify::right;
        return Value::of(py::justify(s, w, fill_char, how));
      }
      if (name == "count") return Value::of(py::count(s, str_arg(a0, "")));
      if (name == "join") {
        const Value* seq = args.get(0, "iterable");
        std::string out;
        if (seq && seq->kind == Value::Kind::data && seq->data.is_array()) {
          bool first = true;
          for (const Json& x : seq->data) {
            if (!first) out += s;
            first = false;
            out += to_python_str(Value::of(x));
          }
        }
        return Value::of(out);
      }
      if (name == "partition" || name == "rpartition") {  // a list for Python's 3-tuple
        const std::string sep = str_arg(a0, "");
        if (sep.empty()) eval_error(line, "empty separator");
        const size_t k = name == "partition" ? s.find(sep) : s.rfind(sep);
        if (k == std::string::npos)
          return Value::of(name == "partition" ? Json::array({s, "", ""})
                                               : Json::array({"", "", s}));
        return Value::of(Json::array({s.substr(0, k), sep, s.substr(k + sep.size())}));
      }
    }
    if (obj.kind == Value::Kind::data && obj.data.is_array() &&
        (name == "count" || name == "index")) {
      const Value* x = args.get(0, "value");
      if (!x) eval_error(line, name + "() needs an argument");
      int64_t n = 0;
      for (size_t i = 0; i < obj.data.size(); ++i) {
        if (!equal_values(Value::of(obj.data[i]), *x)) continue;
        if (name == "index") return Value::of(static_cast<int64_t>(i));
        ++n;
      }
      if (name == "index") eval_error(line, "index(): value is not in the list");
      return Value::of(n);
    }
    if (obj.kind == Value::Kind::data && obj.data.is_object()) {
      const Json& d = obj.data;
      if (name == "items") {
        Json out = Json::array();
        for (auto it = d.begin(); it != d.end(); ++it)
          out.push_back(Json::array({it.key(), it.value()}));
        return Value::of(std::move(out));
      }
      if (name == "keys" || name == "values") {
        Json out = Json::array();
        for (auto it = d.begin(); it != d.end(); ++it)
          out.push_back(name == "keys" ? Json(it.key()) : it.value());
        return Value::of(std::move(out));
      }
      if (name == "get") {
        const Value* k = args.get(0, "key");
        const Value* dflt = args.get(1, "default");
        if (k && k->is_string()) {
          auto it = d.find(k->data.get<std::string>());
          if (it != d.end()) return Value::of(*it);
        }
        return dflt ? *dflt : Value::of(nullptr);
      }
    }
    eval_error(line, type_name(obj) + " has no method '" + name + "'");
  }

  static int64_t length_of(const Value& v, int line) {
    if (v.is_undefined()) return 0;
    if (v.kind == Value::Kind::data) {
      if (v.data.is_string())
        return static_cast<int64_t>(py::length(v.data.get_ref<const std::string&>()));
      if (v.data.is_array() || v.data.is_object()) return static_cast<int64_t>(v.data.size());
    }
    eval_error(line, "object of type " + type_name(v) + " has no length");
  }

  Value apply_filter(const Expr& e) { return filter(e.name, eval(*e.a), eval_args(e), e.line); }

  // Filter f of v (jinja2's builtin filters and transformers' tojson).
  Value filter(const std::string& f, const Value& v, const Args& args, int line) {
    auto need_data = [&](const char* what) {
      if (v.kind != Value::Kind::data)
        eval_error(line, std::string(what) + " filter needs a value, got " + type_name(v));
    };
    if (f == "trim") {
      std::string chars_s;
      const Value* c = args.get(0, "chars");
      if (c && c->is_string()) chars_s = c->data.get<std::string>();
      return Value::of(
          py::strip(to_python_str(v), c && c->is_string() ? &chars_s : nullptr, true, true));
    }
    if (f == "length" || f == "count") return Value::of(length_of(v, line));
    if (f == "tojson") {
      // transformers' tojson(x, ensure_ascii=False, indent=None, separators=None,
      // sort_keys=False)
      need_data("tojson");
      JsonStyle style;
      const Value* ascii = args.get(0, "ensure_ascii");
      style.ensure_ascii = ascii && ascii->truthy();
      const Value* ind = args.get(1, "indent");
      if (ind && ind->kind == Value::Kind::data && is_int_like(ind->data))
        style.indent = static_cast<int>(std::clamp<int64_t>(int_value(ind->data), -1, 64));
      const Value* seps = args.get(2, "separators");
      if (seps && seps->kind == Value::Kind::data && seps->data.is_array()) {
        if (seps->data.size() != 2 || !seps->data[0].is_string() || !seps->data[1].is_string())
          eval_error(line, "tojson separators must be two strings");
        style.item_separator = seps->data[0].get<std::string>();
        style.key_separator = seps->data[1].get<std::string>();
        // an empty separator is written as given, not as the default
        if (style.item_separator.empty() || style.key_separator.empty())
          eval_error(line, "tojson: empty separators are not supported");
      }
      const Value* sort = args.get(3, "sort_keys");
      style.sort_keys = sort && sort->truthy();
      return Value::of(to_json_text(v.data, style));
    }
    if (f == "string") return Value::of(to_python_str(v));
    if (f == "title") return Value::of(title_filter(to_python_str(v)));
    if (f == "upper" || f == "lower" || f == "capitalize") {
      return call_method(Value::of(to_python_str(v)), f, {}, line);
    }
    if (f == "replace") {
      const Value* c = args.get(2, "count");
      return Value::of(py::replace(to_python_str(v), str_arg(args.get(0, "old"), ""),
                                   str_arg(args.get(1, "new"), ""), int_arg(c, -1, "count", line)));
    }
    if (f == "default" || f == "d") {
      const Value* dflt = args.get(0, "default_value");
      const Value* boolean = args.get(1, "boolean");
      const bool use_default = v.is_undefined() || (boolean && boolean->truthy() && !v.truthy());
      return use_default ? (dflt ? *dflt : Value::of("")) : v;
    }
    if (f == "first" || f == "last") {
      std::vector<Value> items = iterate(v, line);
      if (items.empty()) return Value::undefined();
      return f == "first" ? items.front() : items.back();
    }
    if (f == "list") {
      Json out = Json::array();
      for (const Value& x : iterate(v, line)) out.push_back(x.data);
      Value list = Value::of(std::move(out));
      if (v.tuple == Value::Tuple::groups) list.tuple = v.tuple;
      return list;
    }
    if (f == "reverse") {
      if (v.is_undefined()) return Value::of(Json::array());  // jinja2's Undefined iterates empty
      need_data("reverse");
      if (v.data.is_string()) {
        std::vector<std::string_view> chars = py::chars(v.data.get_ref<const std::string&>());
        std::string s;
        for (auto it = chars.rbegin(); it != chars.rend(); ++it) s += *it;
        return Value::of(s);
      }
      Json out = Json::array();
      std::vector<Value> items = iterate(v, line);
      for (auto it = items.rbegin(); it != items.rend(); ++it) out.push_back(it->data);
      return Value::of(std::move(out));
    }
    if (f == "join") {
      const std::string sep = str_arg(args.get(0, "d"), "");
      const Value* attr = args.get(1, "attribute");
      std::string out;
      bool first = true;
      for (const Value& x : iterate(v, line)) {
        if (!first) out += sep;
        first = false;
        out += to_python_str(attr ? attribute_of(x, *attr, nullptr, line) : x);
      }
      return Value::of(out);
    }
    if (f == "items") {
      if (v.is_undefined()) return Value::of(Json::array());
      need_data("items");
      return call_method(v, "items", {}, line);
    }
    // jinja2's do_int / do_float: int(value) (for text, else int(float(text))) or float(value),
    // and the default (0 / 0.0, or default=) for what Python refuses.
    if (f == "int") {
      const Value* dflt = args.get(0, "default");
      const Value fallback = dflt ? *dflt : Value::of(int64_t{0});
      if (v.kind == Value::Kind::data && is_int_like(v.data)) return Value::of(int_value(v.data));
      std::optional<double> x;
      if (v.kind == Value::Kind::data && v.data.is_number()) x = v.data.get<double>();
      if (v.is_string()) {
        if (const auto i = py::parse_int(v.data.get<std::string>())) return Value::of(*i);
        x = py::parse_float(v.data.get<std::string>());
      }
      if (!x || !std::isfinite(*x)) return fallback;
      const double t = std::trunc(*x);
      if (std::fabs(t) >= 9.2233720368547758e18) eval_error(line, "int filter: value out of range");
      return Value::of(static_cast<int64_t>(t));
    }
    if (f == "float") {
      const Value* dflt = args.get(0, "default");
      if (v.kind == Value::Kind::data && is_number_like(v.data))
        return Value::of(float_value(v.data));
      if (v.is_string()) {
        if (const auto x = py::parse_float(v.data.get<std::string>())) return Value::of(*x);
      }
      return dflt ? *dflt : Value::of(0.0);
    }
    if (f == "abs") {
      need_data("abs");
      if (!is_number_like(v.data)) eval_error(line, "abs filter needs a number");
      if (is_int_like(v.data)) return Value::of(std::llabs(int_value(v.data)));
      return Value::of(std::fabs(float_value(v.data)));
    }
    if (f == "round") {
      need_data("round");
      if (!is_number_like(v.data)) eval_error(line, "round filter needs a number");
      const Value* prec = args.get(0, "precision");
      const int64_t digits = prec && prec->kind == Value::Kind::data && is_int_like(prec->data)
                                 ? int_value(prec->data)
                                 : 0;
      const std::string method = str_arg(args.get(1, "method"), "common");
      if (method == "common") return python_round(v.data, digits);
      if (method != "floor" && method != "ceil")
        eval_error(line, "round method must be common, floor or ceil");
      const double scale = std::pow(10.0, static_cast<double>(digits));
      const double x = float_value(v.data) * scale;
      return Value::of((method == "floor" ? std::floor(x) : std::ceil(x)) / scale);
    }
    if (f == "sort" || f == "min" || f == "max") {
      // jinja2's do_sort / do_min / do_max: strings compared lowercased unless case_sensitive,
      // or items by an attribute; sort is stable, min / max take the first of equals.
      const Value* rev = f == "sort" ? args.get(0, "reverse") : nullptr;
      const Value* cs = args.get(f == "sort" ? 1 : 0, "case_sensitive");
      const Value* attr = args.get(f == "sort" ? 2 : 1, "attribute");
      const bool case_sensitive = cs && cs->truthy();
      std::vector<Value> items = iterate(v, line);
      std::vector<Value> keys;
      for (const Value& x : items) {
        Value k = attr ? attribute_of(x, *attr, nullptr, line) : x;
        keys.push_back(fold_case_key(std::move(k), case_sensitive));
      }
      std::vector<size_t> order(items.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      const bool reverse = rev && rev->truthy();
      const auto less = [&](size_t i, size_t j) {
        return compare_values(reverse ? keys[j] : keys[i], reverse ? keys[i] : keys[j], line) < 0;
      };
      if (f == "sort") {
        std::stable_sort(order.begin(), order.end(), less);
        Json out = Json::array();
        for (size_t i : order) out.push_back(data_of(items[i], line));
        return Value::of(std::move(out));
      }
      if (items.empty()) return Value::undefined();
      size_t best = 0;
      for (size_t i = 1; i < items.size(); ++i) {
        const int c = compare_values(keys[i], keys[best], line);
        if (f == "min" ? c < 0 : c > 0) best = i;
      }
      return items[best];
    }
    if (f == "sum") {
      const Value* attr = args.get(0, "attribute");
      const Value* start = args.get(1, "start");
      Json total = start && start->kind == Value::Kind::data ? start->data : Json(int64_t{0});
      for (const Value& x : iterate(v, line)) {
        const Value item = attr ? attribute_of(x, *attr, nullptr, line) : x;
        if (item.kind != Value::Kind::data || !is_number_like(item.data) || !is_number_like(total))
          eval_error(line, "sum filter needs numbers, got " + type_name(item));
        if (is_int_like(total) && is_int_like(item.data))
          total = int_value(total) + int_value(item.data);
        else
          total = float_value(total) + float_value(item.data);
      }
      return Value::of(std::move(total));
    }
    if (f == "safe" || f == "e" || f == "escape") {
      if (v.markup) return v;
      Value marked = Value::of(f == "safe" ? to_python_str(v) : html_escape(to_python_str(v)));
      marked.markup = true;
      return marked;
    }
    // jinja2 guards these with `if seq:` (functionary's `tools | selectattr(...)` on none).
    if ((f == "selectattr" || f == "rejectattr" || f == "select" || f == "reject" || f == "map") &&
        !v.truthy())
      return Value::of(Json::array());
    if (f == "selectattr" || f == "rejectattr" || f == "select" || f == "reject") {
      const bool by_attr = f == "selectattr" || f == "rejectattr";
      const bool keep_match = f == "selectattr" || f == "select";
      Json out = Json::array();
      const Value* attr = by_attr ? args.get(0, "attr") : nullptr;
      if (by_attr && !attr) eval_error(line, "Missing parameter for attribute name");
      const size_t test_pos = by_attr ? 1 : 0;
      for (const Value& x : iterate(v, line)) {
        Value subject = by_attr ? attribute_of(x, *attr, nullptr, line) : x;
        bool r;
        if (args.pos.size() > test_pos) {
          const std::string test = str_arg(&args.pos[test_pos], "");
          std::vector<Value> targs(args.pos.begin() + static_cast<std::ptrdiff_t>(test_pos) + 1,
                                   args.pos.end());
          r = run_test(test, subject, targs, line);
        } else {
          r = subject.truthy();
        }
        if (r == keep_match) out.push_back(x.data);
      }
      return Value::of(std::move(out));
    }
    if (f == "map") {
      Json out = Json::array();
      const Value* attr = args.kw.count("attribute") ? &args.kw.at("attribute") : nullptr;
      for (const Value& x : iterate(v, line)) {
        if (attr) {
          // A missing attribute is jinja2's Undefined (or map's default=), which renders and
          // joins as "" and is falsy; a list here holds data, so it holds "" for it.
          const Value* dflt = args.kw.count("default") ? &args.kw.at("default") : nullptr;
          const Value got = attribute_of(x, *attr, nullptr, line);
          out.push_back(!got.is_undefined()                       ? data_of(got, line)
                        : dflt && dflt->kind == Value::Kind::data ? dflt->data
                                                                  : Json(""));
        } else if (!args.pos.empty()) {  // map('filter', args...): any filter, its arguments
          if (!args.pos[0].is_string()) eval_error(line, "map() needs a filter name");
          Args rest;
          rest.pos.assign(args.pos.begin() + 1, args.pos.end());
          rest.kw = args.kw;
          out.push_back(data_of(filter(args.pos[0].data.get<std::string>(), x, rest, line), line));
        } else {
          out.push_back(x.data);
        }
      }
      return Value::of(std::move(out));
    }
    if (f == "unique") {
      // jinja2's do_unique(case_sensitive=False, attribute=None): the first of each value,
      // strings compared lowercased
      const Value* cs = args.get(0, "case_sensitive");
      const Value* attr = args.get(1, "attribute");
      const bool case_sensitive = cs && cs->truthy();
      Json out = Json::array();
      std::vector<Value> seen;
      for (const Value& x : iterate(v, line)) {
        const Value key =
            fold_case_key(attr ? attribute_of(x, *attr, nullptr, line) : x, case_sensitive);
        bool found = false;
        for (const Value& k : seen) found = found || equal_values(k, key);
        if (found) continue;
        seen.push_back(key);
        out.push_back(data_of(x, line));
      }
      return Value::of(std::move(out));
    }
    if (f == "dictsort") {
      // jinja2's do_dictsort(case_sensitive=False, by='key', reverse=False)
      need_data("dictsort");
      if (!v.data.is_object()) eval_error(line, "dictsort filter needs a dict");
      const Value* cs = args.get(0, "case_sensitive");
      const bool case_sensitive = cs && cs->truthy();
      const std::string by = str_arg(args.get(1, "by"), "key");
      if (by != "key" && by != "value") eval_error(line, "dictsort by must be key or value");
      const Value* rev = args.get(2, "reverse");
      std::vector<std::pair<Value, Json>> items;  // (sort key, [key, value])
      for (auto it = v.data.begin(); it != v.data.end(); ++it) {
        items.emplace_back(
            fold_case_key(Value::of(by == "key" ? Json(it.key()) : it.value()), case_sensitive),
            Json::array({it.key(), it.value()}));
      }
      const bool reverse = rev && rev->truthy();
      std::stable_sort(items.begin(), items.end(), [&](const auto& a, const auto& b) {
        return compare_values(reverse ? b.first : a.first, reverse ? a.first : b.first, line) < 0;
      });
      Json out = Json::array();
      for (auto& [k, x] : items) out.push_back(std::move(x));
      return Value::of(std::move(out));
    }
    if (f == "indent") {
      // jinja2's do_indent: every line after the first (the first too with first=true) gets the
      // indentation (width spaces, or the string given); blank lines only with blank=true.
      const Value* width = args.get(0, "width");
      std::string indentation(4, ' ');
      if (width && width->is_string())
        indentation = width->data.get<std::string>();
      else if (width && width->kind == Value::Kind::data && is_int_like(width->data))
        indentation.assign(
            static_cast<size_t>(std::clamp<int64_t>(int_value(width->data), 0, 4096)), ' ');
      const Value* first = args.get(1, "first");
      const Value* blank = args.get(2, "blank");
      // jinja2 appends a newline first, so a trailing one is kept as an empty last line
      const std::vector<std::string> lines = py::splitlines(to_python_str(v) + "\n");
      std::string out;
      for (size_t i = 0; i < lines.size(); ++i) {
        if (i > 0) out += '\n';
        const bool indented =
            i == 0 ? first && first->truthy() : !lines[i].empty() || (blank && blank->truthy());
        if (indented) out += indentation;
        out += lines[i];
      }
      return Value::of(std::move(out));
    }
    if (f == "format") {  // jinja2: str(value) % (kwargs or args)
      if (!args.pos.empty() && !args.kw.empty())
        eval_error(line, "format: can't handle positional and keyword arguments at the same time");
      Json mapping = Json::object();
      for (const auto& [key, value] : args.kw)
        mapping[key] = value.kind == Value::Kind::data ? value.data : Json(to_python_str(value));
      std::vector<Value> items = args.pos;
      if (!args.kw.empty()) items = {Value::of(mapping)};
      return Value::of(percent_format_or_error(to_python_str(v), items,
                                               args.kw.empty() ? nullptr : &mapping, line));
    }
    if (f == "center") {
      if (!v.is_string()) eval_error(line, "center filter needs a string, got " + type_name(v));
      Args width;
      width.pos.push_back(args.get(0, "width") ? *args.get(0, "width") : Value::of(80));
      return call_method(v, "center", width, line);
    }
    if (f == "truncate") {
      // jinja2's do_truncate(s, length=255, killwords=False, end='...', leeway=5)
      if (v.is_undefined()) return v;
      if (!v.is_string()) eval_error(line, "truncate filter needs a string, got " + type_name(v));
      const int64_t length = int_arg(args.get(0, "length"), 255, "length", line);
      const Value* killwords = args.get(1, "killwords");
      const Value* end_arg = args.get(2, "end");
      if (end_arg && !end_arg->is_string())
        eval_error(line, "object of type '" + python_type(*end_arg) + "' has no len()");
      std::string end = end_arg ? end_arg->data.get<std::string>() : "...";
      const int64_t leeway = int_arg(args.get(3, "leeway"), 5, "leeway", line);
      if (length < static_cast<int64_t>(py::length(end)))
        eval_error(line, "expected length >= " + std::to_string(py::length(end)) + ", got " +
                             std::to_string(length));
      if (leeway < 0) eval_error(line, "expected leeway >= 0, got " + std::to_string(leeway));
      if (v.markup) end = html_escape(end);  // Markup + str escapes the str
      Value out = Value::of(truncate_text(v.data.get_ref<const std::string&>(), length,
                                          killwords && killwords->truthy(), end, leeway));
      out.markup = v.markup;
      return out;
    }
    if (f == "wordwrap") {
      // jinja2's do_wordwrap(s, width=79, break_long_words=True, wrapstring=None,
      // break_on_hyphens=True), wrapstring None meaning "\n"
      if (!v.is_string()) eval_error(line, "wordwrap filter needs a string, got " + type_name(v));
      const int64_t width = int_arg(args.get(0, "width"), 79, "width", line);
      const std::string& text = v.data.get_ref<const std::string&>();
      if (width <= 0 && !py::splitlines(text).empty())  // textwrap refuses it once it runs
        eval_error(line, "invalid width " + std::to_string(width) + " (must be > 0)");
      const Value* long_words = args.get(1, "break_long_words");
      const Value* wrap = args.get(2, "wrapstring");
      if (wrap && !wrap->is_none() && !wrap->is_string())
        eval_error(line, "wordwrap wrapstring must be a string");
      // at most one wrapstring per character (and line break)
      if (wrap && wrap->is_string())
        check_size(wrap->data.get_ref<const std::string&>().size() * (text.size() + 1), line);
      const Value* hyphens = args.get(3, "break_on_hyphens");
      return Value::of(wordwrap(text, width, !long_words || long_words->truthy(),
                                wrap && wrap->is_string() ? wrap->data.get<std::string>() : "\n",
                                !hyphens || hyphens->truthy()));
    }
    if (f == "batch" || f == "slice") {
      // jinja2's do_batch(value, linecount, fill_with=None) / do_slice(value, slices,
      // fill_with=None), step by step (their results for sizes <= 0 included)
      const Value* size = args.get(0, f == "batch" ? "linecount" : "slices");
      if (!size) eval_error(line, f + " filter needs a size");
      const int64_t n = int_arg(size, 0, "size", line);
      const Value* fill = args.get(1, "fill_with");
      const bool filling = fill && !fill->is_none();
      const Json fill_data = filling ? data_of(*fill, line) : Json();
      std::vector<Value> items = iterate(v, line);
      constexpr int64_t kMaxItems = static_cast<int64_t>(kMaxText / 64);
      Json out = Json::array();
      if (f == "batch") {
        if (filling && n > kMaxItems) eval_error(line, "batch size too large");
        Json group = Json::array();
        for (Value& x : items) {
          if (static_cast<int64_t>(group.size()) == n)
            out.push_back(std::exchange(group, Json::array()));
          group.push_back(data_of(x, line));
        }
        if (!group.empty()) {
          while (filling && static_cast<int64_t>(group.size()) < n) group.push_back(fill_data);
          out.push_back(std::move(group));
        }
        return Value::of(std::move(out));
      }
      if (n == 0) eval_error(line, "integer division or modulo by zero");
      if (n > kMaxItems) eval_error(line, "slice count too large");
      const int64_t length = static_cast<int64_t>(items.size());
      const int64_t per_slice = length / std::max<int64_t>(n, 1);
      const int64_t with_extra = length % std::max<int64_t>(n, 1);
      int64_t offset = 0;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t start = offset + k * per_slice;
        if (k < with_extra) ++offset;
        const int64_t end = offset + (k + 1) * per_slice;
        Json slice = Json::array();
        for (int64_t i = start; i < end; ++i)
          slice.push_back(data_of(items[static_cast<size_t>(i)], line));
        if (filling && k >= with_extra) slice.push_back(fill_data);
        out.push_back(std::move(slice));
      }
      return Value::of(std::move(out));
    }
    if (f == "groupby") {
      // jinja2's do_groupby(value, attribute, default=None, case_sensitive=False): the items
      // sorted by the attribute (strings lowercased unless case_sensitive), runs of equal
      // ones as (grouper, list), the grouper as the run's first item has it
      const Value* attribute = args.get(0, "attribute");
      if (!attribute) eval_error(line, "groupby filter needs an attribute");
      const Value* dflt = args.get(1, "default");
      if (dflt && dflt->is_none()) dflt = nullptr;
      const Value* cs = args.get(2, "case_sensitive");
      const bool case_sensitive = cs && cs->truthy();
      std::vector<Value> items = iterate(v, line);
      std::vector<Value> keys, folded;
      for (const Value& x : items) {
        keys.push_back(attribute_of(x, *attribute, dflt, line));
        folded.push_back(fold_case_key(keys.back(), case_sensitive));
      }
      std::vector<size_t> order(items.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](size_t i, size_t j) {
        return compare_values(folded[i], folded[j], line) < 0;
      });
      Json out = Json::array();
      for (size_t i = 0; i < order.size();) {
        const size_t first = order[i];
        Json members = Json::array();
        for (; i < order.size() && equal_values(folded[order[i]], folded[first]); ++i)
          members.push_back(data_of(items[order[i]], line));
        const Value& grouper = case_sensitive ? folded[first] : keys[first];
        out.push_back(Json::array(
            {grouper.is_undefined() ? Json("") : data_of(grouper, line), std::move(members)}));
      }
      Value groups = Value::of(std::move(out));
      groups.tuple = Value::Tuple::groups;
      return groups;
    }
    if (f == "urlencode") {
      // jinja2's do_urlencode: text (or any value's str()) quoted with "/" kept; a dict's items
      // or a sequence of pairs as k=v&... with both sides quoted for a query string
      if (v.is_string() ||
          (v.kind == Value::Kind::data && !v.data.is_array() && !v.data.is_object()))
        return Value::of(url_quote(to_python_str(v), false));
      std::string out;
      const auto add = [&](const Value& key, const Value& value) {
        if (!out.empty()) out += '&';
        out += url_quote(to_python_str(key), true) + "=" + url_quote(to_python_str(value), true);
      };
      if (v.kind == Value::Kind::data && v.data.is_object()) {
        for (auto it = v.data.begin(); it != v.data.end(); ++it)
          add(Value::of(it.key()), Value::of(it.value()));
        return Value::of(out);
      }
      for (const Value& pair : iterate(v, line)) {
        if (pair.kind != Value::Kind::data ||
            !(pair.data.is_array() || pair.data.is_string() || pair.data.is_object()))
          eval_error(line, "cannot unpack non-iterable " + python_type(pair) + " object");
        const std::vector<Value> kv = iterate(pair, line);
        if (kv.size() > 2) eval_error(line, "too many values to unpack (expected 2)");
        if (kv.size() < 2)
          eval_error(line, "not enough values to unpack (expected 2, got " +
                               std::to_string(kv.size()) + ")");
        add(kv[0], kv[1]);
      }
      return Value::of(out);
    }
    if (f == "filesizeformat") {
      // jinja2's do_filesizeformat(value, binary=False) of float(value)
      std::optional<double> bytes;
      if (v.kind == Value::Kind::data && is_number_like(v.data)) bytes = float_value(v.data);
      if (v.is_string()) {
        bytes = py::parse_float(v.data.get_ref<const std::string&>());
        if (!bytes)
          eval_error(line, "could not convert string to float: " + to_python_repr(v.data));
      }
      if (!bytes)
        eval_error(line, "float() argument must be a string or a real number, not '" +
                             python_type(v) + "'");
      if (std::isinf(*bytes) && *bytes < 0)
        eval_error(line, "cannot convert float infinity to integer");
      const Value* binary = args.get(0, "binary");
      return Value::of(filesize_format(*bytes, binary && binary->truthy()));
    }
    if (f == "xmlattr") {
      // jinja2's do_xmlattr(d, autospace=True): key="value" for the items that are not none,
      // both escaped; a key with whitespace, / > or = is refused
      need_data("xmlattr");
      if (!v.data.is_object()) eval_error(line, "xmlattr filter needs a dict");
      std::string out;
      for (auto it = v.data.begin(); it != v.data.end(); ++it) {
        if (it.value().is_null()) continue;
        for (std::string_view c : py::chars(it.key())) {
          if (py::isspace(c) || c == "/" || c == ">" || c == "=")
            eval_error(line, "Invalid character in attribute name: " + to_python_repr(it.key()));
        }
        if (!out.empty()) out += ' ';
        out +=
            html_escape(it.key()) + "=\"" + html_escape(to_python_str(Value::of(it.value()))) + '"';
      }
      const Value* autospace = args.get(0, "autospace");
      if ((!autospace || autospace->truthy()) && !out.empty()) out.insert(0, " ");
      return Value::of(out);
    }
    if (f == "forceescape") {  // escaped even when marked safe already
      Value escaped = Value::of(html_escape(to_python_str(v)));
      escaped.markup = true;
      return escaped;
    }
    if (f == "wordcount") {  // jinja2: the runs of \w (letters, digits of any script, "_")
      int64_t words = 0;
      bool in_word = false;
      const std::string text = to_python_str(v);
      for (std::string_view c : py::chars(text)) {
        const bool word = c == "_" || py::isalnum(c);
        words += word && !in_word;
        in_word = word;
      }
      return Value::of(words);
    }
    eval_error(line, "unsupported filter '" + f + "'");
  }

  bool apply_test(const Expr& e) {
    Value v = eval(*e.a);
    Args args = eval_args(e);
    return run_test(e.name, v, args.pos, e.line);
  }

  bool run_test(const std::string& t, const Value& v, const std::vector<Value>& args, int line) {
    const bool data = v.kind == Value::Kind::data;
    if (t == "defined") return !v.is_undefined();
    if (t == "undefined") return v.is_undefined();
    if (t == "none") return v.is_none();
    if (t == "string") return data && v.data.is_string();
    // Python's bool is a Number, so jinja2's number test accepts it (integer/float do not).
    if (t == "number") return data && (v.data.is_number() || v.data.is_boolean());
    if (t == "integer") return data && is_int(v.data);
    if (t == "float") return data && v.data.is_number_float();
    if (t == "boolean") return data && v.data.is_boolean();
    if (t == "true") return data && v.data.is_boolean() && v.data.get<bool>();
    if (t == "false") return data && v.data.is_boolean() && !v.data.get<bool>();
    if (t == "mapping") return (data && v.data.is_object()) || v.kind == Value::Kind::ns;
    // jinja2's Undefined has a length, iterates (empty) and can be called (it raises then)
    if (t == "sequence" || t == "iterable") {
      return v.is_undefined() ||
             (data && (v.data.is_array() || v.data.is_string() || v.data.is_object()));
    }
    if (t == "callable")
      return v.kind == Value::Kind::macro || v.kind == Value::Kind::builtin || v.is_undefined();
    if (t == "lower") return py::islower(to_python_str(v));  // jinja2: str(value).islower()
    if (t == "upper") return py::isupper(to_python_str(v));
    // jinja2: value % 2 == 1, value % 2 == 0, value % num == 0 (Python's %, floats too)
    if (t == "odd" || t == "even" || t == "divisibleby") {
      const Value* by = t == "divisibleby" ? (args.empty() ? nullptr : &args[0]) : nullptr;
      if (!data || !is_number_like(v.data) ||
          (t == "divisibleby" &&
           (!by || by->kind != Value::Kind::data || !is_number_like(by->data))))
        eval_error(line, "'" + t + "' test needs numbers");
      const Json divisor = by ? by->data : Json(int64_t{2});
      if (float_value(divisor) == 0) eval_error(line, "division by zero");
      const double rest =
          is_int_like(v.data) && is_int_like(divisor)
              ? static_cast<double>(python_int_divmod(int_value(v.data), int_value(divisor)).second)
              : python_float_divmod(float_value(v.data), float_value(divisor)).second;
      return t == "odd" ? rest == 1 : rest == 0;
    }
    if (t == "equalto" || t == "eq" || t == "==") return !args.empty() && equal_values(v, args[0]);
    // `is`: the same type as well (1 is not True)
    if (t == "sameas")
      return !args.empty() && equal_values(v, args[0]) &&
             (v.kind != Value::Kind::data || args[0].kind != Value::Kind::data ||
              v.data.type() == args[0].data.type());
    if (t == "ne" || t == "!=") return !args.empty() && !equal_values(v, args[0]);
    if (t == "gt" || t == "greaterthan" || t == ">" || t == "ge" || t == ">=" || t == "lt" ||
        t == "lessthan" || t == "<" || t == "le" || t == "<=") {
      if (args.empty()) eval_error(line, "'" + t + "' test needs a value to compare with");
      const int c = compare_values(v, args[0], line);
      if (t == "gt" || t == "greaterthan" || t == ">") return c > 0;
      if (t == "ge" || t == ">=") return c >= 0;
      if (t == "lt" || t == "lessthan" || t == "<") return c < 0;
      return c <= 0;
    }
    if (t == "in") return !args.empty() && contains(args[0], v, line);
    // whether v names one of jinja2's filters / tests (the environment's, whether this
    // interpreter has it or not), and whether it is marked safe
    if (t == "filter" || t == "test") {
      static constexpr std::array<std::string_view, 54> kFilters = {
          "abs",    "attr",       "batch",       "capitalize", "center",   "count",
          "d",      "default",    "dictsort",    "e",          "escape",   "filesizeformat",
          "first",  "float",      "forceescape", "format",     "groupby",  "indent",
          "int",    "items",      "join",        "last",       "length",   "list",
          "lower",  "map",        "max",         "min",        "pprint",   "random",
          "reject", "rejectattr", "replace",     "reverse",    "round",    "safe",
          "select", "selectattr", "slice",       "sort",       "string",   "striptags",
          "sum",    "title",      "tojson",      "trim",       "truncate", "unique",
          "upper",  "urlencode",  "urlize",      "wordcount",  "wordwrap", "xmlattr"};
      static constexpr std::array<std::string_view, 39> kTests = {
          "!=",      "<",        "<=",       "==",          ">",        ">=",          "upper",
          "boolean", "callable", "defined",  "divisibleby", "eq",       "equalto",     "escaped",
          "even",    "false",    "filter",   "float",       "ge",       "greaterthan", "gt",
          "in",      "integer",  "iterable", "le",          "lessthan", "lower",       "lt",
          "mapping", "ne",       "none",     "number",      "odd",      "sameas",      "sequence",
          "string",  "test",     "true",     "undefined"};
      if (!v.is_string()) return false;
      const std::string& name = v.data.get_ref<const std::string&>();
      return t == "filter" ? std::find(kFilters.begin(), kFilters.end(), name) != kFilters.end()
                           : std::find(kTests.begin(), kTests.end(), name) != kTests.end();
    }
    if (t == "escaped") return v.markup;
    eval_error(line, "unsupported test '" + t + "'");
  }

  static void check_size(size_t bytes, int line) {
    if (bytes > kMaxText)
      eval_error(line, "text longer than " + std::to_string(kMaxText >> 20) + " MiB");
  }
  void step(int line) {
    if (++steps_ > kMaxSteps)
      eval_error(line, "more than " + std::to_string(kMaxSteps) + " loop iterations and calls");
  }

  std::vector<std::map<std::string, Value>> scopes_;
  std::vector<std::shared_ptr<Namespace>> namespaces_;  // every namespace() of the render
  struct LoopFrame {
    int64_t index0 = 0;
    std::optional<Json> changed_last;  // loop.changed()'s values of its last call
  };
  std::vector<LoopFrame> loops_;  // the for loops running, innermost last
  int64_t steps_ = 0;
  int macro_depth_ = 0;
};

}  // namespace

Template::Template(std::string_view source)
    : body_(std::make_shared<const Body>(parse_template(source))) {}

std::string Template::render(const Json& context) const {
  Renderer r(context);
  std::string out;
  try {
    r.exec_body(*body_, out);
  } catch (const nlohmann::json::exception& e) {
    // a value of the wrong type met where the interpreter read one without checking
    throw Error("chat template", std::string("invalid value: ") + e.what());
  }
  return out;
}

}  // namespace oxi::jinja
