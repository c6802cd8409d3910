// GrammarConstraint: the tokens that may come next in a reply held to a GBNF grammar
// (--grammar), as llama.cpp's grammar sampler decides them: a token whose bytes continue the
// reply in the grammar; an end token only where the reply is a whole sentence of it; other
// control tokens and tokens without text never.
//
// The tokens are tried as a trie of their bytes, so that a prefix many share is matched once
// and a rejected one rules out every token under it; and the allowed set of each state met is
// remembered (inside a JSON string, say, the state after every character is the same): the
// same sets as trying each token alone, fewer steps.
//
//   GrammarConstraint g(tokenizer, grammar_text, model.eos_ids());
//   int32_t id = sampler.sample(logits, history, &g.allowed());
//   g.accept(id);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lib/llm/grammar_matcher.h"

namespace oxi::tokenizer {
class Tokenizer;
}

namespace oxi::llm {

class GrammarConstraint {
 public:
  // Throws oxi::Error for a grammar that does not parse (gbnf.h).
  GrammarConstraint(const tokenizer::Tokenizer& tokenizer, std::string_view grammar,
                    std::vector<int32_t> end_tokens);

  // The tokens allowed now (ascending ids). Throws oxi::Error when none is: the grammar needs
  // a character no token can give.
  const std::vector<int32_t>& allowed();
  // Records the picked token (one of allowed()).
  void accept(int32_t token);
  // Only an end token may follow.
  bool must_end() const { return matcher_.must_end(); }

 private:
  GrammarMatcher matcher_;
  // A node of the tokens' byte trie: the children by next byte, the tokens that end here.
  struct TrieNode {
    std::vector<std::pair<uint8_t, uint32_t>> children;
    std::vector<int32_t> tokens;
  };
  // Adds to allowed_ the tokens under `root` (whose bytes brought `m` where it is).
  void collect(uint32_t root, const GrammarMatcher& m);

  std::vector<std::string> pieces_;  // each token's bytes; empty for control tokens
  std::vector<TrieNode> trie_;       // node 0: the empty prefix
  std::vector<int32_t> ends_;
  std::unordered_map<std::string, std::vector<int32_t>> seen_;  // allowed sets by state key
  std::vector<int32_t> allowed_;
  bool allowed_current_ = false;
};

}  // namespace oxi::llm
