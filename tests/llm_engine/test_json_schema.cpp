// JSON Schema to GBNF: for each schema, instances generated from it (compact JSON, keys in the
// schema's order) and one-character edits of them; the grammar must take exactly those that a
// validator written here from the JSON Schema rules accepts (and whose named keys keep the
// schema's order, the grammar's contract). Then the errors for what is not supported.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/core/error.h"
#include "lib/llm/gbnf.h"
#include "lib/llm/grammar_matcher.h"
#include "lib/llm/int_range_gbnf.h"
#include "lib/llm/json_schema_grammar.h"
#include "lib/llm/regex_gbnf.h"
#include "tests/common/byte_edits.h"

namespace oxi::llm::test {
namespace {

using json = nlohmann::ordered_json;

// The schema a $ref names (through a chain of them), else the schema itself: "#" and a JSON
// pointer, read by nlohmann's json_pointer once the URI's %XX escapes are undone.
const json& resolve(const json& root, const json& schema) {
  if (!schema.is_object() || !schema.contains("$ref")) return schema;
  const std::string ref = schema["$ref"];
  std::string pointer;
  for (size_t i = 1; i < ref.size(); ++i) {
    if (ref[i] != '%') {
      pointer += ref[i];
      continue;
    }
    pointer += static_cast<char>(std::stoi(ref.substr(i + 1, 2), nullptr, 16));
    i += 2;
  }
  return resolve(root, root.at(json::json_pointer(pointer)));
}

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// JSON Schema's rules for the keywords the converter takes; objects' named keys must also come
// in the schema's order, before any other key.
bool valid(const json& root, const json& schema_in, const json& v) {
  const json& schema = resolve(root, schema_in);
  if (schema.is_boolean()) return schema.get<bool>();
  if (schema.contains("const")) return v == schema["const"];
  if (schema.contains("enum")) {
    for (const json& e : schema["enum"])
      if (v == e) return true;
    return false;
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    if (schema.contains(key)) {
      for (const json& s : schema[key])
        if (valid(root, s, v)) return true;
      return false;
    }
  }
  if (schema.contains("type")) {
    const json& t = schema["type"];
    if (t.is_array()) {
      for (const json& one : t) {
        json s = schema;
        s["type"] = one;
        if (valid(root, s, v)) return true;
      }
      return false;
    }
    const std::string type = t;
    if (type == "null") return v.is_null();
    if (type == "boolean") return v.is_boolean();
    if (type == "integer") {
      if (!v.is_number_integer()) return false;
      const auto n = v.get<int64_t>();
      const auto bound = [&](const char* key) { return schema[key].get<double>(); };
      const auto flag = [&](const char* key) {
        return schema.contains(key) && schema[key].is_boolean() && schema[key].get<bool>();
      };
      if (schema.contains("minimum") &&
          (flag("exclusiveMinimum") ? n <= bound("minimum") : n < bound("minimum")))
        return false;
      if (schema.contains("maximum") &&
          (flag("exclusiveMaximum") ? n >= bound("maximum") : n > bound("maximum")))
        return false;
      if (schema.contains("exclusiveMinimum") && schema["exclusiveMinimum"].is_number() &&
          n <= bound("exclusiveMinimum"))
        return false;
      if (schema.contains("exclusiveMaximum") && schema["exclusiveMaximum"].is_number() &&
          n >= bound("exclusiveMaximum"))
        return false;
      return true;
    }
    if (type == "number") return v.is_number();
    if (type == "string") {
      if (!v.is_string()) return false;
      const size_t n = code_points(v.get<std::string>());
      return n >= schema.value("minLength", size_t{0}) &&
             (!schema.contains("maxLength") || n <= schema["maxLength"].get<size_t>());
    }
    if (type == "array" && !v.is_array()) return false;
    if (type == "object" && !v.is_object()) return false;
  }
  if (v.is_array() && (schema.contains("items") || schema.contains("prefixItems") ||
                       schema.value("type", "") == "array")) {
    if (schema.contains("prefixItems")) {
      const json& p = schema["prefixItems"];
      if (v.size() != p.size()) return false;
      for (size_t i = 0; i < v.size(); ++i)
        if (!valid(root, p[i], v[i])) return false;
      return true;
    }
    if (v.size() < schema.value("minItems", size_t{0})) return false;
    if (schema.contains("maxItems") && v.size() > schema["maxItems"].get<size_t>()) return false;
    for (const json& item : v)
      if (!valid(root, schema.value("items", json(true)), item)) return false;
    return true;
  }
  if (v.is_object() && (schema.contains("properties") || schema.contains("additionalProperties") ||
                        schema.value("type", "") == "object")) {
    const json props = schema.value("properties", json::object());
    const json extra = schema.contains("additionalProperties")
                           ? schema["additionalProperties"]
                           : json(props.empty());  // llama.cpp: none unless given
    size_t next_named = 0;  // named keys in the schema's order, other keys after them
    bool other_seen = false;
    std::vector<std::string> names;
    for (const auto& [k, unused] : props.items()) names.push_back(k);
    for (const auto& [key, value] : v.items()) {
      const auto at = std::find(names.begin(), names.end(), key);
      if (at != names.end()) {
        const size_t index = static_cast<size_t>(at - names.begin());
        if (other_seen || index < next_named) return false;
        next_named = index + 1;
        if (!valid(root, props[key], value)) return false;
      } else {
        other_seen = true;
        if (extra == json(false) || !valid(root, extra, value)) return false;
      }
    }
    for (const json& r : schema.value("required", json::array()))
      if (!v.contains(r.get<std::string>())) return false;
    return true;
  }
  return true;  // {} and the like
}

// An instance of `schema` (mostly valid: the edits make the invalid ones).
json generate(const json& root, const json& schema_in, std::mt19937& rng, int depth) {
  const json& schema = resolve(root, schema_in);
  static const char* const kChars[] = {"a", "Z", " ", "\"", "\\", "\n", "/", "\xC3\xA9", "1"};
  const auto string_of = [&](size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += kChars[rng() % std::size(kChars)];
    return s;
  };
  if (schema.is_boolean() || schema.empty()) {
    switch (rng() % 4) {
      case 0:
        return static_cast<int>(rng() % 100);
      case 1:
        return string_of(rng() % 4);
      case 2:
        return json::array({1, "x"});
      default:
        return nullptr;
    }
  }
  if (schema.contains("const")) return schema["const"];
  if (schema.contains("enum")) return schema["enum"][rng() % schema["enum"].size()];
  for (const char* key : {"anyOf", "oneOf"})
    if (schema.contains(key)) {
      const json& list = schema[key];
      const size_t pick = depth > 3 ? list.size() - 1 : rng() % list.size();
      return generate(root, list[pick], rng, depth + 1);
    }
  std::string type = "object";
  if (schema.contains("type")) {
    const json& t = schema["type"];
    type = t.is_array() ? t[rng() % t.size()].get<std::string>() : t.get<std::string>();
  } else if (schema.contains("items") || schema.contains("prefixItems")) {
    type = "array";
  }
  if (type == "null") return nullptr;
  if (type == "boolean") return rng() % 2 == 0;
  if (type == "integer") {  // around the bounds where there are some
    const auto bound = [&](const char* inclusive, const char* exclusive, double fallback) {
      if (schema.contains(inclusive)) return schema[inclusive].get<double>();
      if (schema.contains(exclusive) && schema[exclusive].is_number())
        return schema[exclusive].get<double>();
      return fallback;
    };
    const double lo = bound("minimum", "exclusiveMinimum", -1000.0);
    const double hi = bound("maximum", "exclusiveMaximum", lo + 2000.0);
    const auto from = static_cast<int64_t>(std::floor(std::min(lo, hi))) - 3;
    return from + static_cast<int64_t>(rng() % static_cast<uint64_t>(std::abs(hi - lo) + 7));
  }
  if (type == "number")
    return std::ldexp(static_cast<double>(rng() % 20000) - 10000, -static_cast<int>(rng() % 8));
  if (type == "string") {
    const size_t min = schema.value("minLength", size_t{0});
    const size_t max = schema.value("maxLength", min + 5);
    return string_of(min + rng() % (max - min + 1));
  }
  if (type == "array") {
    json a = json::array();
    if (schema.contains("prefixItems")) {
      for (const json& s : schema["prefixItems"]) a.push_back(generate(root, s, rng, depth + 1));
      return a;
    }
    const size_t min = schema.value("minItems", size_t{0});
    const size_t max = schema.value("maxItems", min + 3);
    for (size_t n = min + rng() % (max - min + 1); n > 0; --n)
      a.push_back(generate(root, schema.value("items", json(true)), rng, depth + 1));
    return a;
  }
  json o = json::object();
  const json props = schema.value("properties", json::object());
  const json required = schema.value("required", json::array());
  for (const auto& [key, s] : props.items()) {
    const bool needed = std::find(required.begin(), required.end(), key) != required.end();
    if (needed || rng() % 2 == 0) o[key] = generate(root, s, rng, depth + 1);
  }
  if (schema.contains("additionalProperties") && schema["additionalProperties"] != json(false))
    for (size_t n = rng() % 3; n > 0; --n)
      o["x" + std::to_string(rng() % 5)] =
          generate(root, schema["additionalProperties"], rng, depth + 1);
  return o;
}

// One structural change somewhere in v: a key removed, added or moved to the end, an array
// item removed or repeated, a string emptied or lengthened, another value replaced by null. Returns
// whether it changed anything.
bool mutate(json& v, std::mt19937& rng) {
  if (v.is_object() && !v.empty() && rng() % 2 == 0) {
    auto it = v.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(rng() % v.size()));
    if (mutate(it.value(), rng)) return true;
  }
  if (v.is_array() && !v.empty() && rng() % 2 == 0 && mutate(v[rng() % v.size()], rng)) return true;
  if (v.is_object()) {
    switch (rng() % 3) {
      case 0:
        if (v.empty()) return false;
        v.erase(std::next(v.begin(), static_cast<std::ptrdiff_t>(rng() % v.size())).key());
        return true;
      case 1:
        v["zz"] = 1;
        return true;
      default: {
        if (v.size() < 2) return false;
        const std::string key = v.begin().key();
        json moved = v[key];
        v.erase(key);
        v[key] = moved;  // now last
        return true;
      }
    }
  }
  if (v.is_array()) {
    if (v.empty()) return false;
    if (rng() % 2 == 0)
      v.erase(v.begin() + static_cast<std::ptrdiff_t>(rng() % v.size()));
    else
      v.push_back(v[0]);
    return true;
  }
  if (v.is_string()) {  // emptied or lengthened past a maxLength
    v = rng() % 2 == 0 ? json("") : json(v.get<std::string>() + "abcdefghij");
    return true;
  }
  v = nullptr;
  return true;
}

// Whether some object in `text` (valid JSON) names a key twice. Such texts are not compared:
// a parser keeps one of the values, the grammar takes each named key once but cannot tell
// other keys apart (RFC 8259: names SHOULD be unique).
bool has_duplicate_keys(const std::string& text) {
  std::vector<std::set<std::string>> open;
  bool duplicate = false;
  [[maybe_unused]] const json parsed_all = json::parse(text, [&](int, json::parse_event_t event,
                                                                 json& parsed) {
    if (event == json::parse_event_t::object_start) open.emplace_back();
    if (event == json::parse_event_t::object_end) open.pop_back();
    if (event == json::parse_event_t::key && !open.back().insert(parsed.get<std::string>()).second)
      duplicate = true;
    return true;
  });
  return duplicate;
}

bool grammar_takes(const std::shared_ptr<const gbnf::Grammar>& grammar, const std::string& text) {
  GrammarMatcher m(grammar);
  if (!m.accepts(text)) return false;
  m.accept(text);
  return m.can_end();
}

const char* const kSchemas[] = {
    R"({"type": "object", "properties": {"name": {"type": "string", "minLength": 1,
        "maxLength": 8}, "age": {"type": "integer"}, "tags": {"type": "array", "items":
        {"type": "string"}, "maxItems": 3}, "ok": {"type": "boolean"}},
        "required": ["name", "age"], "title": "a person", "description": "ignored"})",
    R"({"type": "array", "items": {"anyOf": [{"type": "number"}, {"type": "null"},
        {"enum": ["a", "b", 3]}]}, "minItems": 1, "maxItems": 4})",
    R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
        "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
        "required": ["v", "next"]}}, "$ref": "#/$defs/node"})",
    R"({"type": "object", "properties": {"a": {"const": "x"}, "b": {"type": ["string", "null"]}},
        "additionalProperties": {"type": "integer"}})",
    R"({"type": "object", "additionalProperties": false, "properties": {"p": {"type": "number"},
        "q": {"type": "number", "format": "float"}, "r": {"type": "number"}}})",
    R"({"type": "array", "prefixItems": [{"type": "string", "maxLength": 2}, {"type": "integer"}]})",
    R"({"definitions": {"pair": {"type": "array", "items": {"type": "integer"}, "minItems": 2,
        "maxItems": 2}}, "type": "object", "properties": {"z": {"$ref": "#/definitions/pair"},
        "a": {"oneOf": [{"type": "string", "maxLength": 0}, {"type": "boolean"}]}},
        "required": ["a"]})",
    R"({"type": "array", "items": {"type": "integer"}})",
    // $ref as a JSON pointer: the root itself, into properties and arrays, ~1 ~0 and %XX escapes,
    // a chain of references.
    R"({"type": "object", "properties": {"v": {"type": "integer"}, "kids": {"type": "array",
        "items": {"$ref": "#"}, "maxItems": 2}}, "required": ["v"]})",
    R"({"type": "object", "properties": {"a/b": {"type": "string", "maxLength": 2}, "m~n":
        {"type": "array", "prefixItems": [{"type": "boolean"}, {"type": "integer", "minimum": 1,
        "maximum": 3}]}, "c": {"$ref": "#/properties/a~1b"}, "d": {"$ref":
        "#/properties/m~0n/prefixItems/0"}, "e": {"$ref": "#/%24defs/x"}, "f": {"$ref":
        "#/$defs/y"}}, "required": ["c", "d"], "$defs": {"x": {"enum": ["p", 7]}, "y": {"$ref":
        "#/$defs/x"}}})",
    R"({"type": "array", "items": {"type": "string", "minLength": 2}, "minItems": 2})",
    R"({"type": "object", "properties": {"age": {"type": "integer", "minimum": 0,
        "maximum": 120}, "t": {"type": "integer", "exclusiveMinimum": -15.5,
        "exclusiveMaximum": 230}, "n": {"type": "integer", "maximum": -3}}})",
    R"({"type": "array", "items": {"type": "integer", "minimum": 7, "exclusiveMinimum": true},
        "maxItems": 3})",
    R"({})",
    R"({"type": "object"})",
    R"({"type": "object", "properties": {}, "additionalProperties": true})",
};

