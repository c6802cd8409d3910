// The interpreter behind jinja::Template (jinja.h), internal to lib/chat: the Renderer's
// state and members, defined by part in jinja_render.cpp (statements, expressions, calls),
// jinja_methods.cpp (the str, list and dict methods), jinja_filters.cpp (the builtin filters)
// and jinja_tests.cpp (the builtin tests); the Python value rules they share
// (jinja_python_ops.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/chat/jinja_ast.h"
#include "lib/chat/jinja_value.h"

namespace oxi::jinja {

[[noreturn]] void eval_error(int line, const std::string& message);

enum class Flow { normal, break_, continue_ };

// Templates come from model files, so what one render may do is bounded: a hostile or broken
// template fails with an error instead of running out of memory, stack or time. Real chat
// templates stay far below (a conversation of thousands of messages takes a few passes).
inline constexpr size_t kMaxText = size_t{64} << 20;  // bytes of any string or of the output
inline constexpr int64_t kMaxSteps = 1'000'000;       // loop iterations and macro calls, all told
inline constexpr int kMaxMacroDepth = 100;
// jinja2's sandbox (MAX_RANGE) refuses larger ranges
inline constexpr int64_t kMaxRange = 100'000;

// Python's value rules (jinja_python_ops.cpp).

std::string type_name(const Value& v);
bool is_int(const Json& j);

// Python's bool is an int: True == 1, True + 1 == 2, -True == -1, False < 1.
bool is_int_like(const Json& j);
bool is_number_like(const Json& j);
int64_t int_value(const Json& j);
double float_value(const Json& j);

// An argument that must be an int (a bool counts): its value, `dflt` when absent or none.
int64_t int_arg(const Value* v, int64_t dflt, const char* what, int line);

// text % items (python_format.h), Python's error as the template's.
std::string percent_format_or_error(const std::string& text, const std::vector<Value>& items,
                                    const Json* mapping, int line);

// Python's divmod of ints (y != 0): the quotient floored toward negative infinity, the
// remainder with the divisor's sign.
std::pair<int64_t, int64_t> python_int_divmod(int64_t x, int64_t y);

// A key that sort, min, max, unique and dictsort compare: a string lowercased unless
// case_sensitive (jinja2's ignore_case).
Value fold_case_key(Value key, bool case_sensitive);

// Python's divmod of floats (CPython's float_divmod): the remainder has the divisor's sign (a
// zero one too), the quotient is floored and corrected where fmod's remainder is exact.
std::pair<double, double> python_float_divmod(double x, double y);

// Python's round(x, digits): ints stay ints (rounded to tens for digits < 0), floats round to
// the nearest decimal of the exact binary value, ties to even (printf does the same).
Value python_round(const Json& x, int64_t digits);

// Python sequence index normalisation for slices.
Json slice_json(const Json& seq, const Value* start, const Value* stop, const Value* step_v,
                int line);

class Renderer {
 public:
  explicit Renderer(const Json& context);
  // A namespace may hold itself (set ns.me = ns): emptying every namespace of the render frees
  // such cycles, which reference counts alone would keep. None outlives the render.
  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;
  Flow exec_body(const Body& body, std::string& out);

 private:
  // ---- variables ----
  // Variables, then the environment's global functions (a variable of the same name hides one).
  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value v);

  // ---- statements ----
  Flow exec(const Stmt& s, std::string& out);
  void set_target(const Stmt& s, Value v);
  std::vector<Value> iterate(const Value& v, int line);
  void bind_targets(const Stmt& s, const Value& item);
  void exec_for(const Stmt& s, std::string& out);

  // ---- expressions ----
  // The value of e, which an attribute or item is taken from: jinja2's Undefined raises there
  // (a missing key reads as undefined; a key of that does not).
  Value defined(const Expr& e);
  Value eval(const Expr& e);

  // Undefined inside a container becomes None, as str() of an undefined in a list would fail
  // in jinja2 anyway; namespaces cannot be stored.
  static Json data_of(const Value& v, int line);
  Value get_attr(const Value& obj, const std::string& name);
  Value get_item(const Value& obj, const Value& key, int line);

  // jinja2's make_attrgetter: x's attribute `attribute`, where "a.b.0" looks up a, then b,
  // then item 0 (parts of digits are indices) and an int is an index; `dflt` (when given)
  // replaces an undefined step. A step from an undefined value fails, as in jinja2.
  Value attribute_of(const Value& x, const Value& attribute, const Value* dflt, int line);
  static inline const std::string kDot = ".";
  static int compare_values(const Value& a, const Value& b, int line);
  static bool equal_values(const Value& a, const Value& b);
  bool contains(const Value& hay, const Value& needle, int line);

  // seq * times (a str or a list repeated; none for times <= 0), bounded like any text.
  static Json repeat(const Json& seq, int64_t times, int line);

  // Python's a ** b: an int for ints with b >= 0, else a float (no complex results).
  static Value power(const Json& a, const Json& b, int line);
  Value binary(const Expr& e);

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
  Args eval_args(const Expr& e, size_t skip = 0);
  static std::string str_arg(const Value* v, const std::string& dflt);
  Value call(const Expr& e);
  Value call_macro(const Value& callee, const Args& args);
  // obj.name(args): the str, list and dict methods (jinja_methods.cpp).
  Value call_method(const Value& obj, const std::string& name, const Args& args, int line);

  // ---- filters (jinja_filters.cpp) and tests (jinja_tests.cpp) ----
  static int64_t length_of(const Value& v, int line);
  Value apply_filter(const Expr& e);

  // Filter f of v (jinja2's builtin filters and transformers' tojson).
  Value filter(const std::string& f, const Value& v, const Args& args, int line);
  bool apply_test(const Expr& e);
  bool run_test(const std::string& t, const Value& v, const std::vector<Value>& args, int line);
  // ---- limits (kMaxText, kMaxSteps) ----
  static void check_size(size_t bytes, int line);
  void step(int line);
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

}  // namespace oxi::jinja
