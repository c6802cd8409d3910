#include "lib/llm/embeddings.h"

#include <algorithm>
#include <cmath>

#include "lib/core/error.h"
#include "lib/tokenizer/tokenizer.h"

namespace oxi::llm {

const char* to_string(Pooling pooling) {
  switch (pooling) {
    case Pooling::mean:
      return "mean";
    case Pooling::cls:
      return "cls";
    case Pooling::last:
      return "last";
  }
  return "?";
}

std::optional<Pooling> parse_pooling(std::string_view name) {
  for (Pooling p : {Pooling::mean, Pooling::cls, Pooling::last})
    if (name == to_string(p)) return p;
  return std::nullopt;
}

Pooling default_pooling(const Model& model) {
  switch (model.config().pooling_type) {
    case 2:
      return Pooling::cls;
    case 3:
      return Pooling::last;
    case 4:
      throw Error("embeddings", "the model pools for ranking (a reranker): not supported");
    default:  // 1 mean; none or not said: mean, as an OpenAI-style endpoint needs one vector
      return Pooling::mean;
  }
}

void normalize_embedding(std::span<float> v, int norm) {
  if (norm < 0) return;
  double sum = 0.0;
  if (norm == 0) {
    for (float x : v) sum = std::max(sum, std::fabs(static_cast<double>(x)));
    sum /= 32760.0;
  } else if (norm == 2) {
    for (float x : v) sum += static_cast<double>(x) * x;
    sum = std::sqrt(sum);
  } else {
    for (float x : v) sum += std::pow(std::fabs(static_cast<double>(x)), norm);
    sum = std::pow(sum, 1.0 / norm);
  }
  const double scale = sum > 0.0 ? 1.0 / sum : 0.0;
  for (float& x : v) x = static_cast<float>(x * scale);
}

std::vector<float> embed(Session& session, std::span<const int32_t> tokens, Pooling pooling,
                         int norm) {
  if (tokens.empty()) throw Error("embeddings", "no tokens to embed");
  session.truncate(0);
  const std::span<const float> states = session.hidden(tokens);
  const size_t width = static_cast<size_t>(session.model().config().n_embd);
  const size_t n = tokens.size();
  std::vector<double> pooled(width, 0.0);
  const auto add = [&](size_t t) {
    for (size_t i = 0; i < width; ++i) pooled[i] += states[t * width + i];
  };
  switch (pooling) {
    case Pooling::mean:
      for (size_t t = 0; t < n; ++t) add(t);
      for (double& x : pooled) x /= static_cast<double>(n);
      break;
    case Pooling::cls:
      add(0);
      break;
    case Pooling::last:
      add(n - 1);
      break;
  }
  std::vector<float> out(pooled.begin(), pooled.end());
  normalize_embedding(out, norm);
  return out;
}

std::vector<int32_t> embedding_tokens(const Model& model, std::string_view text) {
  const tokenizer::Tokenizer& tok = model.tokenizer();
  return tok.encode(text, tok.add_bos(), /*parse_special=*/true);
}

std::vector<std::vector<float>> embed_all(const std::shared_ptr<const Model>& model,
                                          backends::Backend& backend,
                                          const std::vector<std::vector<int32_t>>& inputs,
                                          Pooling pooling, int norm) {
  size_t longest = 1;
  for (const std::vector<int32_t>& ids : inputs) longest = std::max(longest, ids.size());
  Session session(model, backend, longest);
  std::vector<std::vector<float>> out;
  for (const std::vector<int32_t>& ids : inputs) out.push_back(embed(session, ids, pooling, norm));
  return out;
}

}  // namespace oxi::llm