// Instances generated from `schema` and edits of them: `grammar` must take exactly those the
// validator accepts under `schema`.
void expect_exactly_the_valid_instances(const std::string& gbnf, const json& schema,
                                        std::mt19937& rng, const std::string& label) {
  std::shared_ptr<const gbnf::Grammar> grammar;
  ASSERT_NO_THROW(grammar = std::make_shared<const gbnf::Grammar>(gbnf::Grammar::parse(gbnf)))
      << gbnf;
  const std::string edits = "{}[],:\"0-.e nx\\";
  size_t taken = 0, refused = 0;
  for (int i = 0; i < 120; ++i) {
    const json value = generate(schema, schema, rng, 0);
    const std::string instance = value.dump();
    std::vector<std::string> texts = {instance};
    for (int m = 0; m < 3; ++m) {
      json changed = value;
      if (mutate(changed, rng)) texts.push_back(changed.dump());
    }
    for (int e = 0; e < 6; ++e) texts.push_back(oxi::test::edit_char(instance, edits, rng));
    for (const std::string& t : texts) {
      bool want = false;
      try {
        // The reply starts with its value (no space before it, as llama.cpp's grammars).
        if (has_duplicate_keys(t)) continue;
        want = !t.empty() && !std::isspace(static_cast<unsigned char>(t[0])) &&
               valid(schema, schema, json::parse(t));
      } catch (const json::out_of_range&) {
        continue;
      } catch (const json::parse_error&) {
      }
      ASSERT_EQ(grammar_takes(grammar, t), want) << label << "\ntext " << t << "\n" << gbnf;
      (want ? taken : refused) += 1;
    }
  }
  EXPECT_GT(taken, 100u) << label;
  EXPECT_GT(refused, 100u) << label;
}

