// DraftModel: the small model of speculative decoding (llama.cpp's --model-draft). Given the
// target's context and its next token, it proposes the tokens it would pick greedily after
// them; the engine evaluates them all in one batch on the target model and keeps those the
// target's own sampling picks too (engine.cpp), so the reply is the one the target alone gives
// (same sampler, same draws), in fewer passes over the target's weights when the draft is right.
//
//   DraftModel draft(Model::load("small.gguf"), backend, n_ctx, target.tokenizer());
//   std::vector<int32_t> guess = draft.propose(context, next, 16, 0.8f);
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backends/backend.h"

namespace oxi::tokenizer {
class Tokenizer;
}

namespace oxi::llm {

class Model;
class Session;

class DraftModel {
 public:
  // Throws oxi::Error naming the draft's file when its vocabulary is not the target's (same
  // size, same token texts): its tokens would mean other things.
  DraftModel(std::shared_ptr<const Model> draft, backends::Backend& backend, size_t n_ctx,
             const tokenizer::Tokenizer& target_vocabulary);
  ~DraftModel();

  // Up to `max` tokens after context + next, each the draft's most likely one, stopping before
  // one whose probability is below p_min (llama.cpp's --draft-p-min) and after an end token.
  // The draft's cache keeps what it shares with the context from one call to the next.
  std::vector<int32_t> propose(std::span<const int32_t> context, int32_t next, size_t max,
                               float p_min);

  const Model& model() const;

 private:
  std::shared_ptr<const Model> model_;
  std::unique_ptr<Session> session_;
  std::vector<int32_t> ends_;
};

}  // namespace oxi::llm
