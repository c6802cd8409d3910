#include "lib/llm/json_schema_grammar.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/core/error.h"
#include "lib/llm/gbnf.h"
#include "lib/llm/int_range_gbnf.h"
#include "lib/llm/json_schema_intersect.h"
#include "lib/llm/regex_gbnf.h"

namespace oxi::llm {
namespace {

using gbnf::literal;

// The schema's own key order (properties come out in it, as llama.cpp's converter keeps it).
using json = nlohmann::ordered_json;

// The shared pieces of JSON, emitted once each when a schema uses them.
const std::map<std::string, std::string, std::less<>> kPrimitives = {
    {"space", "| \" \" | \"\\n\" [ \\t]{0,20}"},
    {"boolean", "(\"true\" | \"false\") space"},
    {"null", "\"null\" space"},
    {"integral", "\"0\" | [1-9] [0-9]{0,15}"},
    {"integer", "\"-\"? integral space"},
    {"number", "\"-\"? integral (\".\" [0-9]+)? ([eE] [-+]? [0-9]+)? space"},
    {"char", "[^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})"},
    {"string", "\"\\\"\" char* \"\\\"\" space"},
    {"value", "object | array | string | number | boolean | null"},
    {"object",
     "\"{\" space (string \":\" space value (\",\" space string \":\" space value)*)? \"}\" "
     "space"},
    {"array", "\"[\" space (value (\",\" space value)*)? \"]\" space"},
    // String formats (RFC 3339's full-date, full-time and date-time; RFC 4122's text form).
    {"format-date",
     "[0-9]{4} \"-\" (\"0\" [1-9] | \"1\" [0-2]) \"-\" (\"0\" [1-9] | [12] [0-9] | \"3\" [01])"},
    {"format-time",
     "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" ([0-5] [0-9] | \"60\") (\".\" [0-9]+)? "
     "([Zz] | [+-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])"},
    {"format-date-time", "format-date [Tt] format-time"},
    {"format-uuid",
     "[0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" "
     "[0-9a-fA-F]{12}"},
};
// What each primitive refers to.
const std::map<std::string, std::vector<std::string>, std::less<>> kUses = {
    {"boolean", {"space"}},
    {"null", {"space"}},
    {"integer", {"integral", "space"}},
    {"number", {"integral", "space"}},
    {"string", {"char", "space"}},
    {"value", {"object", "array", "string", "number", "boolean", "null"}},
    {"object", {"space", "string", "value"}},
    {"array", {"space", "value"}},
    {"format-date-time", {"format-date", "format-time"}},
};

// Keywords this converter turns into grammar.
const std::set<std::string, std::less<>> kHandled = {"type",
                                                     "properties",
                                                     "required",
                                                     "additionalProperties",
                                                     "items",
                                                     "prefixItems",
                                                     "minItems",
                                                     "maxItems",
                                                     "minLength",
                                                     "maxLength",
                                                     "enum",
                                                     "const",
                                                     "anyOf",
                                                     "oneOf",
                                                     "allOf",
                                                     "$ref",
                                                     "minimum",
                                                     "maximum",
                                                     "exclusiveMinimum",
                                                     "exclusiveMaximum",
                                                     "pattern"};
// The bounds keywords, which this converter takes on integers only.
const char* const kBounds[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};

// A rule name from a schema path: letters, digits and '-'.
std::string rule_name(std::string_view path) {
  std::string name;
  for (char c : path) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    name += word ? c : '-';
  }
  return name;
}

// {m,n} for a repetition, "" when it is exactly once; max < 0: unbounded.
std::string repeat(size_t min, long max) {
  if (max < 0 && min <= 1) return min == 0 ? "*" : "+";
  if (max == 1 && min <= 1) return min == 0 ? "?" : "";
  std::string braces = "{";
  braces += std::to_string(min);
  if (max < 0) {
    braces += ",";
  } else if (static_cast<size_t>(max) != min) {
    braces += ",";
    braces += std::to_string(max);
  }
  braces += "}";
  return braces;
}

class Converter {
 public:
  explicit Converter(const json& root) : root_(&root) {}

  // The rules, the schema's own named `root_rule`.
  std::string convert(const std::string& root_rule) {
    const std::string body = visit(*root_, "root");
    if (root_rule == "root") {
      define("root", body);
    } else {
      name_rule(root_rule, body);
    }
    return rules_text();
  }

