#include "lib/llm/token_trie.h"

#include <algorithm>

#include "lib/tokenizer/tokenizer.h"

namespace oxi::llm {

TokenTrie::TokenTrie(const tokenizer::Tokenizer& tokenizer, std::span<const int32_t> end_tokens)
    : ends_(end_tokens.begin(), end_tokens.end()) {
  pieces_.resize(tokenizer.vocab_size());
  nodes_.emplace_back();
  for (size_t id = 0; id < pieces_.size(); ++id) {
    const auto token = static_cast<int32_t>(id);
    if (tokenizer.is_control(token) || std::find(ends_.begin(), ends_.end(), token) != ends_.end())
      continue;
    pieces_[id] = tokenizer.token_piece(token);
    if (pieces_[id].empty()) continue;
    uint32_t node = kRoot;
    for (char c : pieces_[id]) {
      const auto byte = static_cast<uint8_t>(c);
      const auto& children = nodes_[node].children;
      const auto it = std::find_if(children.begin(), children.end(),
                                   [byte](const auto& child) { return child.first == byte; });
      if (it != children.end()) {
        node = it->second;
        continue;
      }
      const auto child = static_cast<uint32_t>(nodes_.size());
      nodes_[node].children.emplace_back(byte, child);
      nodes_.emplace_back();
      node = child;
    }
    nodes_[node].tokens.push_back(token);
  }
}

}  // namespace oxi::llm