TEST(JsonSchemaGrammar, TakesExactlyTheValidInstances) {
  std::mt19937 rng(19);
  for (const char* text : kSchemas) {
    std::string gbnf;
    ASSERT_NO_THROW(gbnf = json_schema_to_gbnf(text)) << text;
    expect_exactly_the_valid_instances(gbnf, json::parse(text), rng, std::string("schema ") + text);
  }
}

// allOf, and keywords beside anyOf or $ref: each schema's grammar takes exactly the instances of
// the one schema written here as their intersection by hand (JSON Schema's rules, and the
// converter's: named keys in the order they are first named, other keys only where some
// schema gives additionalProperties).
TEST(JsonSchemaGrammar, AllOfTakesTheIntersection) {
  const std::pair<const char*, const char*> cases[] = {
      // properties and required join
      {R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}},
          "required": ["a"]}, {"properties": {"b": {"type": "string", "maxLength": 3}}}]})",
       R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string",
          "maxLength": 3}}, "required": ["a"]})"},
      // a key named twice gets both schemas; bounds tighten; keywords beside allOf join too
      {R"({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}},
          "allOf": [{"properties": {"n": {"maximum": 9}, "s": {"type": "string"}},
          "required": ["s"]}, {"properties": {"n": {"type": "number", "minimum": 2}}}]})",
       R"({"type": "object", "properties": {"n": {"type": "integer", "minimum": 2,
          "maximum": 9}, "s": {"type": "string"}}, "required": ["s"]})"},
      // additionalProperties false drops the keys only the other names
      {R"({"allOf": [{"properties": {"a": {"type": "boolean"}}, "additionalProperties": false},
          {"properties": {"a": {}, "z": {"type": "null"}}}]})",
       R"({"properties": {"a": {"type": "boolean"}}, "additionalProperties": false})"},
      // an additionalProperties schema holds on the keys only the other names
      {R"({"allOf": [{"properties": {"a": {"type": "integer"}}, "additionalProperties":
          {"type": "integer", "maximum": 5}}, {"properties": {"b": {"type": ["integer",
          "string"]}}, "required": ["b"]}]})",
       R"({"properties": {"a": {"type": "integer"}, "b": {"type": "integer", "maximum": 5}},
          "required": ["b"], "additionalProperties": {"type": "integer", "maximum": 5}})"},
      // a $ref among them, enums, arrays
      {R"({"$defs": {"base": {"type": "object", "properties": {"id": {"enum": [1, 2, "x",
          "y"]}}, "required": ["id"]}}, "allOf": [{"$ref": "#/$defs/base"}, {"properties":
          {"id": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"},
          "maxItems": 3}}}, {"properties": {"tags": {"minItems": 1, "items":
          {"maxLength": 2}}}}]})",
       R"({"type": "object", "properties": {"id": {"enum": ["x", "y"]}, "tags": {"type":
          "array", "items": {"type": "string", "maxLength": 2}, "minItems": 1,
          "maxItems": 3}}, "required": ["id"]})"},
      // keywords beside anyOf hold in each alternative
      {R"({"type": "string", "anyOf": [{"maxLength": 1}, {"minLength": 4, "maxLength": 5}]})",
       R"({"anyOf": [{"type": "string", "maxLength": 1}, {"type": "string", "minLength": 4,
          "maxLength": 5}]})"},
      // ... and beside $ref
      {R"({"$defs": {"p": {"type": "integer", "minimum": 0}}, "$ref": "#/$defs/p",
          "maximum": 20})",
       R"({"type": "integer", "minimum": 0, "maximum": 20})"},
      // integer within number, from either side
      {R"({"allOf": [{"type": ["number", "null"]}, {"type": ["string", "integer"]}]})",
       R"({"type": "integer"})"},
      // anyOf x anyOf: the pairs that can hold
      {R"({"allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"anyOf": [{"type":
          "number", "minimum": 3}, {"type": "string", "maxLength": 2}, {"type": "null"}]}]})",
       R"({"anyOf": [{"type": "integer", "minimum": 3}, {"type": "string", "maxLength": 2}]})"},
  };
  std::mt19937 rng(23);
  for (const auto& [text, merged] : cases) {
    std::string gbnf;
    ASSERT_NO_THROW(gbnf = json_schema_to_gbnf(text)) << text;
    expect_exactly_the_valid_instances(gbnf, json::parse(merged), rng,
                                       std::string("schema ") + text);
  }
}

