#include "lib/llm/grammar_constraint.h"

#include <algorithm>

#include "lib/core/error.h"
#include "lib/tokenizer/tokenizer.h"

namespace oxi::llm {
namespace {

// Allowed sets remembered at most (each up to a vocabulary of ids); then they start over.
constexpr size_t kStatesKept = 64;

}  // namespace

GrammarConstraint::GrammarConstraint(const tokenizer::Tokenizer& tokenizer,
                                     std::string_view grammar, std::vector<int32_t> end_tokens)
    : matcher_(std::make_shared<const gbnf::Grammar>(gbnf::Grammar::parse(grammar))),
      ends_(std::move(end_tokens)) {
  pieces_.resize(tokenizer.vocab_size());
  trie_.emplace_back();
  for (size_t id = 0; id < pieces_.size(); ++id) {
    const auto token = static_cast<int32_t>(id);
    if (tokenizer.is_control(token) || std::find(ends_.begin(), ends_.end(), token) != ends_.end())
      continue;
    pieces_[id] = tokenizer.token_piece(token);
    if (pieces_[id].empty()) continue;
    uint32_t node = 0;
    for (char c : pieces_[id]) {
      const auto byte = static_cast<uint8_t>(c);
      const auto& children = trie_[node].children;
      const auto it = std::find_if(children.begin(), children.end(),
                                   [byte](const auto& child) { return child.first == byte; });
      if (it != children.end()) {
        node = it->second;
        continue;
      }
      const auto child = static_cast<uint32_t>(trie_.size());
      trie_[node].children.emplace_back(byte, child);
      trie_.emplace_back();
      node = child;
    }
    trie_[node].tokens.push_back(token);
  }
}

void GrammarConstraint::collect(uint32_t root, const GrammarMatcher& m) {
  // Depth first with a stack of its own: a vocabulary may hold very long tokens.
  std::vector<std::pair<uint32_t, GrammarMatcher>> open;
  open.emplace_back(root, m);
  while (!open.empty()) {
    const auto [node, matcher] = std::move(open.back());
    open.pop_back();
    for (const auto& [byte, child] : trie_[node].children) {
      const char c = static_cast<char>(byte);
      const TrieNode& next = trie_[child];
      if (next.children.empty()) {  // only whether this byte can come: no state to build
        if (matcher.accepts(std::string_view(&c, 1)))
          allowed_.insert(allowed_.end(), next.tokens.begin(), next.tokens.end());
        continue;
      }
      std::optional<GrammarMatcher> moved = matcher.after(std::string_view(&c, 1));
      if (!moved) continue;
      allowed_.insert(allowed_.end(), next.tokens.begin(), next.tokens.end());
      open.emplace_back(child, std::move(*moved));
    }
  }
}

const std::vector<int32_t>& GrammarConstraint::allowed() {
  if (allowed_current_) return allowed_;
  const bool can_end = matcher_.can_end();
  const std::string key = matcher_.state_key();
  if (const auto it = seen_.find(key); it != seen_.end()) {
    allowed_ = it->second;
  } else {
    allowed_.clear();
    collect(0, matcher_);
    if (can_end) allowed_.insert(allowed_.end(), ends_.begin(), ends_.end());
    std::sort(allowed_.begin(), allowed_.end());
    allowed_.erase(std::unique(allowed_.begin(), allowed_.end()), allowed_.end());
    if (seen_.size() >= kStatesKept) seen_.clear();
    seen_.emplace(key, allowed_);
  }
  if (allowed_.empty())
    throw Error("grammar", can_end ? "the grammar is complete but the model has no end token"
                                   : "no token can continue the text in the grammar");
  allowed_current_ = true;
  return allowed_;
}

void GrammarConstraint::accept(int32_t token) {
  if (std::find(ends_.begin(), ends_.end(), token) != ends_.end()) return;
  if (token < 0 || static_cast<size_t>(token) >= pieces_.size() ||
      pieces_[static_cast<size_t>(token)].empty())
    throw Error("grammar", "token " + std::to_string(token) + " has no text to match");
  matcher_.accept(pieces_[static_cast<size_t>(token)]);
  allowed_current_ = false;
}

}  // namespace oxi::llm
