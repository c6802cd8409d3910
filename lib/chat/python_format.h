// Python's printf-style formatting, `text % args`, which templates reach through the `%`
// operator on a string and jinja2's |format filter: %s %r %a %d %i %u %x %X %o %e %E %f %F %g
// %G %c %%, the flags # 0 - + and space, width and precision (also `*`), and %(key)s against a
// dict. The results are Python's, including its differences from C's printf (%#o gives 0o17,
// %#x of 0 gives 0x0, %.2s counts characters, inf and nan print as Python prints them). Widths
// and precisions above 100000 are refused (Python takes any), like the renderer's other bounds.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "lib/chat/jinja_value.h"

namespace oxi::jinja {

// Python's name of v's type, as its error messages spell it (NoneType, bool, int, float, str,
// list, dict; Undefined for a missing value).
std::string python_type(const Value& v);

// Python's TypeError / ValueError / KeyError of `%`, with Python's message.
struct PercentFormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// fmt % args: `args` the values a tuple holds; `mapping` the dict for %(key)s when the right
// operand is a dict (then args is that one dict and unused arguments are no error).
std::string percent_format(std::string_view fmt, const std::vector<Value>& args,
                           const Json* mapping);

// text.format(*args, **kwargs): {} / {0} / {name} fields with .attr / [key] lookups (a dict's
// attribute is its item, as jinja2's sandbox resolves it), !s / !r / !a, and format specs
// [[fill]align][sign][#][0][width][,|_][.precision][type] (nested {} fields in the spec) for
// text, ints, bools and floats (also Python's own form of a float with a precision and no
// type); None, lists and dicts only with an empty spec.
std::string brace_format(std::string_view fmt, const std::vector<Value>& args,
                         const std::map<std::string, Value>& kwargs);

}  // namespace oxi::jinja