// Other keys (additionalProperties) are never the named ones, which would repeat a key or come
// out of the schema's order: every key of up to 3 characters over the names' alphabet, as the
// one other key of an object, is taken exactly when it is none of the names.
TEST(JsonSchemaGrammar, OtherKeysAreNotTheNamedOnes) {
  const std::vector<std::string> names = {"ab", "ac", "b", "", "\xC3\xA9x"};
  json schema = {{"type", "object"},
                 {"properties", json::object()},
                 {"additionalProperties", {{"type", "integer"}}}};
  for (const std::string& n : names) schema["properties"][n] = {{"type", "string"}};
  const auto grammar = std::make_shared<const gbnf::Grammar>(
      gbnf::Grammar::parse(json_schema_to_gbnf(schema.dump())));
  std::vector<std::string> keys = {""};
  for (size_t start = 0, length = 0; length < 3; ++length) {
    const size_t end = keys.size();
    for (size_t i = start; i < end; ++i)
      for (const char* c : {"a", "b", "c", "x", "\xC3\xA9"}) keys.push_back(keys[i] + c);
    start = end;
  }
  size_t taken = 0;
  for (const std::string& key : keys) {
    const bool named = std::find(names.begin(), names.end(), key) != names.end();
    const std::string text = json({{key, 7}}).dump();
    EXPECT_EQ(grammar_takes(grammar, text), !named) << text;
    taken += !named;
  }
  EXPECT_GT(taken, 100u);
  EXPECT_TRUE(grammar_takes(grammar, R"({"ab":"s","b":"t","abc":1})"));
  EXPECT_FALSE(grammar_takes(grammar, R"({"b":"s","ab":1})"));  // "ab" comes before "b"
  EXPECT_FALSE(grammar_takes(grammar, R"({"b":"s","b":1})"));
}

