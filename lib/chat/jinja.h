// A Jinja interpreter for the subset chat templates use, rendering byte-identically to
// transformers' apply_chat_template (jinja2 with trim_blocks and lstrip_blocks, loop controls,
// its tojson filter and raise_exception).
//
//   oxi::jinja::Template t(source);                    // throws oxi::Error on syntax errors
//   std::string prompt = t.render({{"messages", msgs}, {"add_generation_prompt", true}});
//
// Supported: {{ }}, {% if/elif/else %}, {% for a[, b] in x [if c] %} with loop.* (cycle() and
// changed() too; not recursive loops), else, break/continue, {% set %} (also ns.attr, a, b =
// and the block form), {% macro %} (varargs, kwargs), {% call %} blocks (caller(), with
// parameters; its body sees its call site's names), {% with %}, {% filter %} blocks, namespace(),
// range(), dict(), raise_exception(), strftime_now() (the globals resolve as names, so
// `strftime_now is defined` holds), string literals with Python's escapes, |safe strings that
// HTML-escape what `+` joins to them (jinja2's Markup), attributes of undefined values raising
// as jinja2's Undefined does, the filters and tests of jinja_filters.cpp and jinja_tests.cpp, and the str,
// list and dict methods templates call (strip, split, startswith, count, items, get, ...),
// printf-style `text % args`, |format and str.format() (python_format.h).
// The source is read as jinja2's lexer reads it (line breaks normalized, the last one dropped).
// Values follow Python: bool is an int (True == 1, True + 1), strings index, slice and iterate
// by character, casing, whitespace and repr() are Unicode's as Python has them (python_str.h),
// `**` groups as in jinja2, floats floor-divide and round as CPython does.
// Not supported: dict literals with non-string keys (Seed-OSS's thinking budgets), integers
// beyond 64 bits (an error where Python would make a big int), tuples (a tuple is a list: it
// prints as [..], not (..); `text % (a, b)` still takes a tuple literal's items as its
// arguments, python_format.h; groupby's (grouper, list) pairs have .grouper and .list), the
// pprint, random, striptags and urlize filters (an error naming the filter), and
// macros read the names of the scope they are called from (jinja2: only the template's own
// and their parameters). jinja2's lazy values print differently:
// dict.items(), range(), |reverse, |batch and |slice without |list print as lists here (jinja2:
// dict_items(...), range(0, 3) or an iterator's repr), and a list that holds jinja2's Undefined
// (map(attribute=) over items without it) holds "" here (it renders, joins and tests false the
// same). Lenient where jinja2 raises: |indent and |int of values that are not text.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "lib/chat/jinja_ast.h"

namespace oxi::jinja {

class Template {
 public:
  explicit Template(std::string_view source);
  // Throws oxi::Error("chat template", ...) for raise_exception() and evaluation errors.
  std::string render(const Json& context) const;

 private:
  std::shared_ptr<const Body> body_;
};

}  // namespace oxi::jinja
