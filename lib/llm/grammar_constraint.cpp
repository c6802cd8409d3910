#include "lib/llm/grammar_constraint.h"

#include <algorithm>

#include "lib/core/error.h"
#include "lib/tokenizer/tokenizer.h"

namespace oxi::llm {

GrammarConstraint::GrammarConstraint(const tokenizer::Tokenizer& tokenizer,
                                     std::string_view grammar, std::vector<int32_t> end_tokens)
    : matcher_(std::make_shared<const gbnf::Grammar>(gbnf::Grammar::parse(grammar))),
      ends_(std::move(end_tokens)) {
  pieces_.resize(tokenizer.vocab_size());
  for (size_t id = 0; id < pieces_.size(); ++id)
    if (!tokenizer.is_control(static_cast<int32_t>(id)))
      pieces_[id] = tokenizer.token_piece(static_cast<int32_t>(id));
}

const std::vector<int32_t>& GrammarConstraint::allowed() {
  if (allowed_current_) return allowed_;
  allowed_.clear();
  const bool can_end = matcher_.can_end();
  for (size_t id = 0; id < pieces_.size(); ++id) {
    const auto token = static_cast<int32_t>(id);
    if (std::find(ends_.begin(), ends_.end(), token) != ends_.end()) {
      if (can_end) allowed_.push_back(token);
    } else if (!pieces_[id].empty() && matcher_.accepts(pieces_[id])) {
      allowed_.push_back(token);
    }
  }
  if (allowed_.empty())
    throw Error("grammar", can_end ? "the grammar is complete but the model has no end token"
                                   : "no token can continue the text in the grammar");
  allowed_current_ = true;
  return allowed_;
}

void GrammarConstraint::accept(int32_t token) {
  if (std::find(ends_.begin(), ends_.end(), token) != ends_.end()) return;
  if (token < 0 || static_cast<size_t>(token) >= pieces_.size() || pieces_[token].empty())
    throw Error("grammar", "token " + std::to_string(token) + " has no text to match");
  matcher_.accept(pieces_[static_cast<size_t>(token)]);
  allowed_current_ = false;
}

}  // namespace oxi::llm