TEST(JsonSchemaGrammar, SpacesAndLineBreaksBetweenTokens) {
  const std::string gbnf = json_schema_to_gbnf(
      R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})");
  const auto grammar = std::make_shared<const gbnf::Grammar>(gbnf::Grammar::parse(gbnf));
  EXPECT_TRUE(grammar_takes(grammar, "{\"a\":1}"));
  EXPECT_TRUE(grammar_takes(grammar, "{ \"a\": 1 }"));
  EXPECT_TRUE(grammar_takes(grammar, "{\n  \"a\": 1\n}"));
  EXPECT_FALSE(grammar_takes(grammar, "{  \"a\":1}"));  // one space, or a line break
  EXPECT_FALSE(grammar_takes(grammar, "{\"a\":1.5}"));
  EXPECT_FALSE(grammar_takes(grammar, "{}"));
}

// Integer ranges against every integer of -2500..2500 (and a few longer, "-0", leading zeros):
// the grammar takes exactly those in the range, in JSON's form.
TEST(IntRangeGrammar, TakesExactlyTheRange) {
  const std::optional<int64_t> open;
  const std::pair<std::optional<int64_t>, std::optional<int64_t>> ranges[] = {
      {0, 120},   {1, 9},      {7, 7},       {-15, 230},  {-999, -100}, {-1200, -1},
      {10, 1999}, {99, 1000},  {0, 0},       {-5, 5},     {open, -3},   {-3, open},
      {42, open}, {open, 709}, {open, open}, {1001, 2000}};
  for (const auto& [lo, hi] : ranges) {
    const std::string text = "root ::= " + int_range_gbnf(lo, hi);
    const auto grammar = std::make_shared<const gbnf::Grammar>(gbnf::Grammar::parse(text));
    const auto takes = [&](const std::string& s) { return grammar_takes(grammar, s); };
    for (int64_t v = -2500; v <= 2500; ++v) {
      const bool in = (!lo || v >= *lo) && (!hi || v <= *hi);
      ASSERT_EQ(takes(std::to_string(v)), in) << text << " on " << v;
    }
    const bool zero = (!lo || *lo <= 0) && (!hi || *hi >= 0);
    EXPECT_EQ(takes("-0"), zero) << text;
    EXPECT_FALSE(takes("007")) << text;
    EXPECT_FALSE(takes("")) << text;
    EXPECT_FALSE(takes("-")) << text;
    EXPECT_EQ(takes("1234567890123456"), !hi) << text;  // 16 digits where the range is open
    EXPECT_FALSE(takes("12345678901234567")) << text;   // 17: beyond the plain integers too
  }
  EXPECT_THROW(int_range_gbnf(3, 2), Error);
}

