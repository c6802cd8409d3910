// jinja2's builtin tests (`x is defined`, `x is divisibleby(3)`, ...): Renderer::run_test
// (jinja_renderer.h).
#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "lib/chat/jinja_renderer.h"
#include "lib/chat/jinja_text_filters.h"
#include "lib/chat/python_format.h"
#include "lib/chat/python_str.h"

namespace oxi::jinja {

bool Renderer::apply_test(const Expr& e) {
  Value v = eval(*e.a);
  Args args = eval_args(e);
  return run_test(e.name, v, args.pos, e.line);
}

bool Renderer::run_test(const std::string& t, const Value& v, const std::vector<Value>& args,
                        int line) {
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
        (t == "divisibleby" && (!by || by->kind != Value::Kind::data || !is_number_like(by->data))))
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

}  // namespace oxi::jinja
