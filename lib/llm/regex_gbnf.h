// A JSON Schema "pattern" (an ECMAScript regular expression) as a GBNF expression over the
// JSON text of a string's contents, for json_schema_grammar.h.
//
//   regex_gbnf("^[A-Z]{2}-\\d{3}$")  ->  an expression the string between its quotes matches
//
// The pattern must be anchored, ^ ... $ (as llama.cpp asks: a pattern matches anywhere in a
// string, so an unanchored one would leave the rest of the string free). Characters are
// matched as JSON writes them: ", \ and controls by their escapes (\", \\, \n, \t, \r, \b, \f,
// \u00XX), others as themselves. Supported: literals, ., classes [...] / [^...] with ranges,
// \d \D \w \W \s \S, escapes (\n \t \r \f \v \0 \xHH \uHHHH and escaped punctuation),
// groups (...) and (?:...), |, and the quantifiers * + ? {n} {n,} {n,m} (a lazy ? after them
// changes nothing here). Lookarounds, backreferences, \b and the like are an oxi::Error.
#pragma once

#include <string>
#include <string_view>

namespace oxi::llm {

std::string regex_gbnf(std::string_view pattern);

}  // namespace oxi::llm
