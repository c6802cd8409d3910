#include "lib/llm/grammar_constraint.h"

#include <algorithm>
#include <optional>

#include "lib/core/error.h"

namespace oxi::llm {
namespace {

// Allowed sets remembered at most (each up to a vocabulary of ids); then they start over.
constexpr size_t kStatesKept = 64;

}  // namespace

GrammarConstraint::GrammarConstraint(std::shared_ptr<const TokenTrie> trie,
                                     std::string_view grammar)
    : text_(grammar),
      parsed_(std::make_shared<const gbnf::Grammar>(gbnf::Grammar::parse(grammar))),
      trie_(std::move(trie)),
      matcher_(parsed_) {}

void GrammarConstraint::restart() {
  matcher_ = GrammarMatcher(parsed_);
  allowed_current_ = false;
}

void GrammarConstraint::collect(uint32_t root, const GrammarMatcher& m) {
  // Depth first with a stack of its own: a vocabulary may hold very long tokens.
  std::vector<std::pair<uint32_t, GrammarMatcher>> open;
  open.emplace_back(root, m);
  while (!open.empty()) {
    const auto [node, matcher] = std::move(open.back());
    open.pop_back();
    for (const auto& [byte, child] : trie_->node(node).children) {
      const char c = static_cast<char>(byte);
      const TokenTrie::Node& next = trie_->node(child);
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
    collect(TokenTrie::kRoot, matcher_);
    if (can_end) {
      const std::span<const int32_t> ends = trie_->end_tokens();
      allowed_.insert(allowed_.end(), ends.begin(), ends.end());
    }
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

bool GrammarConstraint::knows_allowed() const {
  return allowed_current_ || seen_.count(matcher_.state_key()) > 0;
}

bool GrammarConstraint::allows(int32_t token) const {
  const std::span<const int32_t> ends = trie_->end_tokens();
  if (std::find(ends.begin(), ends.end(), token) != ends.end()) return matcher_.can_end();
  const std::string_view piece = trie_->piece(token);
  return !piece.empty() && matcher_.accepts(piece);
}

void GrammarConstraint::accept(int32_t token) {
  const std::span<const int32_t> ends = trie_->end_tokens();
  if (std::find(ends.begin(), ends.end(), token) != ends.end()) return;
  const std::string_view piece = trie_->piece(token);
  if (piece.empty())
    throw Error("grammar", "token " + std::to_string(token) + " has no text to match");
  matcher_.accept(piece);
  allowed_current_ = false;
}

bool GrammarConstraint::accept_text(std::string_view bytes) {
  std::optional<GrammarMatcher> next = matcher_.after(bytes);
  if (!next) return false;
  matcher_ = std::move(*next);
  allowed_current_ = false;
  return true;
}

}  // namespace oxi::llm
