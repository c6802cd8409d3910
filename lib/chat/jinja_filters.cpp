// jinja2's builtin filters and transformers' tojson: Renderer::filter (jinja_renderer.h).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "lib/chat/jinja_renderer.h"
#include "lib/chat/jinja_text_filters.h"
#include "lib/chat/python_format.h"
#include "lib/chat/python_str.h"

namespace oxi::jinja {

int64_t Renderer::length_of(const Value& v, int line) {
  if (v.is_undefined()) return 0;
  if (v.kind == Value::Kind::data) {
    if (v.data.is_string())
      return static_cast<int64_t>(py::length(v.data.get_ref<const std::string&>()));
    if (v.data.is_array() || v.data.is_object()) return static_cast<int64_t>(v.data.size());
  }
  eval_error(line, "object of type " + type_name(v) + " has no length");
}

Value Renderer::apply_filter(const Expr& e) {
  return filter(e.name, eval(*e.a), eval_args(e), e.line);
}

Value Renderer::filter(const std::string& f, const Value& v, const Args& args, int line) {
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
      indentation.assign(static_cast<size_t>(std::clamp<int64_t>(int_value(width->data), 0, 4096)),
                         ' ');
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
    if (v.is_string() || (v.kind == Value::Kind::data && !v.data.is_array() && !v.data.is_object()))
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
      if (!bytes) eval_error(line, "could not convert string to float: " + to_python_repr(v.data));
    }
    if (!bytes)
      eval_error(
          line, "float() argument must be a string or a real number, not '" + python_type(v) + "'");
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

}  // namespace oxi::jinja
