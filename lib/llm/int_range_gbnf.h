// The decimal integers of a range as a GBNF expression (gbnf.h), in JSON's form: no leading
// zeros, "-" before negatives ("-0" too where 0 is in the range, as JSON reads it as 0), at
// most 16 digits where the range is open (as the JSON Schema grammars' plain integers). For
// JSON Schema's minimum / maximum on integers (json_schema_grammar.h).
//
//   int_range_gbnf(0, 120)  ->  ("0" | [1-9] | [1-9] [0-9] | "1" [0-1] [0-9] | "120")   (shape)
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace oxi::llm {

// lo..hi inclusive; nullopt: unbounded on that side. Throws oxi::Error for an empty range.
std::string int_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi);

}  // namespace oxi::llm
