// GrammarMatcher: where a text stands in a GBNF grammar (gbnf.h), fed a piece at a time.
//
// The state is the set of ways the text so far can go on: stacks of positions in the rules'
// sequences, each stack's top a character set the next code point must match (an empty stack:
// the text is complete there). A code point keeps the stacks whose top matches it, each moved
// past it and expanded through rule references to the next character sets; no stack left means
// the text cannot continue. Pieces may end inside a UTF-8 character (a token holding the first
// byte of a character): the bytes wait, and a stack must be able to match some character they
// can begin.
//
//   GrammarMatcher m(std::make_shared<gbnf::Grammar>(gbnf::Grammar::parse(text)));
//   if (m.accepts(piece)) m.accept(piece);
//   m.can_end();
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/llm/gbnf.h"

namespace oxi::llm {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const gbnf::Grammar> grammar);

  // Whether `bytes` can continue the text (the empty string can).
  bool accepts(std::string_view bytes) const;
  // Appends `bytes`; throws oxi::Error when they cannot continue the text.
  void accept(std::string_view bytes);
  // The matcher after `bytes`, or nothing when they cannot continue the text (this one as it
  // was either way).
  std::optional<GrammarMatcher> after(std::string_view bytes) const;
  // The text is a whole sentence of the grammar (no character half-way).
  bool can_end() const;
  // Nothing can follow: the text is complete and no stack goes on.
  bool must_end() const;
  // The state as bytes: equal keys, equal futures (what may follow, whether it can end).
  std::string state_key() const;

 private:
  struct Position {
    uint32_t rule, alternative, element;
    bool operator==(const Position&) const = default;
  };
  using Stack = std::vector<Position>;
  struct State {
    std::vector<Stack> stacks;
    std::string pending;  // the first bytes of a character still to come
  };
  GrammarMatcher(std::shared_ptr<const gbnf::Grammar> grammar, State state)
      : grammar_(std::move(grammar)), state_(std::move(state)) {}

  // The state after `bytes`, or nothing when they cannot continue it. With `check_only`, the
  // last character is matched but not stepped past (the state returned is then not valid).
  std::optional<State> advance(std::string_view bytes, bool check_only = false) const;
  std::vector<Stack> step(const std::vector<Stack>& stacks, char32_t c) const;
  void expand(Stack stack, std::vector<Stack>& out) const;
  const gbnf::Symbol& symbol_at(const Position& p) const;
  const gbnf::CharSet& top_set(const Stack& stack) const;

  std::shared_ptr<const gbnf::Grammar> grammar_;
  State state_;
};

}  // namespace oxi::llm
