// TokenTrie: a vocabulary's token texts as a trie of their bytes, for the grammar constraint
// (grammar_constraint.h): a prefix many tokens share is matched once, and a rejected one rules
// out every token under it. Control tokens, tokens without text and the end tokens are left out
// (the constraint decides those apart). Built once per vocabulary and shared: an engine keeps
// it from one turn to the next.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oxi::tokenizer {
class Tokenizer;
}

namespace oxi::llm {

class TokenTrie {
 public:
  struct Node {
    std::vector<std::pair<uint8_t, uint32_t>> children;  // (next byte, node)
    std::vector<int32_t> tokens;                         // the tokens whose bytes end here
  };

  TokenTrie(const tokenizer::Tokenizer& tokenizer, std::span<const int32_t> end_tokens);

  static constexpr uint32_t kRoot = 0;  // the empty prefix
  const Node& node(uint32_t index) const { return nodes_[index]; }
  // The token's bytes; empty for the tokens left out of the trie (and ids off the vocabulary).
  std::string_view piece(int32_t token) const {
    return token >= 0 && static_cast<size_t>(token) < pieces_.size()
               ? std::string_view(pieces_[static_cast<size_t>(token)])
               : std::string_view();
  }
  std::span<const int32_t> end_tokens() const { return ends_; }

 private:
  std::vector<std::string> pieces_;
  std::vector<Node> nodes_;
  std::vector<int32_t> ends_;
};

}  // namespace oxi::llm
