#include "lib/llm/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "lib/core/error.h"
#include "lib/tokenizer/tokenizer.h"

namespace oxi::llm {
namespace {

// Descending logit; equal logits keep the lower id first so results never depend on the order
// candidates were listed in.
bool higher(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

void sort_descending(std::vector<Candidate>& c) {
  if (!std::is_sorted(c.begin(), c.end(), higher)) std::sort(c.begin(), c.end(), higher);
}

// A uniform double in [0, 1) from the top 53 bits: the same sequence on every standard library
// (std::uniform_real_distribution's algorithm is implementation-defined).
double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

}  // namespace

void apply_penalties(std::span<float> logits, std::span<const int32_t> recent,
                     const Penalties& penalties) {
  if (recent.empty() ||
      (penalties.repeat == 1.0f && penalties.frequency == 0.0f && penalties.presence == 0.0f))
    return;
  std::unordered_map<int32_t, int> counts;
  for (int32_t id : recent)
    if (id >= 0 && static_cast<size_t>(id) < logits.size()) ++counts[id];
  for (const auto& [id, count] : counts) {
    float& l = logits[static_cast<size_t>(id)];
    l = l > 0 ? l / penalties.repeat : l * penalties.repeat;
    l -= static_cast<float>(count) * penalties.frequency + penalties.presence;
  }
}

void softmax(std::vector<Candidate>& candidates) {
  if (candidates.empty()) return;
  sort_descending(candidates);
  const float max = candidates.front().logit;
  double sum = 0;
  for (Candidate& c : candidates) {
    c.p = std::exp(c.logit - max);
    sum += c.p;
  }
  for (Candidate& c : candidates) c.p = static_cast<float>(c.p / sum);
}

void top_k_filter(std::vector<Candidate>& candidates, int k) {
  if (k <= 0) return;
  const size_t keep = std::min(candidates.size(), static_cast<size_t>(k));
  std::partial_sort(candidates.begin(), candidates.begin() + keep, candidates.end(), higher);
  candidates.resize(keep);
}

void top_p_filter(std::vector<Candidate>& candidates, float p) {
  if (p >= 1.0f || candidates.empty()) return;
  softmax(candidates);
  double mass = 0;
  size_t keep = candidates.size();
  for (size_t i = 0; i < candidates.size(); ++i) {
    mass += candidates[i].p;
    if (mass >= p) {
      keep = i + 1;
      break;
    }
  }
  candidates.resize(keep);
  softmax(candidates);
}

void typical_filter(std::vector<Candidate>& candidates, float p) {
  if (p >= 1.0f || candidates.empty()) return;
  softmax(candidates);
  double entropy = 0;
  for (const Candidate& c : candidates)
    if (c.p > 0) entropy -= c.p * std::log(static_cast<double>(c.p));
  std::vector<double> distance(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i)
    distance[i] = std::abs(-std::log(static_cast<double>(candidates[i].p)) - entropy);
  std::vector<size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Equal distances keep the more likely (then lower id) first, so the order is defined.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return distance[a] < distance[b]; });
  double mass = 0;
  size_t keep = order.size();
  for (size_t i = 0; i < order.size(); ++i) {
    mass += candidates[order[i]].p;
    if (mass > p) {
      keep = i + 1;
      break;
    }
  }
  std::vector<Candidate> kept;
  kept.reserve(keep);
  for (size_t i = 0; i < keep; ++i) kept.push_back(candidates[order[i]]);
  candidates = std::move(kept);
  softmax(candidates);
}

void min_p_filter(std::vector<Candidate>& candidates, float min_p) {
  if (min_p <= 0.0f || candidates.empty()) return;
  softmax(candidates);
  const float threshold = candidates.front().p * min_p;
  size_t keep = 1;
  while (keep < candidates.size() && candidates[keep].p >= threshold) ++keep;
  candidates.resize(keep);
  softmax(candidates);
}

void top_n_sigma_filter(std::vector<Candidate>& candidates, float n) {
  if (n <= 0.0f || candidates.size() <= 1) return;
  double sum = 0, squares = 0;
  size_t finite = 0;
  float max = -std::numeric_limits<float>::infinity();
  for (const Candidate& c : candidates) {
    if (c.logit == -std::numeric_limits<float>::infinity()) continue;
    max = std::max(max, c.logit);
    sum += c.logit;
    ++finite;
  }
  const double mean = finite > 0 ? sum / static_cast<double>(finite) : 0.0;
  for (const Candidate& c : candidates)
    if (c.logit != -std::numeric_limits<float>::infinity())
      squares += (c.logit - mean) * (c.logit - mean);
  const double sigma = finite > 0 ? std::sqrt(squares / static_cast<double>(finite)) : 0.0;
  const double floor = max - n * sigma;
  std::erase_if(candidates, [&](const Candidate& c) { return c.logit < floor; });
  softmax(candidates);
}