  // Another schema's rules beside those made so far: its own rule `rule`, the rules of its
  // parts named from that (its $refs resolved within it), the JSON primitives shared.
  void add(const json& schema, const std::string& rule) {
    root_ = &schema;
    refs_.clear();  // "#/..." names another document now
    name_rule(rule, visit(schema, rule));
  }

  std::string rules_text() const {
    std::string out;
    for (const auto& [name, body_text] : rules_) out += name + " ::= " + body_text + "\n";
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& message) const {
    throw Error("json schema", where + ": " + message);
  }

  void name_rule(const std::string& rule, const std::string& body) {
    if (rules_.count(rule) || kPrimitives.count(rule))
      throw Error("json schema", "the rule name '" + rule + "' is taken");
    rules_[rule] = body;
  }

  void use(const std::string& primitive) {
    if (rules_.count(primitive)) return;
    rules_[primitive] = kPrimitives.at(primitive);
    if (const auto uses = kUses.find(primitive); uses != kUses.end())
      for (const std::string& u : uses->second) use(u);
  }

  // A rule of its own for `body`, named after `path` (made unique), returning its name.
  std::string define(const std::string& path, const std::string& body) {
    std::string name = rule_name(path);
    if (name != "root") {
      const std::string base = name;
      for (int i = 2; rules_.count(name) || kPrimitives.count(name); ++i)
        name = base + "-" + std::to_string(i);
    }
    rules_[name] = body;
    return name;
  }

  size_t count(const json& schema, const char* key, const std::string& where) const {
    const auto it = schema.find(key);
    if (it == schema.end()) return 0;
    if (!it->is_number_unsigned())
      fail(where, std::string(key) + " must be a non-negative integer");
    return it->get<size_t>();
  }
  long limit(const json& schema, const char* key, const std::string& where) const {
    return schema.contains(key) ? static_cast<long>(count(schema, key, where)) : -1;
  }

  // The grammar expression for `schema` at `where` (a path for names and messages).
  std::string visit(const json& schema, const std::string& where) {
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) fail(where, "the schema false matches nothing");
      use("value");
      return "value";
    }
    if (!schema.is_object()) fail(where, "a schema must be an object or a boolean");
    for (const auto& [key, unused] : schema.items())
      if (!is_annotation_keyword(key) && !kHandled.count(key))
        fail(where, "'" + key + "' is not supported");

    // allOf, and a $ref with other keywords beside it (which apply as well): the one schema
    // they all make (json_schema_intersect.h).
    if (schema.contains("allOf") ||
        (schema.contains("$ref") && schema_constraints(schema).size() > 1))
      return visit(intersect_schemas(json(true), schema, resolver(), where), where);
    if (const auto ref = schema.find("$ref"); ref != schema.end()) return reference(*ref, where);
    if (const auto c = schema.find("const"); c != schema.end())
      return literal(c->dump()) + " space";
    if (const auto e = schema.find("enum"); e != schema.end()) {
      if (!e->is_array() || e->empty()) fail(where, "enum must be a non-empty array");
      use("space");
      std::string alternatives;
      for (const json& v : *e)
        alternatives += (alternatives.empty() ? "" : " | ") + literal(v.dump());
      return "(" + alternatives + ") space";
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (const auto list = schema.find(key); list != schema.end()) {
        if (!list->is_array() || list->empty())
          fail(where, std::string(key) + " must be a non-empty array");
        // The keywords beside the list hold in every alternative.
        json beside = schema_constraints(schema);
        beside.erase(key);
        std::string alternatives;
        for (size_t i = 0; i < list->size(); ++i) {
          const std::string path = where + "-" + std::to_string(i);
          std::string body;
          if (beside.empty() && !(*list)[i].contains("allOf")) {
            body = visit((*list)[i], path);
          } else {
            json alternative;
            try {  // an alternative the keywords beside rule out is dropped
              alternative = intersect_schemas(beside, (*list)[i], resolver(), path);
            } catch (const SchemaMatchesNothing&) {
              continue;
            }
            body = visit(alternative, path);
          }
          alternatives += (alternatives.empty() ? "" : " | ") + define(path, body);
        }
        if (alternatives.empty())
          fail(where, std::string(key) + ": no alternative holds with the keywords beside it");
        return "(" + alternatives + ")";
      }
    }

