// Evaluates the syntax tree of jinja_parser.cpp. Semantics follow jinja2 as transformers
// configures it: Python truthiness and str(), undefined values that render as "", loops that
// scope their variables, namespaces shared by reference. This file: the renderer's statements,
// expressions and calls (jinja_renderer.h); the methods, filters and tests are in
// jinja_methods.cpp, jinja_filters.cpp and jinja_tests.cpp.
#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/chat/jinja.h"
#include "lib/chat/jinja_parser.h"
#include "lib/chat/jinja_renderer.h"
#include "lib/chat/jinja_text_filters.h"
#include "lib/chat/python_format.h"
#include "lib/chat/python_str.h"
#include "lib/core/error.h"

namespace oxi::jinja {

[[noreturn]] void eval_error(int line, const std::string& message) {
  throw Error("chat template", "line " + std::to_string(line) + ": " + message);
}

Renderer::Renderer(const Json& context) {
  scopes_.emplace_back();
  for (auto it = context.begin(); it != context.end(); ++it) {
    scopes_.back()[it.key()] = Value::of(it.value());
  }
}

Renderer::~Renderer() {
  for (const auto& ns : namespaces_) ns->clear();
}

Flow Renderer::exec_body(const Body& body, std::string& out) {
  for (const StmtPtr& s : body) {
    const Flow f = exec(*s, out);
    check_size(out.size(), s->line);
    if (f != Flow::normal) return f;
  }
  return Flow::normal;
}

Value Renderer::lookup(const std::string& name) const {
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

void Renderer::assign(const std::string& name, Value v) {
  scopes_.back()[name] = std::move(v);
}

Flow Renderer::exec(const Stmt& s, std::string& out) {
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

void Renderer::set_target(const Stmt& s, Value v) {
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

std::vector<Value> Renderer::iterate(const Value& v, int line) {
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

void Renderer::bind_targets(const Stmt& s, const Value& item) {
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

void Renderer::exec_for(const Stmt& s, std::string& out) {
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

Value Renderer::defined(const Expr& e) {
  Value v = eval(e);
  if (v.is_undefined()) {
    eval_error(e.line, (e.kind == Expr::Kind::name ? "'" + e.name + "'" : std::string("a value")) +
                           " is undefined");
  }
  return v;
}

Value Renderer::eval(const Expr& e) {
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

Json Renderer::data_of(const Value& v, int line) {
  if (v.kind == Value::Kind::data) return v.data;
  if (v.is_undefined()) return nullptr;
  eval_error(line, "cannot store a " + type_name(v) + " in a container");
}

Value Renderer::get_attr(const Value& obj, const std::string& name) {
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

Value Renderer::get_item(const Value& obj, const Value& key, int line) {
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

Value Renderer::attribute_of(const Value& x, const Value& attribute, const Value* dflt, int line) {
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

int Renderer::compare_values(const Value& a, const Value& b, int line) {
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

bool Renderer::equal_values(const Value& a, const Value& b) {
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

bool Renderer::contains(const Value& hay, const Value& needle, int line) {
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

Json Renderer::repeat(const Json& seq, int64_t times, int line) {
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

Value Renderer::power(const Json& a, const Json& b, int line) {
  if (is_int_like(a) && is_int_like(b) && int_value(b) >= 0) {
    int64_t base = int_value(a), e = int_value(b), out = 1;
    for (; e > 0; e >>= 1) {
      if (e & 1 && __builtin_mul_overflow(out, base, &out)) eval_error(line, "integer too large");
      if (e > 1 && __builtin_mul_overflow(base, base, &base)) eval_error(line, "integer too large");
    }
    return Value::of(out);
  }
  const double x = float_value(a), y = float_value(b);
  if (x == 0 && y < 0) eval_error(line, "0.0 cannot be raised to a negative power");
  if (x < 0 && y != std::floor(y)) eval_error(line, "a negative number to a fractional power");
  return Value::of(std::pow(x, y));
}

Value Renderer::binary(const Expr& e) {
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
    if (e.args[0]->kind == Expr::Kind::tuple && r.kind == Value::Kind::data && r.data.is_array()) {
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
  eval_error(e.line,
             "unsupported operand types for " + op + ": " + type_name(l) + " and " + type_name(r));
}

Renderer::Args Renderer::eval_args(const Expr& e, size_t skip) {
  Args a;
  for (size_t i = skip; i < e.args.size(); ++i) a.pos.push_back(eval(*e.args[i]));
  for (size_t i = 0; i < e.kwnames.size(); ++i) a.kw[e.kwnames[i]] = eval(*e.kwargs[i]);
  return a;
}

std::string Renderer::str_arg(const Value* v, const std::string& dflt) {
  return v && v->is_string() ? v->data.get<std::string>() : dflt;
}

Value Renderer::call(const Expr& e) {
  Args args = eval_args(e);
  // loop.cycle(a, b, ...): the argument of this iteration, in turn; loop.changed(a, ...):
  // whether the values differ from the last call's in this loop (true the first time).
  if (e.a->kind == Expr::Kind::attr && e.a->a->kind == Expr::Kind::name && e.a->a->name == "loop" &&
      !loops_.empty() && (e.a->name == "cycle" || e.a->name == "changed")) {
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

Value Renderer::call_macro(const Value& callee, const Args& args) {
  const Stmt& m = *callee.macro;
  step(m.line);
  if (macro_depth_ >= kMaxMacroDepth)
    eval_error(m.line, "macro calls nested more than " + std::to_string(kMaxMacroDepth) + " deep");
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

void Renderer::check_size(size_t bytes, int line) {
  if (bytes > kMaxText)
    eval_error(line, "text longer than " + std::to_string(kMaxText >> 20) + " MiB");
}

void Renderer::step(int line) {
  if (++steps_ > kMaxSteps)
    eval_error(line, "more than " + std::to_string(kMaxSteps) + " loop iterations and calls");
}

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