// The string formats against regular expressions of RFC 3339's full-date, full-time and
// date-time and of RFC 4122's UUID text, on random near-miss strings and their edits.
TEST(JsonSchemaGrammar, StringFormatsFollowTheirRfcs) {
  const std::string date = R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]))";
  const std::string time =
      R"(([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d))";
  const std::pair<const char*, std::string> formats[] = {
      {"date", date},
      {"time", time},
      {"date-time", date + "[Tt]" + time},
      {"uuid", "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"}};
  std::mt19937 rng(23);
  const auto digits = [&](int n, int below) {
    std::string d = std::to_string(rng() % below);
    return std::string(n - std::min<int>(n, d.size()), '0') + d;
  };
  const auto sample = [&](const std::string& format) -> std::string {
    const std::string day = digits(4, 10000) + "-" + digits(2, 14) + "-" + digits(2, 33);
    const std::string offsets[] = {"Z", "z", "+" + digits(2, 25) + ":" + digits(2, 61), "-05:30"};
    std::string clock = digits(2, 25) + ":" + digits(2, 61) + ":" + digits(2, 62);
    if (rng() % 2) clock += "." + digits(1 + rng() % 3, 1000);
    clock += offsets[rng() % 4];
    if (format == "date") return day;
    if (format == "time") return clock;
    if (format == "date-time") return day + (rng() % 2 ? "T" : "t") + clock;
    std::string uuid;
    for (int group : {8, 4, 4, 4, 12}) {
      if (!uuid.empty()) uuid += "-";
      for (int i = 0; i < group; ++i) uuid += "0123456789abcdefABCDEFg"[rng() % 23];
    }
    return uuid;
  };
  for (const auto& [format, regex] : formats) {
    const std::string gbnf =
        json_schema_to_gbnf(R"({"type": "string", "format": ")" + std::string(format) + "\"}");
    const auto grammar = std::make_shared<const gbnf::Grammar>(gbnf::Grammar::parse(gbnf));
    const std::regex re(regex);
    size_t valid = 0, invalid = 0;
    for (int i = 0; i < 400; ++i) {
      const std::string s = sample(format);
      for (const std::string& t : {s, oxi::test::edit_char(s, "0123456789-:.TZz+aF", rng)}) {
        const bool want = std::regex_match(t, re);
        ASSERT_EQ(grammar_takes(grammar, "\"" + t + "\""), want) << format << " " << t;
        (want ? valid : invalid) += 1;
      }
    }
    EXPECT_GT(valid, 50u) << format;
    EXPECT_GT(invalid, 50u) << format;
  }
  // Other formats are annotations: any string.
  const auto email = std::make_shared<const gbnf::Grammar>(
      gbnf::Grammar::parse(json_schema_to_gbnf(R"({"type": "string", "format": "email"})")));
  EXPECT_TRUE(grammar_takes(email, "\"not an address\""));
}