void xtc_filter(std::vector<Candidate>& candidates, float threshold) {
  if (threshold > 0.5f || candidates.size() < 2) return;
  softmax(candidates);
  size_t above = 0;  // the leading candidates at or above the threshold
  while (above < candidates.size() && candidates[above].p >= threshold) ++above;
  if (above < 2) return;
  candidates.erase(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(above - 1));
  softmax(candidates);
}

Sampler::Sampler(const SamplerOptions& options)
    : options_(options), rng_(options.seed), mu_(2.0f * options.mirostat_tau) {
  if (options_.mirostat < 0 || options_.mirostat > 2)
    throw Error("sampler",
                "mirostat must be 0 (off), 1 or 2, not " + std::to_string(options_.mirostat));
  for (const LogitBias& b : options_.logit_bias)
    if (std::isnan(b.bias) || b.bias == std::numeric_limits<float>::infinity())
      throw Error("sampler",
                  "logit bias of token " + std::to_string(b.id) + " must be a number or -inf");
}

void Sampler::check_logit_bias(size_t n_vocab) const {
  for (const LogitBias& b : options_.logit_bias)
    if (b.id < 0 || static_cast<size_t>(b.id) >= n_vocab)
      throw Error("sampler", "logit bias token " + std::to_string(b.id) +
                                 " is not in the vocabulary (" + std::to_string(n_vocab) +
                                 " tokens)");
}

void Sampler::adjust(std::span<const float> logits, std::span<const int32_t> history) {
  if (logits.empty()) throw Error("sampler", "no logits to sample from");
  check_logit_bias(logits.size());
  scratch_.assign(logits.begin(), logits.end());
  for (const LogitBias& b : options_.logit_bias) scratch_[static_cast<size_t>(b.id)] += b.bias;
  std::span<const int32_t> recent = history;
  if (options_.repeat_last_n >= 0 && recent.size() > static_cast<size_t>(options_.repeat_last_n))
    recent = recent.last(static_cast<size_t>(options_.repeat_last_n));
  // llama.cpp's mirostat chain has no penalties.
  if (options_.mirostat == 0)
    apply_penalties(
        scratch_, recent,
        {options_.repeat_penalty, options_.frequency_penalty, options_.presence_penalty});
}

std::vector<int32_t> Sampler::leading_tokens(std::span<const float> logits,
                                             std::span<const int32_t> history, size_t n) {
  adjust(logits, history);
  std::vector<Candidate> all(scratch_.size());
  for (size_t i = 0; i < scratch_.size(); ++i)
    all[i] = {static_cast<int32_t>(i),
              std::isnan(scratch_[i]) ? -std::numeric_limits<float>::infinity() : scratch_[i]};
  n = std::min(n, all.size());
  std::nth_element(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n), all.end(), higher);
  all.resize(n);
  std::sort(all.begin(), all.end(), higher);
  std::vector<int32_t> ids;
  for (const Candidate& c : all) ids.push_back(c.id);
  return ids;
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history,
                        const std::vector<int32_t>* allowed) {
  adjust(logits, history);

  candidates_.clear();
  if (allowed != nullptr) {
    if (allowed->empty()) throw Error("sampler", "no token is allowed");
    for (int32_t id : *allowed) {
      if (id < 0 || static_cast<size_t>(id) >= scratch_.size())
        throw Error("sampler", "allowed token " + std::to_string(id) + " is out of range");
      candidates_.push_back({id, scratch_[static_cast<size_t>(id)]});
    }
  } else {
    candidates_.reserve(scratch_.size());
    for (size_t i = 0; i < scratch_.size(); ++i)
      candidates_.push_back({static_cast<int32_t>(i), scratch_[i]});
  }
  // NaN logits would poison every comparison: treat them as impossible.
  for (Candidate& c : candidates_)
    if (std::isnan(c.logit)) c.logit = -std::numeric_limits<float>::infinity();
  const Candidate& best = *std::min_element(candidates_.begin(), candidates_.end(), higher);
  if (best.logit == -std::numeric_limits<float>::infinity())
    throw Error("sampler", "no token can be picked: every logit is -inf (logit bias?)");

  // Greedy: llama.cpp's temperature 0 keeps the best token of what the samplers before it
  // left; of them only the typical filter and XTC may drop the best one (mirostat comes after
  // the temperature).
  const bool xtc = options_.xtc_probability > 0.0f;
  if (greedy()) return best.id;
  if (options_.mirostat != 0) {
    for (Candidate& c : candidates_) c.logit /= options_.temperature;
    softmax(candidates_);
    return mirostat_step();
  }

  top_n_sigma_filter(candidates_, options_.top_n_sigma);
  top_k_filter(candidates_, options_.top_k);
  typical_filter(candidates_, options_.typical_p);
  top_p_filter(candidates_, options_.top_p);
  min_p_filter(candidates_, options_.min_p);
  // XTC fires with its probability, one draw each time it could change something.
  if (xtc && options_.xtc_threshold <= 0.5f && candidates_.size() >= 2 &&
      uniform01(rng_) <= options_.xtc_probability)
    xtc_filter(candidates_, options_.xtc_threshold);
  if (options_.temperature <= 0.0f)
    return std::min_element(candidates_.begin(), candidates_.end(), higher)->id;
  for (Candidate& c : candidates_) c.logit /= options_.temperature;
  softmax(candidates_);
  return candidates_[draw()].id;
}

