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

size_t evaluate_windows(Session& session, std::span<const int32_t> tokens, const Windows& w,
                        const ScoredLogits& on_logits,
                        const std::function<bool(size_t)>& on_chunk) {
  if (w.length < 2 || w.first_scored + 1 >= w.length)
    throw Error("perplexity", "a window of " + std::to_string(w.length) +
                                  " tokens scoring from position " +
                                  std::to_string(w.first_scored) + " scores nothing");
  if (session.n_ctx() < w.length)
    throw Error("perplexity", "the session holds " + std::to_string(session.n_ctx()) +
                                  " positions, fewer than the chunks' " + std::to_string(w.length));
  const size_t needed = w.count == 0 ? 0 : (w.count - 1) * w.step + w.length;
  if (tokens.size() < needed)
    throw Error("perplexity", std::to_string(w.count) + " chunks of " + std::to_string(w.length) +
                                  " need " + std::to_string(needed) + " tokens, not " +
                                  std::to_string(tokens.size()));
  const Model& model = session.model();
  const size_t n_vocab = static_cast<size_t>(model.config().n_vocab);
  for (int32_t t : tokens.first(needed))
    if (t < 0 || static_cast<size_t>(t) >= n_vocab)
      throw Error("perplexity", "token " + std::to_string(t) + " is not in the vocabulary");
  const tokenizer::Tokenizer& tok = model.tokenizer();
  const std::optional<int32_t> bos = w.bos && tok.add_bos() ? tok.bos() : std::nullopt;

  // The positions before first_scored are context only; each later position's logits score the
  // next token, up to the window's last.
  std::vector<int32_t> chunk(w.length);
  for (size_t c = 0; c < w.count; ++c) {
    std::copy_n(tokens.begin() + static_cast<std::ptrdiff_t>(c * w.step), w.length, chunk.begin());
    if (bos) chunk[0] = *bos;
    session.truncate(0);
    if (w.first_scored > 0) session.eval(std::span<const int32_t>(chunk).first(w.first_scored));
    // The scored positions in batches, so that their logits (n_vocab each) stay bounded.
    for (size_t at = w.first_scored; at + 1 < w.length;) {
      const size_t n = std::min(Session::kMaxBatch, w.length - 1 - at);
      const std::span<const float> logits =
          session.eval(std::span<const int32_t>(chunk).subspan(at, n), /*all_logits=*/true);
      for (size_t i = 0; i < n; ++i)
        on_logits(c, logits.subspan(i * n_vocab, n_vocab), chunk[at + i + 1]);
      at += n;
    }
    if (on_chunk && !on_chunk(c)) return c + 1;
  }
  return w.count;
}

size_t evaluate_chunks(Session& session, std::span<const int32_t> tokens, size_t n_ctx,
                       size_t chunks, const ScoredLogits& on_logits,
                       const std::function<bool(size_t)>& on_chunk) {
  if (n_ctx < 4) throw Error("perplexity", "the context must hold at least 4 tokens");
  return evaluate_windows(
      session, tokens, {.count = chunks, .step = n_ctx, .length = n_ctx, .first_scored = n_ctx / 2},
      on_logits, on_chunk);
}

size_t perplexity_chunks(size_t n_tokens, const PerplexityOptions& options) {
  size_t chunks = 0;
  if (options.stride > 0) {
    const size_t window = options.window();
    if (options.n_ctx < 4 || options.stride >= window || n_tokens <= window) return 0;
    chunks = (n_tokens - window + options.stride - 1) / options.stride;
  } else {
    if (options.n_ctx < 4 || n_tokens < 2 * options.n_ctx) return 0;
    chunks = n_tokens / options.n_ctx;
  }
  return options.max_chunks > 0 ? std::min(chunks, options.max_chunks) : chunks;
}

PerplexityResult perplexity(Session& session, std::span<const int32_t> tokens,
                            const PerplexityOptions& options,
                            const std::function<bool(size_t, double)>& on_chunk,
                            const ScoredLogits& on_logits) {
  const size_t n_ctx = options.n_ctx;
  if (n_ctx < 4) throw Error("perplexity", "the context must hold at least 4 tokens");
  const size_t window = options.window();
  if (options.stride > 0 && options.stride >= window)
    throw Error("perplexity", "a stride of " + std::to_string(options.stride) +
                                  " is not below its window of " + std::to_string(window) +
                                  " tokens (the context + stride / 2)");
  if (options.stride > 0 && tokens.size() <= window)
    throw Error("perplexity", "the text has " + std::to_string(tokens.size()) +
                                  " tokens; windows of " + std::to_string(window) +
                                  " (the context + stride / 2) need more");
  if (options.stride == 0 && tokens.size() < 2 * n_ctx)
    throw Error("perplexity", "the text has " + std::to_string(tokens.size()) +
                                  " tokens; a context of " + std::to_string(n_ctx) +
                                  " needs at least " + std::to_string(2 * n_ctx));
  const size_t chunks = perplexity_chunks(tokens.size(), options);
  // Whole chunks score their second half after BOS; windows their last `stride` tokens.
  const Windows windows =
      options.stride > 0
          ? Windows{.count = chunks,
                    .step = options.stride,
                    .length = window,
                    .first_scored = window - options.stride - 1,
                    .bos = false}
          : Windows{.count = chunks, .step = n_ctx, .length = n_ctx, .first_scored = n_ctx / 2};
  PerplexityResult result;
  double nll = 0, nll2 = 0;
  evaluate_windows(
      session, tokens, windows,
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
