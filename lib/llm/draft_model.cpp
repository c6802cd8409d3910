#include "lib/llm/draft_model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "lib/core/error.h"
#include "lib/llm/model.h"
#include "lib/llm/session.h"
#include "lib/tokenizer/tokenizer.h"

namespace oxi::llm {

DraftModel::DraftModel(std::shared_ptr<const Model> draft, backends::Backend& backend, size_t n_ctx,
                       const tokenizer::Tokenizer& target_vocabulary)
    : model_(std::move(draft)), ends_(model_->eos_ids()) {
  const tokenizer::Tokenizer& tok = model_->tokenizer();
  const std::string file = model_->path().string();
  if (tok.vocab_size() != target_vocabulary.vocab_size() ||
      static_cast<size_t>(model_->config().n_vocab) != tok.vocab_size())
    throw Error(file, "the draft model's vocabulary has " + std::to_string(tok.vocab_size()) +
                          " tokens, the model's " + std::to_string(target_vocabulary.vocab_size()));
  for (size_t id = 0; id < tok.vocab_size(); ++id) {
    const auto token = static_cast<int32_t>(id);
    if (tok.token_piece(token) != target_vocabulary.token_piece(token))
      throw Error(file, "the draft model's token " + std::to_string(id) + " is '" +
                            tok.token_piece(token) + "', the model's '" +
                            target_vocabulary.token_piece(token) + "'");
  }
  session_ = std::make_unique<Session>(model_, backend, n_ctx);
}

DraftModel::~DraftModel() = default;

const Model& DraftModel::model() const {
  return *model_;
}

std::vector<int32_t> DraftModel::propose(std::span<const int32_t> context, int32_t next, size_t max,
                                         float p_min) {
  std::vector<int32_t> proposed;
  if (max == 0 || context.size() + max > session_->n_ctx()) return proposed;
  // The draft's cache keeps the prefix it shares with context + next; the rest is evaluated.
  std::vector<int32_t> wanted(context.begin(), context.end());
  wanted.push_back(next);
  const std::vector<int32_t>& cached = session_->tokens();
  size_t common = 0;
  while (common < cached.size() && common < wanted.size() && cached[common] == wanted[common])
    ++common;
  // At least the last token is evaluated again: its logits are not kept.
  common = std::min(common, wanted.size() - 1);
  session_->truncate(common);
  std::span<const float> logits = session_->eval(std::span<const int32_t>(wanted).subspan(common));
  while (proposed.size() < max) {
    const auto top = std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (float l : logits) sum += std::exp(static_cast<double>(l) - *top);
    if (1.0 / sum < p_min) break;  // the top token's probability
    const auto id = static_cast<int32_t>(top - logits.begin());
    proposed.push_back(id);
    if (std::find(ends_.begin(), ends_.end(), id) != ends_.end()) break;
    if (proposed.size() < max) logits = session_->eval(std::span<const int32_t>(&id, 1));
  }
  return proposed;
}

}  // namespace oxi::llm
