#include "lib/llm/json_schema_intersect.h"

#include <algorithm>
#include <set>
#include <vector>

namespace oxi::llm {
namespace {

using json = nlohmann::ordered_json;

// A $ref chain or allOf nesting deeper than this is refused (a $ref that names itself).
constexpr int kMaxDepth = 32;
// anyOf x anyOf makes the products of their alternatives, at most this many.
constexpr size_t kMaxAlternatives = 64;

const std::set<std::string, std::less<>> kAnnotations = {
    "$schema", "$id",         "$comment",        "$anchor",          "title",        "description",
    "default", "examples",    "format",          "readOnly",         "writeOnly",    "deprecated",
    "$defs",   "definitions", "contentEncoding", "contentMediaType", "contentSchema"};

// Lower bounds take the larger value, upper bounds the smaller.
const std::set<std::string, std::less<>> kLowerBounds = {"minimum", "minLength", "minItems",
                                                         "minProperties"};
const std::set<std::string, std::less<>> kUpperBounds = {"maximum", "maxLength", "maxItems",
                                                         "maxProperties"};

class Intersection {
 public:
  Intersection(const SchemaRefResolver& resolve, const std::string& where)
      : resolve_(resolve), where_(where) {}

  json both(const json& a_in, const json& b_in, int depth) {
    if (depth > kMaxDepth) fail("allOf / $ref nest too deep (a $ref that names itself?)");
    if (a_in.is_boolean() && a_in.get<bool>()) return flat(b_in, depth + 1);
    if (b_in.is_boolean() && b_in.get<bool>()) return flat(a_in, depth + 1);
    const json a = flat(a_in, depth + 1), b = flat(b_in, depth + 1);
    if (a == b) return a;
    json out = a;
    for (const auto& [key, vb] : b.items()) {
      if (key == "format" && !out.contains(key)) {  // asserted on strings by the converter
        out[key] = vb;
        continue;
      }
      if (key == "format" && out[key] != vb) fail("the formats differ");
      if (kAnnotations.count(key)) continue;
      if (key == "properties" || key == "additionalProperties" || key == "required") continue;
      const auto at = out.find(key);
      if (at == out.end()) {
        out[key] = vb;
        continue;
      }
      const json& va = *at;
      if (va == vb) continue;
      if (key == "type") {
        out[key] = types(va, vb);
      } else if (kLowerBounds.count(key) || kUpperBounds.count(key)) {
        if (!va.is_number() || !vb.is_number()) fail("'" + key + "' must be a number");
        for (const json* side : {&a, &b})
          for (const char* flag : {"exclusiveMinimum", "exclusiveMaximum"})
            if (side->contains(flag) && (*side)[flag].is_boolean())
              fail("different bounds beside a boolean (draft 4) " + std::string(flag));
        const bool lower = kLowerBounds.count(key) > 0;
        out[key] = (va.get<double>() < vb.get<double>()) == lower ? vb : va;
      } else if (key == "exclusiveMinimum" || key == "exclusiveMaximum") {
        if (!va.is_number() || !vb.is_number())
          fail("'" + key + "' as a boolean (draft 4) differs between the schemas");
        out[key] = (va.get<double>() < vb.get<double>()) == (key == "exclusiveMinimum") ? vb : va;
      } else if (key == "enum") {
        if (!va.is_array() || !vb.is_array()) fail("enum must be an array");
        json kept = json::array();
        for (const json& v : va)
          if (std::find(vb.begin(), vb.end(), v) != vb.end()) kept.push_back(v);
        if (kept.empty()) nothing("the enums have no value in common");
        out[key] = kept;
      } else if (key == "const") {
        nothing("the consts differ: nothing matches both");
      } else if (key == "items") {
        out[key] = both(va, vb, depth + 1);
      } else if (key == "prefixItems") {
        if (!va.is_array() || !vb.is_array() || va.size() != vb.size())
          fail("prefixItems of different lengths are not supported");
        json items = json::array();
        for (size_t i = 0; i < va.size(); ++i) items.push_back(both(va[i], vb[i], depth + 1));
        out[key] = items;
      } else if (key == "anyOf" || key == "oneOf") {
        continue;  // below, with the other schema's anyOf / oneOf
      } else {
        fail("'" + key + "' differs between the schemas (" + va.dump() + ", " + vb.dump() + ")");
      }
    }
    alternatives(a, b, out);
    if (out.contains("const") && out.contains("enum")) {
      const json& e = out["enum"];
      if (std::find(e.begin(), e.end(), out["const"]) == e.end())
        nothing("the const is not in the enum: nothing matches both");
      out.erase("enum");
    }
    objects(a, b, out, depth);
    return out;
  }

  // The schema without a $ref or allOf on top: what they name, intersected with the rest.
  json flat(const json& schema, int depth) {
    if (depth > kMaxDepth) fail("allOf / $ref nest too deep (a $ref that names itself?)");
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) nothing("the schema false matches nothing");
      return json::object();
    }
    if (!schema.is_object()) fail("a schema must be an object or a boolean");
    json rest = schema;
    std::vector<json> parts;
    if (const auto ref = rest.find("$ref"); ref != rest.end()) {
      if (!ref->is_string()) fail("$ref must be a string");
      parts.push_back(resolve_(ref->get<std::string>()));
      rest.erase("$ref");
    }
    if (const auto all = rest.find("allOf"); all != rest.end()) {
      if (!all->is_array() || all->empty()) fail("allOf must be a non-empty array");
      for (const json& s : *all) parts.push_back(s);
      rest.erase("allOf");
    }
    if (parts.empty()) return rest;
    json out = std::move(rest);
    for (const json& part : parts) out = both(out, part, depth + 1);
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw Error("json schema", where_ + ": allOf: " + message);
  }
  [[noreturn]] void nothing(const std::string& message) const {
    throw SchemaMatchesNothing("json schema", where_ + ": allOf: " + message);
  }

