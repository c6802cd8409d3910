// The syntax tree of the Jinja subset: expressions and statements, one node type each, built
// by jinja_parser.cpp and walked by jinja_render.cpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lib/chat/jinja_value.h"

namespace oxi::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    literal,    // value
    name,       // name
    attr,       // a.name
    subscript,  // a[b]
    slice,      // a[b:c:d] (missing parts are null)
    call,       // a(args, kw=...)
    filter,     // a | name(args)
    test,       // a is [not] name(args)
    unary,      // op a   (op: "not", "-", "+")
    binary,     // a op b
    ternary,    // b if a else c  -> args = {cond, then, else}
    list,       // [args]
    tuple,      // (args)
    dict,       // {keys[i]: args[i]}
  };
  Kind kind = Kind::literal;
  Json value;                        // literal
  std::string name;                  // name / attr / call-free filter / test / operator
  ExprPtr a;                         // primary operand
  std::vector<ExprPtr> args;         // positional arguments or elements
  std::vector<std::string> kwnames;  // keyword names for the trailing kwargs
  std::vector<ExprPtr> kwargs;
  std::vector<ExprPtr> keys;  // dict keys
  bool negated = false;       // test: "is not"
  int line = 0;
};

// The name a {% filter %} block's rendered body is bound to while its filters run: not an
// identifier a template can write.
inline constexpr const char* kFilterBody = "filter body";

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    text,
    output,
    if_,
    for_,
    set,
    set_block,
    break_,
    continue_,
    macro,
    filter_block,  // {% filter f(args) | g %} body {% endfilter %}: expr filters kFilterBody
    call_block,    // {% call(params) expr %} body {% endcall %}: body is caller(params) in expr
    with,          // {% with params[i] = defaults[i], ... %} body {% endwith %}
  };
  Kind kind = Kind::text;
  std::string text;                  // text
  ExprPtr expr;                      // output / set value / for iterable
  std::vector<ExprPtr> conditions;   // if / elif conditions
  std::vector<Body> branches;        // if: one body per condition, then else (optional)
  std::vector<std::string> targets;  // for: loop variables; set: name, {ns, attr} or names
  bool unpack = false;               // set a, b = ...: targets are names to unpack into
  ExprPtr loop_filter;               // for ... if cond
  Body body;                         // for / set_block / macro / call / with body
  Body else_body;                    // for ... else
  std::vector<std::string> params;   // macro / caller parameters, with's names
  std::vector<ExprPtr> defaults;     // their defaults (null where none), with's values
  int line = 0;
};

}  // namespace oxi::jinja
