// GBNF grammars, llama.cpp's notation for constrained generation (--grammar):
//
//   root   ::= answer " " number
//   answer ::= "yes" | "no"          # literals with C escapes (\n, \t, \", \\, \xHH, \uHHHH...)
//   number ::= [1-9] [0-9]{0,2}      # classes [a-z], negated [^"\\], any character .
//   list   ::= "[" (number ("," number)*)? "]"
//
// A rule is one line (inside parentheses, or before a line that starts with |, lines go on);
// # starts a comment. Repetitions *, +, ?, {m}, {m,}, {m,n} and {,n} apply to the item before
// them (a whole literal, a class, a rule or a group). The root rule is `root`.
//
// parse() turns the text into rules of plain sequences: each group and repetition becomes a
// rule of its own (x* is R ::= x R | (empty)), so a matcher (grammar_matcher.h) only follows rule
// references and character sets. Throws oxi::Error naming the line and column of a syntax
// error, an undefined rule, a missing root, or a rule that recurses before consuming anything
// (left recursion: no matcher could expand it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace oxi::llm::gbnf {

// Code points first..last, inclusive.
struct CharRange {
  char32_t first;
  char32_t last;
};

// A class: any of the ranges, or with `negated` any code point outside them ('.' is a negated
// empty class).
struct CharSet {
  std::vector<CharRange> ranges;
  bool negated = false;

  bool matches(char32_t c) const;
  // Whether some code point in first..last matches (for a character whose first bytes are known).
  bool matches_some(char32_t first, char32_t last) const;
};

// A reference to a rule or to a character set, by index.
struct Symbol {
  bool is_rule;
  uint32_t index;
  bool operator==(const Symbol&) const = default;
};

using Sequence = std::vector<Symbol>;

struct Rule {
  std::string name;                    // groups and repetitions: their rule's name plus "_N"
  std::vector<Sequence> alternatives;  // an empty sequence matches the empty string
};

struct Grammar {
  std::vector<Rule> rules;
  std::vector<CharSet> sets;
  uint32_t root = 0;

  static Grammar parse(std::string_view text);
};

// A GBNF string literal of `text` (its bytes; quotes, backslashes and controls escaped), as
// the grammars built from JSON Schemas and tools write theirs.
std::string literal(std::string_view text);

}  // namespace oxi::llm::gbnf