size_t Sampler::draw() {
  const double u = uniform01(rng_);
  double cumulative = 0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    cumulative += candidates_[i].p;
    if (u < cumulative) return i;
  }
  return candidates_.size() - 1;  // rounding left u above the total
}

// Mirostat (Basu et al., 2021) as llama.cpp has it, over candidates_ (tempered, softmax'd):
// v1 estimates the Zipf exponent from the 100 likeliest tokens and keeps the top k that makes
// the expected surprise mu; v2 keeps the tokens whose surprise is at most mu. After the draw
// mu moves toward tau by eta times the error.
int32_t Sampler::mirostat_step() {
  const float tau = options_.mirostat_tau, eta = options_.mirostat_eta;
  if (options_.mirostat == 1) {
    constexpr size_t m = 100;
    double sum_ti_bi = 0, sum_ti_sq = 0;
    for (size_t i = 0; i + 1 < m && i + 1 < candidates_.size(); ++i) {
      const double t = std::log(static_cast<double>(i + 2) / static_cast<double>(i + 1));
      const double b = std::log(static_cast<double>(candidates_[i].p) / candidates_[i + 1].p);
      sum_ti_bi += t * b;
      sum_ti_sq += t * t;
    }
    const double s_hat = sum_ti_sq > 0 ? sum_ti_bi / sum_ti_sq : 0.0;
    const double epsilon_hat = s_hat - 1;
    const double n_vocab = static_cast<double>(scratch_.size());
    const double k = std::pow(
        epsilon_hat * std::pow(2.0, mu_) / (1 - std::pow(n_vocab, -epsilon_hat)), 1 / s_hat);
    const double kept = std::isfinite(k)
                            ? std::clamp(k, 1.0, static_cast<double>(candidates_.size()))
                            : static_cast<double>(candidates_.size());
    top_k_filter(candidates_, static_cast<int>(kept));
  } else {
    const auto over = std::find_if(candidates_.begin(), candidates_.end(),
                                   [&](const Candidate& c) { return -std::log2(c.p) > mu_; });
    candidates_.erase(over == candidates_.begin() ? over + 1 : over, candidates_.end());
  }
  softmax(candidates_);
  const size_t i = draw();
  mu_ -= eta * (-std::log2(candidates_[i].p) - tau);
  return candidates_[i].id;
}

ChoiceConstraint::ChoiceConstraint(const tokenizer::Tokenizer& tokenizer,
                                   const std::vector<std::string>& choices, int32_t end_token)
    : choices_(choices), end_token_(end_token) {
  if (choices.empty()) throw Error("--choices", "no choices given");
  for (const std::string& choice : choices) {
    if (choice.empty()) throw Error("--choices", "a choice is empty");
    sequences_.push_back(tokenizer.encode(choice, false));
    if (sequences_.back().empty())
      throw Error("--choices", "choice '" + choice + "' tokenizes to nothing");
  }
  alive_.assign(choices.size(), true);
  update_allowed();
}

void ChoiceConstraint::update_allowed() {
  allowed_.clear();
  std::optional<size_t> complete;
  for (size_t i = 0; i < sequences_.size(); ++i) {
    if (!alive_[i]) continue;
    if (sequences_[i].size() == position_) {
      if (!complete) complete = i;
    } else if (std::find(allowed_.begin(), allowed_.end(), sequences_[i][position_]) ==
               allowed_.end()) {
      allowed_.push_back(sequences_[i][position_]);
    }
  }
  if (complete && allowed_.empty()) {
    done_ = complete;
  } else if (complete &&
             std::find(allowed_.begin(), allowed_.end(), end_token_) == allowed_.end()) {
    // A complete choice that is also the prefix of a longer one: the end token picks it.
    allowed_.push_back(end_token_);
  }
}

void ChoiceConstraint::accept(int32_t token) {
  if (done_) throw Error("--choices", "a choice is already complete");
  if (std::find(allowed_.begin(), allowed_.end(), token) == allowed_.end())
    throw Error("--choices", "token " + std::to_string(token) + " continues no choice");
  bool continues = false;
  for (size_t i = 0; i < sequences_.size(); ++i)
    continues = continues || (alive_[i] && sequences_[i].size() > position_ &&
                              sequences_[i][position_] == token);
  if (!continues) {  // the end token, ending a complete choice
    for (size_t i = 0; i < sequences_.size() && !done_; ++i)
      if (alive_[i] && sequences_[i].size() == position_) done_ = i;
    return;
  }
  for (size_t i = 0; i < sequences_.size(); ++i)
    alive_[i] = alive_[i] && sequences_[i].size() > position_ && sequences_[i][position_] == token;
  ++position_;
  update_allowed();
}

}  // namespace oxi::llm
