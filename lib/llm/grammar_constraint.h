// GrammarConstraint: the tokens that may come next in a reply held to a GBNF grammar
// (--grammar), as llama.cpp's grammar sampler decides them: a token whose bytes continue the
// reply in the grammar; an end token only where the reply is a whole sentence of it; other
// control tokens and tokens without text never.
//
// The tokens are tried as a trie of their bytes (token_trie.h), so that a prefix many share is
// matched once and a rejected one rules out every token under it; and the allowed set of each
// state met is remembered (inside a JSON string, say, the state after every character is the
// same), also across restart(): the same sets as trying each token alone, fewer steps.
//
//   GrammarConstraint g(std::make_shared<const TokenTrie>(tokenizer, model.eos_ids()), text);
//   int32_t id = sampler.sample(logits, history, &g.allowed());
//   g.accept(id);
//   ...
//   g.restart();  // the next reply, held to the same grammar
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lib/llm/grammar_matcher.h"
#include "lib/llm/token_trie.h"

namespace oxi::llm {

class GrammarConstraint {
 public:
  // Throws oxi::Error for a grammar that does not parse (gbnf.h).
  GrammarConstraint(std::shared_ptr<const TokenTrie> trie, std::string_view grammar);

  // The grammar's text, as given.
  const std::string& grammar() const { return text_; }
  // Back to the empty reply; the remembered sets stay (they are the grammar's).
  void restart();

  // The tokens allowed now (ascending ids). Throws oxi::Error when none is: the grammar needs
  // a character no token can give.
  const std::vector<int32_t>& allowed();
  // Whether `token` may come next (what allowed() holds, for one token: no vocabulary walk).
  bool allows(int32_t token) const;
  // Whether allowed() is at hand without a walk (this state met before).
  bool knows_allowed() const;
  // Records the picked token (one of allowed()).
  void accept(int32_t token);
  // Records text that came before the constraint held (a lazy grammar's trigger and what
  // followed it in the same token); false, the state unchanged, when it cannot start the reply.
  bool accept_text(std::string_view bytes);
  // Only an end token may follow.
  bool must_end() const { return matcher_.must_end(); }

 private:
  // Adds to allowed_ the tokens under `root` (whose bytes brought `m` where it is).
  void collect(uint32_t root, const GrammarMatcher& m);

  std::string text_;
  std::shared_ptr<const gbnf::Grammar> parsed_;
  std::shared_ptr<const TokenTrie> trie_;
  GrammarMatcher matcher_;
  std::unordered_map<std::string, std::vector<int32_t>> seen_;  // allowed sets by state key
  std::vector<int32_t> allowed_;
  bool allowed_current_ = false;
};

}  // namespace oxi::llm
