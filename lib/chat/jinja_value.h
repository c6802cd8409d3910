// Values of the Jinja subset used by chat templates.
//
// Data (strings, numbers, lists, dicts) is an ordered JSON value, because Python dicts keep
// insertion order and templates print them with tojson. Two kinds are not data: `undefined`
// (a missing variable or key, which renders as "" and is falsy), a namespace (a mutable
// object created by namespace(), shared by reference so loop bodies can update it), a macro,
// and a builtin: one of the global functions (raise_exception, strftime_now, namespace, range,
// dict), which jinja2 resolves as names, so that `strftime_now is defined` holds as in
// transformers' environment (Llama 3.x templates ask it before calling).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace oxi::jinja {

using Json = nlohmann::ordered_json;

struct Value;
struct Stmt;
using Namespace = std::map<std::string, Value>;

struct Value {
  enum class Kind { undefined, data, ns, macro, builtin };
  Kind kind = Kind::undefined;
  Json data;
  std::shared_ptr<Namespace> ns;
  const Stmt* macro = nullptr;  // a {% macro %} of the template being rendered (not owned)
  // A {% call %} block's caller(): how many scopes of the render its body sees (its call
  // site's); 0 for a macro.
  size_t scope_depth = 0;
  std::string builtin;  // the global function's name
  // A string marked safe (jinja2's Markup, from |safe or |escape): `+` with a plain string
  // HTML-escapes the plain one, as Markup.__add__ does even with autoescape off.
  bool markup = false;
  // groupby's result: `groups` on its list, `group` on each item taken from it, a (grouper,
  // list) pair whose .grouper and .list are items 0 and 1 (jinja2's _GroupTuple).
  enum class Tuple : uint8_t { none, group, groups };
  Tuple tuple = Tuple::none;

  static Value undefined() { return {}; }
  static Value of(Json j) {
    Value v;
    v.kind = Kind::data;
    v.data = std::move(j);
    return v;
  }
  bool is_undefined() const { return kind == Kind::undefined; }
  bool is_none() const { return kind == Kind::data && data.is_null(); }
  bool is_string() const { return kind == Kind::data && data.is_string(); }
  bool truthy() const;
};

// Python's str() of a value, which is what {{ x }} prints (None -> "None", True -> "True",
// lists and dicts in Python repr form).
std::string to_python_str(const Value& v);
std::string to_python_repr(const Json& j);
std::string python_float_repr(double d);

// json.dumps(value, ensure_ascii, indent, separators, sort_keys) as transformers' tojson filter
// calls it (its defaults: ensure_ascii=False, no indent, Python's separators for the indent).
struct JsonStyle {
  int indent = -1;  // < 0: one line
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::string item_separator, key_separator;  // empty: json.dumps' defaults
};
std::string to_json_text(const Json& j, const JsonStyle& style);
inline std::string to_json_text(const Json& j, int indent) {
  JsonStyle style;
  style.indent = indent;
  return to_json_text(j, style);
}

}  // namespace oxi::jinja