    const auto type = schema.find("type");
    if (type == schema.end() && has_bounds(schema))
      fail(where, "minimum / maximum are supported with type integer only");
    if (type == schema.end()) {
      if (schema.contains("properties") || schema.contains("additionalProperties"))
        return object(schema, where);
      if (schema.contains("items") || schema.contains("prefixItems")) return array(schema, where);
      use("value");
      return "value";
    }
    if (type->is_array()) {
      std::string alternatives;
      for (const json& t : *type) {
        if (!t.is_string()) fail(where, "type must be a string or a list of them");
        json one = schema;
        one["type"] = t;
        alternatives += (alternatives.empty() ? "" : " | ") +
                        define(where + "-" + t.get<std::string>(), visit(one, where));
      }
      if (alternatives.empty()) fail(where, "type is an empty list");
      return "(" + alternatives + ")";
    }
    if (!type->is_string()) fail(where, "type must be a string or a list of them");
    const std::string t = type->get<std::string>();
    if (t == "object") return object(schema, where);
    if (t == "array") return array(schema, where);
    if (t == "string") return string(schema, where);
    if (t == "integer" && has_bounds(schema)) {
      use("space");
      return integer_range(schema, where) + " space";
    }
    if (t == "number" && has_bounds(schema))
      fail(where, "minimum / maximum are supported on integers only");
    if (t == "number" || t == "integer" || t == "boolean" || t == "null") {
      use(t);
      return t;
    }
    fail(where, "unknown type '" + t + "'");
  }

  static bool has_bounds(const json& schema) {
    return std::any_of(std::begin(kBounds), std::end(kBounds),
                       [&](const char* key) { return schema.contains(key); });
  }

  // minimum / maximum (inclusive) and exclusiveMinimum / exclusiveMaximum (a number, or as in
  // draft 4 true beside minimum / maximum) as the integers they leave.
  std::string integer_range(const json& schema, const std::string& where) const {
    std::optional<int64_t> lo, hi;
    const auto number = [&](const char* key) {
      const json& v = schema[key];
      if (!v.is_number()) fail(where, std::string(key) + " must be a number");
      const double d = v.get<double>();
      if (!(std::abs(d) < 9.0e15)) fail(where, std::string(key) + " is beyond the integers here");
      return d;
    };
    const auto raise = [&](int64_t v) { lo = lo ? std::max(*lo, v) : v; };
    const auto lower = [&](int64_t v) { hi = hi ? std::min(*hi, v) : v; };
    const auto exclusive = [&](const char* key) {
      return schema.contains(key) && schema[key].is_boolean() && schema[key].get<bool>();
    };
    if (schema.contains("minimum")) {
      const double m = number("minimum");
      raise(static_cast<int64_t>(exclusive("exclusiveMinimum") ? std::floor(m) + 1 : std::ceil(m)));
    }
    if (schema.contains("maximum")) {
      const double m = number("maximum");
      lower(static_cast<int64_t>(exclusive("exclusiveMaximum") ? std::ceil(m) - 1 : std::floor(m)));
    }
    if (schema.contains("exclusiveMinimum") && !schema["exclusiveMinimum"].is_boolean())
      raise(static_cast<int64_t>(std::floor(number("exclusiveMinimum")) + 1));
    if (schema.contains("exclusiveMaximum") && !schema["exclusiveMaximum"].is_boolean())
      lower(static_cast<int64_t>(std::ceil(number("exclusiveMaximum")) - 1));
    try {
      return int_range_gbnf(lo, hi);
    } catch (const Error&) {
      fail(where, "minimum / maximum leave no integer");
    }
  }

