#include "lib/llm/kl_divergence.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "lib/core/error.h"
#include "lib/llm/log_prob_file.h"
#include "lib/llm/model.h"
#include "lib/llm/perplexity.h"
#include "lib/llm/session.h"

namespace oxi::llm {
namespace {

// Base tokens this far below the base's top one are left out of the divergence: the file
// rounds them all to its floor (llama.cpp's choice).
constexpr double kFloor = -16.0;

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  if (q <= 0) return values.front();
  if (q >= 1) return values.back();
  const double at = q * static_cast<double>(values.size() - 1);
  const auto i = static_cast<size_t>(at);
  const double f = at - static_cast<double>(i);
  return (1 - f) * values[i] + f * values[std::min(i + 1, values.size() - 1)];
}

}  // namespace

void KlDivergence::add(std::span<const float> logits, std::span<const float> base_log_probs,
                       int32_t target) {
  const size_t top =
      static_cast<size_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - logits[top]);
  const double log_z = logits[top] + std::log(sum);  // log p(i) = logit(i) - log_z
  const auto t = static_cast<size_t>(target);
  const double nll = log_z - logits[t];
  const double base_nll = -static_cast<double>(base_log_probs[t]);
  nll_ += nll;
  nll2_ += nll * nll;
  base_nll_ += base_nll;
  base_nll2_ += base_nll * base_nll;
  nll_base_nll_ += nll * base_nll;

  double kld = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const double base = base_log_probs[i];
    if (base > kFloor) kld += std::exp(base) * (base - (logits[i] - log_z));
  }
  kld_sum_ += kld;
  kld2_ += kld * kld;
  kld_.push_back(kld);
  const size_t base_top = static_cast<size_t>(
      std::max_element(base_log_probs.begin(), base_log_probs.end()) - base_log_probs.begin());
  same_top_ += top == base_top;

  const double p_diff = std::exp(-nll) - std::exp(-base_nll);
  p_diff_ += p_diff;
  p_diff2_ += p_diff * p_diff;
  p_diff4_ += p_diff * p_diff * p_diff * p_diff;
  p_diffs_.push_back(p_diff);
  ++count_;
}

// llama.cpp's estimates: the mean, and its standard error when there are more than ten.
Estimate KlDivergence::mean(double sum, double sum2, size_t n) {
  if (n == 0) return {};
  const double m = sum / static_cast<double>(n);
  const double variance = sum2 / static_cast<double>(n) - m * m;
  return {m, variance > 0 && n > 10 ? std::sqrt(variance / static_cast<double>(n - 1)) : 0.0};
}

double KlDivergence::ln_ppl_covariance() const {
  if (count_ < 10) return 0;
  const auto n = static_cast<double>(count_);
  return (nll_base_nll_ / n - (nll_ / n) * (base_nll_ / n)) / (n - 1);
}

Estimate KlDivergence::ppl() const {
  const Estimate log_ppl = mean(nll_, nll2_, count_);
  const double v = std::exp(log_ppl.value);
  return {v, v * log_ppl.error};
}

Estimate KlDivergence::base_ppl() const {
  const Estimate log_ppl = mean(base_nll_, base_nll2_, count_);
  const double v = std::exp(log_ppl.value);
  return {v, v * log_ppl.error};
}

double KlDivergence::ln_ppl_correlation() const {
  const double spread = mean(nll_, nll2_, count_).error * mean(base_nll_, base_nll2_, count_).error;
  return spread > 0 ? ln_ppl_covariance() / spread : 0;
}

Estimate KlDivergence::ln_ppl_ratio() const {
  const Estimate a = mean(nll_, nll2_, count_), b = mean(base_nll_, base_nll2_, count_);
  const double variance = a.error * a.error + b.error * b.error - 2 * ln_ppl_covariance();
  return {a.value - b.value, std::sqrt(std::max(variance, 0.0))};
}

Estimate KlDivergence::ppl_ratio() const {
  const Estimate r = ln_ppl_ratio();
  const double v = std::exp(r.value);
  return {v, v * r.error};
}

Estimate KlDivergence::ppl_difference() const {
  const Estimate a = ppl(), b = base_ppl();
  const double covariance = a.value * b.value * ln_ppl_covariance();
  const double variance = a.error * a.error + b.error * b.error - 2 * covariance;
  return {a.value - b.value, std::sqrt(std::max(variance, 0.0))};
}

Estimate KlDivergence::mean_kld() const {
  return mean(kld_sum_, kld2_, count_);
}

Estimate KlDivergence::mean_p_diff() const {
  return mean(p_diff_, p_diff2_, count_);
}

Estimate KlDivergence::rms_p_diff() const {
  const Estimate mse = mean(p_diff2_, p_diff4_, count_);
  const double rms = std::sqrt(mse.value);
  return {rms, rms > 0 ? 0.5 / rms * mse.error : 0.0};
}

Estimate KlDivergence::same_top() const {
  if (count_ < 2) return {count_ ? static_cast<double>(same_top_) : 0.0, 0.0};
  const double p = static_cast<double>(same_top_) / static_cast<double>(count_);
  return {p, std::sqrt(p * (1 - p) / static_cast<double>(count_ - 1))};
}

double KlDivergence::kld_quantile(double q) const {
  return quantile(kld_, q);
}

double KlDivergence::p_diff_quantile(double q) const {
  return quantile(p_diffs_, q);
}

KlDivergence kl_divergence(Session& session, LogProbReader& base, size_t max_chunks,
                           const std::function<bool(size_t, const KlDivergence&)>& on_chunk) {
  const size_t n_vocab = static_cast<size_t>(session.model().config().n_vocab);
  if (base.n_vocab() != n_vocab)
    throw Error("kl divergence", "the base's vocabulary has " + std::to_string(base.n_vocab()) +
                                     " tokens, the model's " + std::to_string(n_vocab));
  const size_t chunks = max_chunks > 0 ? std::min(max_chunks, base.n_chunk()) : base.n_chunk();
  KlDivergence kld;
  std::vector<float> base_log_probs(n_vocab);
  evaluate_chunks(
      session, base.tokens(), base.n_ctx(), chunks,
      [&](size_t, std::span<const float> logits, int32_t target) {
        base.next(base_log_probs);
        kld.add(logits, base_log_probs, target);
      },
      [&](size_t c) { return !on_chunk || on_chunk(c, kld); });
  return kld;
}

}  // namespace oxi::llm
