// KL divergence of a model's next-token distributions from a base model's, as llama.cpp's
// perplexity tool computes it (--kl-divergence): the base's log-probabilities come from a file
// (log_prob_file.h) written over the same text; the model evaluates the same chunks
// (perplexity.h) and, at each scored position, KLD = sum over tokens of p_base x (log p_base -
// log p) (tokens more than 16 nats below the base's top left out, as the file cannot tell them
// apart), Δp = p(next token) - p_base(next token), and whether both put the same token on top.
//
//   LogProbReader base("base.kld");
//   KlDivergence kld = kl_divergence(session, base);
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace oxi::llm {

class LogProbReader;
class Session;

// A value and its standard error.
struct Estimate {
  double value = 0, error = 0;
};

// The sums over scored positions, and the summaries llama.cpp prints from them.
class KlDivergence {
 public:
  // One scored position: the model's logits and the base's log-probabilities (n_vocab each).
  void add(std::span<const float> logits, std::span<const float> base_log_probs, int32_t target);

  size_t count() const { return count_; }
  Estimate ppl() const;               // the model's perplexity
  Estimate base_ppl() const;          // the base's (from the file's rounded log-probabilities)
  double ln_ppl_correlation() const;  // of the per-token NLLs
  Estimate ln_ppl_ratio() const;      // mean ln(PPL / PPL(base))
  Estimate ppl_ratio() const;         // PPL / PPL(base)
  Estimate ppl_difference() const;    // PPL - PPL(base)
  Estimate mean_kld() const;          // nats
  Estimate mean_p_diff() const;       // probability
  Estimate rms_p_diff() const;
  Estimate same_top() const;  // fraction
  // The q-quantile (0..1) of the per-position values, linearly between sorted neighbours.
  double kld_quantile(double q) const;
  double p_diff_quantile(double q) const;
  const std::vector<double>& kld_values() const { return kld_; }

 private:
  static Estimate mean(double sum, double sum2, size_t n);
  double ln_ppl_covariance() const;
  size_t count_ = 0, same_top_ = 0;
  double nll_ = 0, nll2_ = 0, base_nll_ = 0, base_nll2_ = 0, nll_base_nll_ = 0;
  double kld_sum_ = 0, kld2_ = 0, p_diff_ = 0, p_diff2_ = 0, p_diff4_ = 0;
  std::vector<double> kld_, p_diffs_;
};

// The base file's chunks (its tokens, its n_ctx; `session` must hold n_ctx positions),
// at most max_chunks of them (0 = all). on_chunk(index, sums so far) after each chunk;
// returning false stops. Throws oxi::Error when the file's vocabulary is not the model's.
KlDivergence kl_divergence(Session& session, LogProbReader& base, size_t max_chunks = 0,
                           const std::function<bool(size_t, const KlDivergence&)>& on_chunk = {});

}  // namespace oxi::llm