// Patterns against std::regex (ECMAScript, as JSON Schema's patterns are) on every string of
// up to 3 characters over an alphabet with JSON's escaped characters, and random longer ones;
// the grammar reads the string as JSON writes it (nlohmann::json's dump).
TEST(RegexGrammar, MatchesWhatEcmaScriptMatches) {
  const char* const kPatterns[] = {R"(^[A-Z]{2}-\d{3}$)",
                                   R"(^(a|bc)+\.?$)",
                                   R"(^[^"\\]*$)",
                                   R"(^.{2,4}$)",
                                   R"(^\s*\w+\s*$)",
                                   "^(?:x|y\\n)*\"$",
                                   R"(^[\d\-]{1,3}[^\w\s]?$)",
                                   R"(^a{2}b{1,}c?$)",
                                   R"(^\\[a-c]\t$)",
                                   R"(^(ab|a)(c|bcd)$)",
                                   R"(^$)",
                                   R"(^\u0041[\x20-\x7e]+?$)",
                                   R"(^[a{]{2}$)"};
  std::mt19937 rng(29);
  std::vector<std::string> strings =
      oxi::test::strings_over("aAbBcdxy1- .\"\\\n\r\t_{", 3, 2000, 4, 8, rng);
  for (int i = 0; i < 1000; ++i)
    strings.push_back(std::string("AB-").append(std::to_string(rng() % 2000)));
  for (const char* pattern : kPatterns) {
    const std::string gbnf = "root ::= \"\\\"\" " + regex_gbnf(pattern) + " \"\\\"\"";
    const auto grammar = std::make_shared<const gbnf::Grammar>(gbnf::Grammar::parse(gbnf));
    const std::regex re(pattern);
    size_t matched = 0;
    for (const std::string& s : strings) {
      const bool want = std::regex_search(s, re);
      matched += want;
      ASSERT_EQ(grammar_takes(grammar, json(s).dump()), want)
          << pattern << " on " << json(s).dump() << "\n"
          << gbnf;
    }
    EXPECT_GT(matched, 0u) << pattern;
  }
  for (const auto& [pattern, message] : std::vector<std::pair<std::string, std::string>>{
           {"a+$", "must be anchored"},
           {"^a+", "must be anchored"},
           {"^a\\$", "must be anchored"},
           {"^a|b$", "a | outside any group"},
           {"^(?=a)a$", "lookaround"},
           {"^(a)\\1$", "\\1, which is not supported"},
           {"^\\bx$", "word boundary"},
           {"^(a$", "unclosed ("},
           {"^a)$", "unmatched )"},
           {"^[a$", "unclosed ["},
           {"^*$", "nothing before it"},
           {"^a{3,1}$", "n < m"},
           {"^a^b$", "anchor inside"},
           {"^[]$", "matches nothing"},
           {"^(|a)*$", "repeats a part that can match nothing"}}) {
    std::string got = "<converted>";
    try {
      regex_gbnf(pattern);
    } catch (const Error& e) {
      got = e.what();
    }
    EXPECT_NE(got.find(message), std::string::npos) << pattern << " -> " << got;
  }
}

