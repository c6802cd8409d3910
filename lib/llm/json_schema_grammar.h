// JSON Schema to a GBNF grammar (gbnf.h), for replies that must be JSON of a given shape
// (llama.cpp's --json-schema). The reply is compact JSON with optional single spaces or a
// line break and indentation between tokens.
//
//   std::string grammar = json_schema_to_gbnf(R"({"type": "object", ...})");
//
// Properties come out in the schema's order. Supported: type (one or a list: object, array,
// string, number, integer, boolean, null), properties with required (absent optional ones
// skipped), additionalProperties (as llama.cpp: none unless given; true or a schema adds other
// keys, none of the named ones, after the named ones; an object schema with neither is any
// object), items / prefixItems with minItems / maxItems, minLength / maxLength, minimum /
// maximum / exclusiveMinimum / exclusiveMaximum on integers (int_range_gbnf.h), enum, const,
// anyOf / oneOf (as alternatives; keywords beside them hold in each), allOf (the schemas'
// intersection, json_schema_intersect.h; also for keywords beside a $ref), $ref to
// #/$defs/... or #/definitions/... (recursion included), true and {} (any JSON value), and on
// strings anchored patterns
// (regex_gbnf.h) and the formats date, time, date-time (RFC 3339) and uuid, as llama.cpp
// holds them. Annotations (title, description,
// default, examples, other formats...) are ignored, as the spec lets a validator ignore format.
// Keywords that would constrain what this does not handle (bounds on non-integers,
// multipleOf, uniqueItems, not, if/then/else, ...) are an oxi::Error naming the keyword and
// where it is.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oxi::llm {

// Throws oxi::Error for text that is not JSON and for what the header says is not supported.
// `root_rule`: the name of the rule for the whole schema; another than "root" leaves the
// grammar without a root, for a grammar that embeds it (tool_calls.h). Rules of its own are
// named from "root-..." and "ref-..." paths and the JSON primitives (value, string, space, ...).
std::string json_schema_to_gbnf(std::string_view schema, const std::string& root_rule = "root");
// Several schemas in one grammar without a root (for a grammar that puts them between its own
// texts: a tool call's name before its arguments): each (rule name, schema) as that rule, the
// rules of its parts named from it, the JSON primitives shared.
std::string json_schemas_to_gbnf(
    const std::vector<std::pair<std::string, std::string>>& named_schemas);

}  // namespace oxi::llm
