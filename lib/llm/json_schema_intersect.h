// The intersection of two JSON Schemas: one schema whose instances are those of both, for
// allOf and for the keywords beside anyOf / oneOf / $ref (which apply to every alternative, to
// the schema referred to). json_schema_grammar.h turns the result into grammar.
//
// Keyword by keyword: type lists intersect (integer within number); properties join (a key
// both name gets the intersection of both schemas; a key one names and the other's
// additionalProperties forbids is dropped, or an error when required); required lists join;
// additionalProperties intersect; lower bounds (minimum, minLength, minItems, ...) take the
// larger, upper bounds the smaller; enums intersect, const must agree; items intersect,
// prefixItems item by item; anyOf / oneOf lists become the alternatives' pairwise
// intersections. A $ref on top is replaced by what it names; nested allOf is flattened. Other
// keywords (pattern, format, ...) must be equal where both have them; annotations are the first
// schema's. What cannot be intersected so is an oxi::Error saying so.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lib/core/error.h"

namespace oxi::llm {

// The schemas have no instance in common (types, enums or consts apart, a required key the
// other excludes, false): an anyOf alternative that meets this is dropped.
class SchemaMatchesNothing : public Error {
 public:
  using Error::Error;
};

// The schema a "$ref" string names; throws oxi::Error for one that names nothing.
using SchemaRefResolver = std::function<const nlohmann::ordered_json&(const std::string& ref)>;

// `where` is the path messages name. Throws SchemaMatchesNothing, or oxi::Error for what is
// not supported ("json schema: WHERE: allOf: ...").
nlohmann::ordered_json intersect_schemas(const nlohmann::ordered_json& a,
                                         const nlohmann::ordered_json& b,
                                         const SchemaRefResolver& resolve,
                                         const std::string& where);

// Keywords that only annotate (title, description, default, format, $defs, ...).
bool is_annotation_keyword(std::string_view key);
// The schema's keywords other than annotations, or {} for none.
nlohmann::ordered_json schema_constraints(const nlohmann::ordered_json& schema);

}  // namespace oxi::llm