TEST(JsonSchemaGrammar, WhatIsNotSupportedIsAnErrorSayingWhere) {
  const auto error = [](const std::string& schema) {
    try {
      json_schema_to_gbnf(schema);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("<converted>");
  };
  EXPECT_NE(
      error(R"({"type": "object", "properties": {"id": {"type": "string", "pattern": "^a"}}})")
          .find("root-id: pattern: '^a' must be anchored"),
      std::string::npos);
  EXPECT_NE(error(R"({"type": "number", "minimum": 0})").find("on integers only"),
            std::string::npos);
  EXPECT_NE(error(R"({"minimum": 0})").find("with type integer only"), std::string::npos);
  EXPECT_NE(error(R"({"type": "integer", "minimum": 3, "maximum": 2})").find("leave no integer"),
            std::string::npos);
  EXPECT_NE(error(R"({"$ref": "#/$defs/missing"})").find("names no definition"), std::string::npos);
  EXPECT_NE(error(R"({"$ref": "http://x/y"})").find("only references within the schema"),
            std::string::npos);
  EXPECT_NE(error(R"({"$ref": "#node"})").find("anchors are not supported"), std::string::npos);
  EXPECT_NE(error(R"({"properties": {"a": {}}, "$ref": "#/properties/b"})")
                .find("$ref '#/properties/b': names no definition ('b' is not in it)"),
            std::string::npos);
  EXPECT_NE(
      error(R"({"prefixItems": [{}], "$ref": "#/prefixItems/1"})").find("names no definition"),
      std::string::npos);
  EXPECT_NE(
      error(R"({"prefixItems": [{}], "$ref": "#/prefixItems/00"})").find("names no definition"),
      std::string::npos);
  EXPECT_NE(error(R"({"$ref": "#/a%2"})").find("not two hex digits"), std::string::npos);
  EXPECT_NE(error(R"({"$ref": "#/a~2"})").find("~ not followed by 0 or 1"), std::string::npos);
  EXPECT_NE(error(R"({"type": "object", "properties": {"a": {}}, "required": ["b"]})")
                .find("required property 'b' is not in properties"),
            std::string::npos);
  EXPECT_NE(error(R"({"type": "strin"})").find("unknown type 'strin'"), std::string::npos);
  EXPECT_NE(error(R"({"type": "string", "maxLength": -1})").find("non-negative"),
            std::string::npos);
  EXPECT_NE(error("{\"type\": ").find("not JSON"), std::string::npos);
  EXPECT_NE(error("false").find("matches nothing"), std::string::npos);
  // Found by the libFuzzer target: a number beyond double, a type list of a number.
  EXPECT_NE(error(R"({"type": "integer", "minimum": 1e999})").find("not JSON"), std::string::npos);
  EXPECT_NE(error(R"({"type": ["string", 1]})").find("type must be a string"), std::string::npos);
  // allOf: what cannot be intersected, or holds for nothing.
  EXPECT_NE(error(R"({"allOf": [{"type": "string"}, {"type": "integer"}]})")
                .find("root: allOf: the types \"string\" and \"integer\" have none in common"),
            std::string::npos);
  EXPECT_NE(error(R"({"allOf": [{"pattern": "^a$"}, {"pattern": "^b$"}]})")
                .find("'pattern' differs between the schemas"),
            std::string::npos);
  EXPECT_NE(error(R"({"type": "integer", "anyOf": [{"type": "string"}, {"type": "null"}]})")
                .find("no alternative holds with the keywords beside it"),
            std::string::npos);
  EXPECT_NE(error(R"({"allOf": [{"properties": {"a": {}}, "required": ["a"]},
                     {"additionalProperties": false}]})")
                .find("'a' is required by one schema and excluded by another"),
            std::string::npos);
  EXPECT_NE(error(R"({"$defs": {"n": {"allOf": [{"$ref": "#/$defs/n"}]}}, "$ref": "#/$defs/n"})")
                .find("nest too deep"),
            std::string::npos);
  EXPECT_NE(error(R"({"$defs": {"n": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}]}},
                     "$ref": "#/$defs/n"})")
                .find("comes back to itself before any JSON text"),
            std::string::npos);
}

}  // namespace
}  // namespace oxi::llm::test
