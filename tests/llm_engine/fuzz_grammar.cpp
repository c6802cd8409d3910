// libFuzzer target: the input's first byte picks what the rest is: a GBNF grammar, a JSON
// Schema or a pattern. What converts and parses is fed pieces of text. oxi::Error is the
// expected way to fail; anything else crashes the fuzzer.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "lib/core/error.h"
#include "lib/llm/gbnf.h"
#include "lib/llm/grammar_matcher.h"
#include "lib/llm/json_schema_grammar.h"
#include "lib/llm/regex_gbnf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  static const char* const kPieces[] = {"{", "\"a\"", ":", "1", " ", "]", "x", "\xC3", "\xA9",
                                        "\\", "\"", "-", "true", "\n"};
  try {
    std::string grammar;
    switch (data[0] % 3) {
      case 0:
        grammar = text;
        break;
      case 1:
        grammar = oxi::llm::json_schema_to_gbnf(text);
        break;
      default:
        grammar = "root ::= " + oxi::llm::regex_gbnf(text);
    }
    oxi::llm::GrammarMatcher m(
        std::make_shared<const oxi::llm::gbnf::Grammar>(oxi::llm::gbnf::Grammar::parse(grammar)));
    for (size_t i = 0; i < 64; ++i) {
      const char* piece = kPieces[(i * 7 + size) % std::size(kPieces)];
      if (m.accepts(piece)) m.accept(piece);
      (void)m.can_end();
    }
  } catch (const oxi::Error&) {
  }
  return 0;
}
