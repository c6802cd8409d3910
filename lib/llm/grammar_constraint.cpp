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
  by_first_byte_.resize(256);
  for (size_t id = 0; id < pieces_.size(); ++id) {
    const auto token = static_cast<int32_t>(id);
    if (tokenizer.is_control(token) || std::find(ends_.begin(), ends_.end(), token) != ends_.end())
      continue;
    pieces_[id] = tokenizer.token_piece(token);
    if (!pieces_[id].empty()) by_first_byte_[static_cast<uint8_t>(pieces_[id][0])].push_back(token);
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
    for (int byte = 0; byte < 256; ++byte) {
      const std::vector<int32_t>& tokens = by_first_byte_[static_cast<size_t>(byte)];
      if (tokens.empty() || !matcher_.accepts(std::string(1, static_cast<char>(byte)))) continue;
      for (int32_t token : tokens)
        if (matcher_.accepts(pieces_[static_cast<size_t>(token)])) allowed_.push_back(token);
    }
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
