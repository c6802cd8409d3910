// Text embeddings from a model's hidden states, as llama.cpp computes them (llama-embedding,
// llama-server's /v1/embeddings): the tokens (BOS / EOS as the tokenizer adds them) run through
// the model from an empty cache, their final-normed hidden states pooled into one vector and
// normalized. Embedding models built on these architectures (Qwen3-Embedding: qwen3, last-token
// pooling) say their pooling in {arch}.pooling_type; others default to mean pooling.
//
//   Session session(model, backend, tokens.size());
//   std::vector<float> e = embed(session, tokens, default_pooling(*model), 2);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "backends/backend.h"

#include "lib/llm/model.h"
#include "lib/llm/session.h"

namespace oxi::llm {

enum class Pooling {
  mean,  // the average of every token's state
  cls,   // the first token's
  last,  // the last token's
};
const char* to_string(Pooling pooling);
std::optional<Pooling> parse_pooling(std::string_view name);  // "mean", "cls", "last"
// The model's pooling (its pooling_type: mean, cls or last); mean when the file does not say
// or says none. Throws oxi::Error for rank pooling (rerankers are not done).
Pooling default_pooling(const Model& model);

// llama.cpp's --embd-normalize: -1 none, 0 scaled to int16 (max |x| -> 32760), 1 taxicab,
// 2 euclidean (its default), p > 2 the p-norm.
void normalize_embedding(std::span<float> v, int norm);

// The embedding of `tokens` (non-empty): `session` is emptied first and holds them after.
// Throws oxi::Error when they do not fit its context.
std::vector<float> embed(Session& session, std::span<const int32_t> tokens, Pooling pooling,
                         int norm = 2);

// The tokens an embedding of `text` takes, as llama-embedding tokenizes it: BOS / EOS as the
// model's tokenizer adds them, special-token text parsed.
std::vector<int32_t> embedding_tokens(const Model& model, std::string_view text);
// The embeddings of several token lists (each non-empty) from one session of its own, sized to
// the longest. Throws oxi::Error for an empty list.
std::vector<std::vector<float>> embed_all(const std::shared_ptr<const Model>& model,
                                          backends::Backend& backend,
                                          const std::vector<std::vector<int32_t>>& inputs,
                                          Pooling pooling, int norm = 2);

}  // namespace oxi::llm