  // The schema a $ref names and a name for its rule: a JSON pointer into this schema after '#'
  // ("#", "#/$defs/NAME", "#/properties/a/items/0"), its tokens' %XX (URI fragment) and ~1 ~0
  // (RFC 6901) escapes undone.
  std::pair<const json*, std::string> definition(const std::string& target,
                                                 const std::string& where) const {
    const auto refuse = [&](const std::string& why) {
      fail(where, std::string("$ref '").append(target).append("': ").append(why));
    };
    if (!target.starts_with("#")) refuse("only references within the schema (#/...) are supported");
    std::string_view rest = std::string_view(target).substr(1);
    if (!rest.empty() && rest.front() != '/')
      refuse("anchors are not supported, only JSON pointers (#/...)");
    const json* at = root_;
    std::string name = "root";
    while (!rest.empty()) {
      rest.remove_prefix(1);
      const size_t end = std::min(rest.find('/'), rest.size());
      const std::string token = pointer_token(rest.substr(0, end), refuse);
      rest.remove_prefix(end);
      if (at->is_object() && at->contains(token)) {
        at = &(*at)[token];
      } else if (at->is_array() && !token.empty() && token.size() < 10 &&
                 token.find_first_not_of("0123456789") == std::string::npos &&
                 (token == "0" || token[0] != '0') && std::stoul(token) < at->size()) {
        at = &(*at)[std::stoul(token)];
      } else {
        refuse("names no definition ('" + token + "' is not in it)");
      }
      name = token;
    }
    return {at, name};
  }
  template <class Refuse>
  static std::string pointer_token(std::string_view raw, const Refuse& refuse) {
    std::string decoded;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '%') {
        decoded += raw[i];
        continue;
      }
      const auto hex = [&](size_t k) -> int {
        const char c = k < raw.size() ? raw[k] : '\0';
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        refuse("a % escape is not two hex digits");
        return 0;
      };
      decoded += static_cast<char>(hex(i + 1) * 16 + hex(i + 2));
      i += 2;
    }
    std::string token;
    for (size_t i = 0; i < decoded.size(); ++i) {
      if (decoded[i] != '~') {
        token += decoded[i];
      } else if (i + 1 < decoded.size() && (decoded[i + 1] == '0' || decoded[i + 1] == '1')) {
        token += decoded[++i] == '0' ? '~' : '/';
      } else {
        refuse("~ not followed by 0 or 1");
      }
    }
    return token;
  }
  SchemaRefResolver resolver() const {
    return [this](const std::string& target) -> const json& {
      return *definition(target, "$ref").first;
    };
  }

  std::string reference(const json& ref, const std::string& where) {
    if (!ref.is_string()) fail(where, "$ref must be a string");
    const std::string target = ref.get<std::string>();
    if (const auto it = refs_.find(target); it != refs_.end()) return it->second;
    const auto [schema, key] = definition(target, where);
    // Named before it is visited, so that a schema that refers to itself finds it.
    const std::string name = define("ref-" + key, "");
    refs_[target] = name;
    rules_[name] = visit(*schema, "ref-" + key);
    return name;
  }

  std::string string(const json& schema, const std::string& where) {
    use("space");
    if (const auto pattern = schema.find("pattern"); pattern != schema.end()) {
      if (!pattern->is_string()) fail(where, "pattern must be a string");
      if (schema.contains("minLength") || schema.contains("maxLength") || schema.contains("format"))
        fail(where, "pattern with minLength / maxLength / format is not supported");
      try {
        return "\"\\\"\" " + regex_gbnf(pattern->get<std::string>()) + " \"\\\"\" space";
      } catch (const Error& e) {
        fail(where, e.what());
      }
    }
    // The formats llama.cpp holds a reply to; the spec lets the others be ignored.
    if (const auto format = schema.find("format"); format != schema.end() && format->is_string()) {
      const std::string name = "format-" + format->get<std::string>();
      if (kPrimitives.count(name)) {
        if (schema.contains("minLength") || schema.contains("maxLength"))
          fail(where, "format '" + format->get<std::string>() +
                          "' with minLength / maxLength is not supported");
        use(name);
        return "\"\\\"\" " + name + " \"\\\"\" space";
      }
    }
    use("char");
    const size_t min = count(schema, "minLength", where);
    const long max = limit(schema, "maxLength", where);
    if (max >= 0 && static_cast<size_t>(max) < min) fail(where, "maxLength below minLength");
    if (min == 0 && max < 0) {
      use("string");
      return "string";
    }
    return "\"\\\"\" char" + repeat(min, max) + " \"\\\"\" space";
  }

  std::string array(const json& schema, const std::string& where) {
    use("space");
    const size_t min = count(schema, "minItems", where);
    const long max = limit(schema, "maxItems", where);
    if (max >= 0 && static_cast<size_t>(max) < min) fail(where, "maxItems below minItems");
    if (const auto prefix = schema.find("prefixItems"); prefix != schema.end()) {
      // A tuple: these items in order (items, if any, beyond them is not supported).
      if (!prefix->is_array()) fail(where, "prefixItems must be an array");
      if (schema.contains("items") && schema["items"] != json(false))
        fail(where, "items after prefixItems is not supported");
      std::string body = "\"[\" space";
      for (size_t i = 0; i < prefix->size(); ++i) {
        const std::string item = define(where + "-" + std::to_string(i),
                                        visit((*prefix)[i], where + "-" + std::to_string(i)));
        body += (i ? " \",\" space " : " ") + item;
      }
      return body + " \"]\" space";
    }
    std::string item = "value";
    if (const auto items = schema.find("items"); items != schema.end())
      item = define(where + "-item", visit(*items, where + "-item"));
    else
      use("value");
    if (max == 0) return "\"[\" space \"]\" space";
    const std::string rest =
        "(\",\" space " + item + ")" + repeat(min > 0 ? min - 1 : 0, max < 0 ? -1 : max - 1);
    const std::string list = item + " " + rest;
    return "\"[\" space " + (min > 0 ? list : "(" + list + ")?") + " \"]\" space";
  }

  std::string object(const json& schema, const std::string& where) {
    use("space");
    const auto props = schema.find("properties");
    const auto extra = schema.find("additionalProperties");
    if ((props == schema.end() || props->empty()) && extra == schema.end()) {
      use("object");
      return "object";
    }
    std::set<std::string> required;
    if (const auto r = schema.find("required"); r != schema.end()) {
      if (!r->is_array()) fail(where, "required must be an array");
      for (const json& name : *r) {
        if (!name.is_string()) fail(where, "required must list strings");
        if (props == schema.end() || !props->contains(name.get<std::string>()))
          fail(where, "required property '" + name.get<std::string>() + "' is not in properties");
        required.insert(name.get<std::string>());
      }
    }
    // Each property as "key": value, in the schema's order.
    std::vector<std::pair<std::string, bool>> kv;  // its rule, whether required
    if (props != schema.end()) {
      if (!props->is_object()) fail(where, "properties must be an object");
      for (const auto& [key, value] : props->items()) {
        const std::string path = where + "-" + key;
        const std::string value_rule = define(path, visit(value, path));
        kv.emplace_back(
            define(path + "-kv", literal(json(key).dump()) + " space \":\" space " + value_rule),
            required.count(key) > 0);
      }
    }
    std::string extra_kv;
    if (extra != schema.end() && *extra != json(false)) {
      std::string value = "value";
      if (*extra == json(true))
        use("value");
      else
        value = define(where + "-additional", visit(*extra, where + "-additional"));
      std::vector<std::string> names;
      if (props != schema.end())
        for (const auto& [key, unused] : props->items()) names.push_back(key);
      extra_kv =
          define(where + "-additional-kv", other_key(names, where) + " \":\" space " + value);
    }
    // first[i]: the properties from i on when none came before; after[i]: when some did, so
    // that each one present starts with a comma. Optional ones may be absent, required ones
    // not; other keys (additionalProperties) come after the named ones. "" stands for nothing.
    const size_t n = kv.size();
    std::vector<std::string> first(n + 1), after(n + 1);
    if (!extra_kv.empty()) {
      after[n] = define(where + "-after", "(\",\" space " + extra_kv + ")*");
      first[n] = define(where + "-first", "(" + extra_kv + " " + after[n] + ")?");
    }
    const auto then = [](const std::string& a, const std::string& b) {
      return b.empty() ? a : a + " " + b;
    };
    for (size_t i = n; i-- > 0;) {
      const auto& [name, needed] = kv[i];
      const std::string comma = then("\",\" space " + name, after[i + 1]);
      const std::string plain = then(name, after[i + 1]);
      const std::string index = std::to_string(i);
      after[i] = define(
          where + "-after-" + index,
          needed ? comma
                 : (after[i + 1].empty() ? "(" + comma + ")?" : comma + " | " + after[i + 1]));
      first[i] = define(
          where + "-first-" + index,
          needed ? plain
                 : (first[i + 1].empty() ? "(" + plain + ")?" : plain + " | " + first[i + 1]));
    }
    return then("\"{\" space", first[0]) + " \"}\" space";
  }

  // A key that is none of `names` (as llama.cpp's converter makes it): other keys come after
  // the named ones, so a named key there would repeat it or break the order. The names' plain
  // spelling is what is ruled out; a name that needs an escape in JSON is not (nor the other
  // spellings of a name, such as \u0061 for a).
  std::string other_key(const std::vector<std::string>& names, const std::string& where) {
    use("char");
    use("space");
    // The names as a trie of code points; `ends`: a name ends at this node.
    struct Node {
      std::map<char32_t, size_t> children;
      bool ends = false;
    };
    std::vector<Node> trie(1);
    for (const std::string& name : names) {
      if (std::any_of(name.begin(), name.end(), [](char c) {
            const auto u = static_cast<unsigned char>(c);
            return c == '"' || c == '\\' || u < 0x20 || u == 0x7F;
          }))
        continue;
      size_t node = 0;
      for (size_t i = 0; i < name.size();) {
        const char32_t cp = next_code_point(name, i);
        auto it = trie[node].children.find(cp);
        if (it == trie[node].children.end()) {
          it = trie[node].children.emplace(cp, trie.size()).first;
          trie.emplace_back();
        }
        node = it->second;
      }
      trie[node].ends = true;
    }
    if (trie.size() == 1 && !trie[0].ends) {
      use("string");
      return "string";
    }
    // Bottom up (children have larger indices): the rest of a key that, from this node on,
    // does not spell a name: a character no name has here then anything, or a child's
    // character then its rest; nothing more only where no name ends.
    std::vector<std::string> rest(trie.size());
    for (size_t n = trie.size(); n-- > 0;) {
      std::string other = "[^\"\\\\\\x7F\\x00-\\x1F";
      std::string branches;
      for (const auto& [cp, child] : trie[n].children) {
        other += class_char(cp);
        branches.append(" | ").append(literal_code_point(cp)).append(" ").append(rest[child]);
      }
      other += "]";
      const std::string body =
          "(" + other + " | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})) char*" + branches;
      rest[n] = define(where + "-other-key-" + std::to_string(n),
                       trie[n].ends ? body : "(" + body + ")?");
    }
    return "\"\\\"\" " + rest[0] + " \"\\\"\" space";
  }
  static char32_t next_code_point(const std::string& s, size_t& i) {
    const auto b = static_cast<unsigned char>(s[i]);
    const size_t len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    char32_t cp = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    for (size_t k = 1; k < len && i + k < s.size(); ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    i += len;
    return cp;
  }
  // A code point inside a GBNF class, as an escape (no character is special then).
  static std::string class_char(char32_t cp) {
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, cp > 0xFFFF ? "\\U%08X" : "\\u%04X",
                  static_cast<unsigned>(cp));
    return buffer;
  }
  static std::string literal_code_point(char32_t cp) {
    std::string one = "[";
    one.append(class_char(cp)).append("]");
    return one;
  }

  const json* root_;
  std::map<std::string, std::string> rules_;
  std::map<std::string, std::string> refs_;  // $ref target -> rule
};

}  // namespace

