#include "lib/llm/perplexity.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "lib/core/error.h"
#include "lib/llm/model.h"
#include "lib/llm/session.h"
#include "lib/tokenizer/tokenizer.h"

namespace oxi::llm {

double negative_log_likelihood(std::span<const float> logits, int32_t target) {
  const float top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - top);
  return std::log(sum) + top - logits[static_cast<size_t>(target)];
}

size_t evaluate_chunks(Session& session, std::span<const int32_t> tokens, size_t n_ctx,
                       size_t chunks, const ScoredLogits& on_logits,
                       const std::function<bool(size_t)>& on_chunk) {
  if (n_ctx < 4) throw Error("perplexity", "the context must hold at least 4 tokens");
  if (session.n_ctx() < n_ctx)
    throw Error("perplexity", "the session holds " + std::to_string(session.n_ctx()) +
                                  " positions, fewer than the chunks' " + std::to_string(n_ctx));
  if (tokens.size() < chunks * n_ctx)
    throw Error("perplexity", std::to_string(chunks) + " chunks of " + std::to_string(n_ctx) +
                                  " need " + std::to_string(chunks * n_ctx) + " tokens, not " +
                                  std::to_string(tokens.size()));
  const Model& model = session.model();
  const size_t n_vocab = static_cast<size_t>(model.config().n_vocab);
  for (int32_t t : tokens.first(chunks * n_ctx))
    if (t < 0 || static_cast<size_t>(t) >= n_vocab)
      throw Error("perplexity", "token " + std::to_string(t) + " is not in the vocabulary");
  const tokenizer::Tokenizer& tok = model.tokenizer();
  const std::optional<int32_t> bos = tok.add_bos() ? tok.bos() : std::nullopt;

  // The first half of a chunk is context only; each later position's logits score the next
  // token, up to the chunk's last.
  const size_t first = n_ctx / 2;
  std::vector<int32_t> chunk(n_ctx);
  for (size_t c = 0; c < chunks; ++c) {
    std::copy_n(tokens.begin() + static_cast<std::ptrdiff_t>(c * n_ctx), n_ctx, chunk.begin());
    if (bos) chunk[0] = *bos;
    session.truncate(0);
    session.eval(std::span<const int32_t>(chunk).first(first));
    // The scored positions in batches, so that their logits (n_vocab each) stay bounded.
    for (size_t at = first; at + 1 < n_ctx;) {
      const size_t n = std::min(Session::kMaxBatch, n_ctx - 1 - at);
      const std::span<const float> logits =
          session.eval(std::span<const int32_t>(chunk).subspan(at, n), /*all_logits=*/true);
      for (size_t i = 0; i < n; ++i)
        on_logits(c, logits.subspan(i * n_vocab, n_vocab), chunk[at + i + 1]);
      at += n;
    }
    if (on_chunk && !on_chunk(c)) return c + 1;
  }
  return chunks;
}

size_t perplexity_chunks(size_t n_tokens, const PerplexityOptions& options) {
  if (options.n_ctx < 4 || n_tokens < 2 * options.n_ctx) return 0;
  const size_t chunks = n_tokens / options.n_ctx;
  return options.max_chunks > 0 ? std::min(chunks, options.max_chunks) : chunks;
}

PerplexityResult perplexity(Session& session, std::span<const int32_t> tokens,
                            const PerplexityOptions& options,
                            const std::function<bool(size_t, double)>& on_chunk,
                            const ScoredLogits& on_logits) {
  const size_t n_ctx = options.n_ctx;
  if (n_ctx < 4) throw Error("perplexity", "the context must hold at least 4 tokens");
  if (tokens.size() < 2 * n_ctx)
    throw Error("perplexity", "the text has " + std::to_string(tokens.size()) +
                                  " tokens; a context of " + std::to_string(n_ctx) +
                                  " needs at least " + std::to_string(2 * n_ctx));
  const size_t chunks = perplexity_chunks(tokens.size(), options);
  PerplexityResult result;
  double nll = 0, nll2 = 0;
  evaluate_chunks(
      session, tokens, n_ctx, chunks,
      [&](size_t c, std::span<const float> logits, int32_t target) {
        const double v = negative_log_likelihood(logits, target);
        nll += v;
        nll2 += v * v;
        ++result.scored;
        if (on_logits) on_logits(c, logits, target);
      },
      [&](size_t c) {
        ++result.chunks;
        result.running.push_back(std::exp(nll / static_cast<double>(result.scored)));
        return !on_chunk || on_chunk(c, result.running.back());
      });
  const auto count = static_cast<double>(result.scored);
  result.mean_nll = nll / count;
  result.ppl = std::exp(result.mean_nll);
  const double variance = nll2 / count - result.mean_nll * result.mean_nll;
  if (variance > 0 && result.scored > 1)
    result.ppl_error = std::sqrt(variance / (count - 1)) * result.ppl;
  return result;
}

}  // namespace oxi::llm
