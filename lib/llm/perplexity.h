// Perplexity of a model over a text, as llama.cpp's perplexity tool measures it: the text's
// tokens in chunks of n_ctx, each evaluated from an empty cache (its first token replaced by
// BOS when the model adds one), and the second half of each chunk scored: the negative
// log-likelihood of each token given those before it in its chunk (positions n_ctx/2 + 1 ..
// n_ctx - 1). PPL = exp(mean NLL); its error, as llama.cpp estimates it,
// PPL * sqrt(var(NLL) / (n - 1)).
// With a stride (llama.cpp's --ppl-stride S), windows of n_ctx + S/2 tokens that start S apart,
// each from an empty cache with its own first token (llama.cpp's strided run puts no BOS in:
// it sets the BOS only after evaluating the batch), and each window's last S tokens scored, so
// that every scored token sees at least n_ctx - S/2 - 1 tokens before it.
//
//   Session session(model, backend, 512);
//   PerplexityResult r = perplexity(session, tokens, {.n_ctx = 512});
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace oxi::llm {

class Session;

// Each scored position's logits (n_vocab) and the token they score, in order.
using ScoredLogits =
    std::function<void(size_t chunk, std::span<const float> logits, int32_t target)>;

struct PerplexityOptions {
  size_t n_ctx = 512;     // tokens per chunk (llama.cpp's -c)
  size_t max_chunks = 0;  // chunks to score at most (--chunks); 0 = every whole chunk
  size_t stride = 0;      // --ppl-stride: 0 = whole chunks; else windows S apart
  // Tokens a chunk (a window) evaluates: n_ctx, or n_ctx + stride / 2 with a stride.
  size_t window() const { return n_ctx + stride / 2; }
};

struct PerplexityResult {
  size_t chunks = 0;            // chunks scored
  size_t scored = 0;            // tokens scored: chunks x (n_ctx - n_ctx/2 - 1), or x stride
  double ppl = 0;               // exp(mean NLL)
  double ppl_error = 0;         // its standard error (0 with fewer than two tokens scored)
  double mean_nll = 0;          // nats per scored token
  std::vector<double> running;  // PPL over the chunks so far, after each one
};

// The chunks perplexity() scores for a text of n_tokens: whole chunks of n_ctx, at most
// max_chunks; 0 when the text has fewer than 2 x n_ctx tokens (or n_ctx is below 4). With a
// stride, the windows that fit, (n_tokens - window + stride - 1) / stride; 0 when the text is
// no longer than one window or the stride is not below the window.
size_t perplexity_chunks(size_t n_tokens, const PerplexityOptions& options);

// `session` evaluates the chunks (its cache is cleared first and holds the last chunk after);
// its context must hold n_ctx positions. `on_chunk(index, running PPL)` after each chunk;
// returning false stops there (the result covers the chunks done); on_logits sees each scored
// position (to write a log-probability file, log_prob_file.h). Throws oxi::Error when the
// text has fewer than 2 x n_ctx tokens (llama.cpp's minimum; with a stride, no more than one
// window), n_ctx is below 4 or the stride is not below the window.
PerplexityResult perplexity(Session& session, std::span<const int32_t> tokens,
                            const PerplexityOptions& options,
                            const std::function<bool(size_t, double)>& on_chunk = {},
                            const ScoredLogits& on_logits = {});

// The chunk loop under perplexity() and kl_divergence.h: the first `chunks` chunks of n_ctx
// tokens (tokens.size() >= chunks x n_ctx), each from an empty cache with BOS first where the
// model adds one; on_logits(chunk, logits, target) for each scored position in order, then
// on_chunk(chunk) (false: stop). Returns the chunks done. Throws oxi::Error as perplexity().
size_t evaluate_chunks(Session& session, std::span<const int32_t> tokens, size_t n_ctx,
                       size_t chunks, const ScoredLogits& on_logits,
                       const std::function<bool(size_t)>& on_chunk = {});

// The general loop under it: `count` windows of `length` tokens starting `step` apart, each
// from an empty cache (its first token replaced by BOS where `bos` is set and the model adds
// one), the logits of positions first_scored .. length - 2 scoring the next token.
struct Windows {
  size_t count = 0, step = 0, length = 0, first_scored = 0;
  bool bos = true;
};
size_t evaluate_windows(Session& session, std::span<const int32_t> tokens, const Windows& windows,
                        const ScoredLogits& on_logits,
                        const std::function<bool(size_t)>& on_chunk = {});

// -log p(target) from one position's logits (log-sum-exp in double precision).
double negative_log_likelihood(std::span<const float> logits, int32_t target);

}  // namespace oxi::llm