  static std::vector<std::string> type_list(const json& t) {
    std::vector<std::string> list;
    if (t.is_string()) list.push_back(t.get<std::string>());
    if (t.is_array())
      for (const json& one : t)
        if (one.is_string()) list.push_back(one.get<std::string>());
    return list;
  }
  json types(const json& a, const json& b) const {
    const std::vector<std::string> ta = type_list(a), tb = type_list(b);
    const auto has = [](const std::vector<std::string>& list, const std::string& t) {
      return std::find(list.begin(), list.end(), t) != list.end();
    };
    std::vector<std::string> common;
    for (const std::string& t : ta) {
      if (has(tb, t))
        common.push_back(t);
      else if (t == "integer" && has(tb, "number"))
        common.push_back(t);
      else if (t == "number" && has(tb, "integer"))
        common.push_back("integer");
    }
    if (common.empty())
      nothing("the types " + a.dump() + " and " + b.dump() + " have none in common");
    if (common.size() == 1) return common.front();
    return json(common);
  }

  // anyOf / oneOf on both sides: the alternatives' pairwise intersections (as allOf, which
  // the converter intersects when it visits them).
  void alternatives(const json& a, const json& b, json& out) const {
    const auto list = [](const json& s) -> const json* {
      for (const char* key : {"anyOf", "oneOf"})
        if (const auto it = s.find(key); it != s.end()) return &*it;
      return nullptr;
    };
    const json *la = list(a), *lb = list(b);
    if (!la || !lb) return;
    out.erase("oneOf");
    if (*la == *lb) {
      out["anyOf"] = *la;
      return;
    }
    if (!la->is_array() || !lb->is_array()) fail("anyOf / oneOf must be an array");
    if (la->size() * lb->size() > kMaxAlternatives)
      fail("anyOf x anyOf makes more than " + std::to_string(kMaxAlternatives) + " alternatives");
    json products = json::array();
    for (const json& x : *la)
      for (const json& y : *lb) products.push_back({{"allOf", {x, y}}});
    out["anyOf"] = products;
  }

  // properties, additionalProperties and required: a key one side names and the other does
  // not meets the other's additionalProperties (none given: any value, as JSON Schema reads it).
  void objects(const json& a, const json& b, json& out, int depth) {
    static const json kNone = json::object();
    const auto props = [&](const json& s) -> const json& {
      const auto it = s.find("properties");
      if (it == s.end()) return kNone;
      if (!it->is_object()) fail("properties must be an object");
      return *it;
    };
    const json &pa = props(a), &pb = props(b);
    const json* ea = a.contains("additionalProperties") ? &a["additionalProperties"] : nullptr;
    const json* eb = b.contains("additionalProperties") ? &b["additionalProperties"] : nullptr;

    json required = json::array();
    for (const json* side : {&a, &b})
      if (const auto r = side->find("required"); r != side->end()) {
        if (!r->is_array()) fail("required must be an array");
        for (const json& name : *r)
          if (std::find(required.begin(), required.end(), name) == required.end())
            required.push_back(name);
      }
    const auto is_required = [&](const std::string& key) {
      return std::find(required.begin(), required.end(), json(key)) != required.end();
    };

    json merged = json::object();
    std::vector<std::string> keys;
    for (const auto& [k, unused] : pa.items()) keys.push_back(k);
    for (const auto& [k, unused] : pb.items())
      if (!pa.contains(k)) keys.push_back(k);
    for (const std::string& k : keys) {
      const json* sa = pa.contains(k) ? &pa[k] : ea;
      const json* sb = pb.contains(k) ? &pb[k] : eb;
      if ((sa && *sa == json(false)) || (sb && *sb == json(false))) {
        if (is_required(k))
          nothing("property '" + k + "' is required by one schema and excluded by another");
        continue;
      }
      merged[k] = !sa ? *sb : !sb ? *sa : both(*sa, *sb, depth + 1);
    }
    out.erase("properties");
    out.erase("additionalProperties");
    out.erase("required");
    if (!pa.empty() || !pb.empty() || a.contains("properties") || b.contains("properties"))
      out["properties"] = merged;
    if (ea && eb)
      out["additionalProperties"] =
          (*ea == json(false) || *eb == json(false)) ? json(false) : both(*ea, *eb, depth + 1);
    else if (ea || eb)
      out["additionalProperties"] = ea ? *ea : *eb;
    if (!required.empty()) out["required"] = required;
  }

  const SchemaRefResolver& resolve_;
  const std::string& where_;
};

}  // namespace

bool is_annotation_keyword(std::string_view key) {
  return kAnnotations.count(key) > 0;
}

json schema_constraints(const json& schema) {
  json out = json::object();
  if (!schema.is_object()) return out;
  for (const auto& [key, value] : schema.items())
    if (!kAnnotations.count(key)) out[key] = value;
  return out;
}

json intersect_schemas(const json& a, const json& b, const SchemaRefResolver& resolve,
                       const std::string& where) {
  Intersection i(resolve, where);
  return i.both(a, b, 0);
}

}  // namespace oxi::llm
