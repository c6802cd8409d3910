// The str, list and dict methods templates call (x.strip(), x.items(), ...), as Python has
// them: Renderer::call_method (jinja_renderer.h).
#include <algorithm>
#include <string>
#include <vector>

#include "lib/chat/jinja_renderer.h"
#include "lib/chat/python_format.h"
#include "lib/chat/python_str.h"

namespace oxi::jinja {

Value Renderer::call_method(const Value& obj, const std::string& name, const Args& args, int line) {
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
      if (fill && (!fill->is_string() || py::length(fill->data.get_ref<const std::string&>()) != 1))
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
        return Value::of(name == "partition" ? Json::array({s, "", ""}) : Json::array({"", "", s}));
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

}  // namespace oxi::jinja