namespace {

json parse_schema(std::string_view schema) {
  try {
    return json::parse(schema);
  } catch (const json::exception& e) {  // a syntax error, or a number beyond double
    throw Error("json schema", std::string("not JSON: ") + e.what());
  }
}

// A schema that refers to itself before any JSON text ({"anyOf": [{"$ref": "#"}...]}) makes a
// left-recursive grammar: refused here, saying why, rather than by whoever parses it. A grammar
// for another's use has no root of its own: checked with one that refers to `rule`.
void check_grammar(const std::string& grammar, const std::string& rule) {
  try {
    (void)gbnf::Grammar::parse(rule == "root" ? grammar : grammar + "root ::= " + rule + "\n");
  } catch (const Error& e) {
    throw Error("json schema", std::string("its grammar is refused (a $ref that comes back to "
                                           "itself before any JSON text?): ") +
                                   e.what());
  }
}

}  // namespace

std::string json_schema_to_gbnf(std::string_view schema, const std::string& root_rule) {
  const json parsed = parse_schema(schema);
  std::string grammar;
  try {
    grammar = Converter(parsed).convert(root_rule);
  } catch (const json::exception& e) {  // a keyword's value of a type the converter did not check
    throw Error("json schema", std::string("unexpected value: ") + e.what());
  }
  check_grammar(grammar, root_rule);
  return grammar;
}

std::string json_schemas_to_gbnf(
    const std::vector<std::pair<std::string, std::string>>& named_schemas) {
  std::vector<json> parsed;
  for (const auto& [rule, schema] : named_schemas) parsed.push_back(parse_schema(schema));
  if (parsed.empty()) return "";
  Converter converter(parsed[0]);
  try {
    for (size_t i = 0; i < parsed.size(); ++i) converter.add(parsed[i], named_schemas[i].first);
  } catch (const json::exception& e) {
    throw Error("json schema", std::string("unexpected value: ") + e.what());
  }
  const std::string grammar = converter.rules_text();
  std::string any = "root ::= ";
  for (size_t i = 0; i < named_schemas.size(); ++i)
    any += (i ? " | " : "") + named_schemas[i].first;
  check_grammar(grammar + any + "\n", "root");
  return grammar;
}

}  // namespace oxi::llm
