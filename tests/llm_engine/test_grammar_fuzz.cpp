// A deterministic short fuzz run of the GBNF parser and matcher: grammars come from users and
// files (--grammar-file, the C API, an element property), so a broken or hostile one must fail
// with oxi::Error, never crash, hang or throw anything else. Seeds are the tested grammars;
// then every prefix of each, random edits that splice in GBNF syntax, and grammars built to
// exhaust the stack, memory or the matcher's ways to go on.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "lib/core/error.h"
#include "lib/llm/gbnf.h"
#include "lib/llm/grammar_matcher.h"
#include "lib/llm/json_schema_grammar.h"
#include "lib/llm/regex_gbnf.h"
#include "tests/common/byte_edits.h"

namespace oxi::llm::test {
namespace {

const char* const kSeeds[] = {
    "root ::= \"ab\" | \"a\" [bc]* \"1\"",
    "root ::= (\"a\" | \"bc\")+ [12]?",
    "root ::= [^a ]{2,4} \"a\"",
    "root ::= x \" \" x\nx ::= [a-c]{1,2} | \"1\"",
    "root ::= .{0,3} \"2\" # comment",
    "root ::= (\n  \"a\" |\n  \"1\" \"2\"*\n) \" \"? b\nb ::= [^a-c12]*",
    "root ::= \"\\x61\" [\\u00E9-\\u00EA] \"\\\\\"? \"\\U0001F600\"",
    "root   ::= object\nvalue  ::= object | array | string | \"null\"\nobject ::= \"{\" ws ( "
    "string \":\" value ( \",\" ws string \":\" value )* )? \"}\"\narray ::= \"[\" ( value ( \",\" "
    "value )* )? \"]\"\nstring ::= \"\\\"\" ( [^\"\\\\\\x00-\\x1F] | \"\\\\\" [nt] )* \"\\\"\"\nws "
    "::= "
    "[ \\t\\n]{0,20}",
};

const char* const kSyntax[] = {"(",    ")",    "|", "*",     "+",   "?",   "{2}", "{1,3}", "{,2}",
                               "{",    "}",    "[", "]",     "[^",  "-",   "\"",  "\\",    "\\x",
                               "::=",  "\n",   " ", "root",  "x",   "#",   ".",   "\"a\"", "[a-z]",
                               "\xC3", "\xA9", "0", "\\u00", "(\"", "\r\n"};

const char* const kText[] = {
    "a",    "b",  "1",    "2",    " ",        "{",        "}",    "\"",
    "\\",   "\n", "\xC3", "\xA9", "\xC3\xA9", "\xE2\x82", "\xAC", "\xF0\x9F\x98\x80",
    "null", "ab"};

// Parses; when it parses, feeds a matcher random pieces. Returns whether it parsed; anything
// but oxi::Error escapes and fails the test.
bool parse_and_match(const std::string& text, std::mt19937& rng) {
  std::shared_ptr<const gbnf::Grammar> grammar;
  try {
    grammar = std::make_shared<const gbnf::Grammar>(gbnf::Grammar::parse(text));
  } catch (const Error&) {
    return false;
  }
  try {
    GrammarMatcher m(grammar);
    for (int i = 0; i < 24; ++i) {
      const std::string piece = kText[rng() % std::size(kText)];
      if (m.accepts(piece)) m.accept(piece);
      (void)m.can_end();
      (void)m.must_end();
    }
  } catch (const Error&) {
  }
  return true;
}

TEST(GbnfFuzz, PrefixesAndEditsParseOrFailWithAnError) {
  std::mt19937 rng(5);
  size_t parsed = 0, refused = 0;
  for (const char* seed : kSeeds) {
    const std::string s = seed;
    for (size_t n = 0; n <= s.size(); ++n)
      (parse_and_match(s.substr(0, n), rng) ? parsed : refused)++;
  }
  for (int i = 0; i < 4000; ++i) {
    std::string s = kSeeds[rng() % std::size(kSeeds)];
    for (int edits = 1 + rng() % 4; edits > 0; --edits) {
      const size_t at = rng() % (s.size() + 1);
      switch (rng() % 3) {
        case 0:
          s.insert(at, kSyntax[rng() % std::size(kSyntax)]);
          break;
        case 1:
          s.erase(at, 1 + rng() % 3);
          break;
        default:
          if (at < s.size()) s[at] = static_cast<char>(rng() % 256);
      }
    }
    (parse_and_match(s, rng) ? parsed : refused)++;
  }
  EXPECT_GT(parsed, 200u);  // both sides were exercised
  EXPECT_GT(refused, 500u);
}

std::string error_of(const std::string& text) {
  try {
    GrammarMatcher m(std::make_shared<const gbnf::Grammar>(gbnf::Grammar::parse(text)));
    m.accept("a");
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(GbnfFuzz, ResourceExhaustionIsAnError) {
  const std::string deep =
      "root ::= " + std::string(100000, '(') + "\"a\"" + std::string(100000, ')');
  EXPECT_NE(error_of(deep).find("nested more than"), std::string::npos);
  const std::string wide = "root ::= \"" + std::string(5000, 'a') + "\"{1000}";
  EXPECT_NE(error_of(wide).find("symbols"), std::string::npos);
  std::string rules = "root ::=";
  for (int i = 0; i < 70; ++i) rules += " \"a\"{0,1000}";
  EXPECT_NE(error_of(rules).find("rules"), std::string::npos);
  // A long chain of rules, each starting with the next: expanded without deep recursion.
  std::string chain = "root ::= r0\n";
  for (int i = 0; i < 30000; ++i)
    chain.append("r")
        .append(std::to_string(i))
        .append(" ::= r")
        .append(std::to_string(i + 1))
        .append(" \"b\"\n");
  chain += "r30000 ::= \"a\"\n";
  EXPECT_EQ(error_of(chain), "<no error>");
  // More ways to go on than a state may hold.
  std::string ambiguous = "root ::= x0";
  for (int i = 1; i < 5000; ++i) ambiguous.append(" | x").append(std::to_string(i));
  for (int i = 0; i < 5000; ++i)
    ambiguous.append("\nx")
        .append(std::to_string(i))
        .append(" ::= \"a\" \"")
        .append(std::to_string(i))
        .append("\"");
  EXPECT_NE(error_of(ambiguous).find("too ambiguous"), std::string::npos);
}

// JSON Schemas and patterns, edited: each converts or fails with oxi::Error, and what converts
// is a grammar that parses (the converters' output is never a syntax error) and matches.
TEST(GbnfFuzz, SchemasAndPatternsConvertToGrammarsThatParse) {
  const char* const schemas[] = {
      R"({"type": "object", "properties": {"a": {"type": "integer", "minimum": -5, "maximum": 70},
          "b": {"type": "string", "pattern": "^[a-c\\d]{1,3}(x|y)?$"}, "c": {"type": "array",
          "items": {"enum": ["p", 1, null]}, "maxItems": 2}}, "required": ["a"]})",
      R"({"$defs": {"n": {"anyOf": [{"type": "string", "format": "date"}, {"type": "array",
          "items": {"$ref": "#/$defs/n"}}, {"type": "boolean"}]}}, "type": "array",
          "prefixItems": [{"$ref": "#/$defs/n"},
          {"const": "k\"\\"}]})",
      R"({"type": "object", "additionalProperties": {"type": "number"}, "properties":
          {"u": {"type": "string", "format": "uuid", "title": "t"}}})",
      R"({"$defs": {"b": {"type": "object", "properties": {"i": {"enum": [1, "a"]}},
          "additionalProperties": {"type": "integer"}}}, "allOf": [{"$ref": "#/$defs/b"},
          {"properties": {"i": {"type": "string"}, "j": {"anyOf": [{"type": "null"},
          {"type": "integer", "minimum": 2}]}}, "required": ["i"]}, {"properties": {"j":
          {"anyOf": [{"type": "number"}, {"type": "string"}]}}}], "type": "object"})",
      R"({"type": "object", "properties": {"a~b": {"type": "array", "prefixItems": [{"type":
          "integer"}, {"$ref": "#/properties/a~0b/prefixItems/0"}]}, "k": {"type": "array",
          "items": {"$ref": "#"}, "maxItems": 1}, "c": {"$ref": "#/%24defs/d"}}, "$defs": {"d":
          {"$ref": "#/properties/a~0b"}}})",
  };
  const std::string syntax = R"({}[]:,"\^$|()*+?.-0129azAZ )";
  std::mt19937 rng(13);
  size_t converted = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string schema = schemas[rng() % std::size(schemas)];
    for (int e = 1 + rng() % 3; e > 0; --e) schema = oxi::test::edit_char(schema, syntax, rng);
    std::string gbnf;
    try {
      gbnf = json_schema_to_gbnf(schema);
    } catch (const Error&) {
      continue;
    }
    ++converted;
    std::shared_ptr<const gbnf::Grammar> grammar;
    ASSERT_NO_THROW(grammar = std::make_shared<const gbnf::Grammar>(gbnf::Grammar::parse(gbnf)))
        << schema << "\n"
        << gbnf;
    parse_and_match(gbnf, rng);
  }
  EXPECT_GT(converted, 100u);
  for (int i = 0; i < 3000; ++i) {
    std::string pattern = "^[a-c\\d]{1,3}(x|y\\.)*?[^\"\\s]+\\u00e9$";
    for (int e = 1 + rng() % 3; e > 0; --e) pattern = oxi::test::edit_char(pattern, syntax, rng);
    std::string expression;
    try {
      expression = regex_gbnf(pattern);
    } catch (const Error&) {
      continue;
    }
    ASSERT_NO_THROW((void)gbnf::Grammar::parse("root ::= " + expression)) << pattern;
  }
}

}  // namespace
}  // namespace oxi::llm::test
