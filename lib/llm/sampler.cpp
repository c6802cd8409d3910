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

Sampler::Sampler(const SamplerOptions& options) : options_(options), rng_(options.seed) {
  for (const LogitBias& b : options_.logit_bias)
    if (std::isnan(b.bias) || b.bias == std::numeric_limits<float>::infinity())
      throw Error("sampler",
                  "logit bias of token " + std::to_string(b.id) + " must be a number or -inf");
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history,
                        const std::vector<int32_t>* allowed) {
  if (logits.empty()) throw Error("sampler", "no logits to sample from");
  scratch_.assign(logits.begin(), logits.end());
  for (const LogitBias& b : options_.logit_bias) {
    if (b.id < 0 || static_cast<size_t>(b.id) >= scratch_.size())
      throw Error("sampler", "logit bias token " + std::to_string(b.id) +
                                 " is not in the vocabulary (" + std::to_string(scratch_.size()) +
                                 " tokens)");
    scratch_[static_cast<size_t>(b.id)] += b.bias;
  }
  std::span<const int32_t> recent = history;
  if (options_.repeat_last_n >= 0 && recent.size() > static_cast<size_t>(options_.repeat_last_n))
    recent = recent.last(static_cast<size_t>(options_.repeat_last_n));
  apply_penalties(scratch_, recent,
                  {options_.repeat_penalty, options_.frequency_penalty, options_.presence_penalty});

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

  // Greedy: llama.cpp's temperature 0 keeps the best token of what the filters before it
  // left; of them only the typical filter may drop the best one.
  if (options_.temperature <= 0.0f && options_.typical_p >= 1.0f) return best.id;

  top_k_filter(candidates_, options_.top_k);
  typical_filter(candidates_, options_.typical_p);
  if (options_.temperature <= 0.0f) return candidates_.front().id;  // sorted by the filter
  top_p_filter(candidates_, options_.top_p);
  min_p_filter(candidates_, options_.min_p);
  for (Candidate& c : candidates_) c.logit /= options_.temperature;
  softmax(candidates_);

  const double u = uniform01(rng_);
  double cumulative = 0;
  for (const Candidate& c : candidates_) {
    cumulative += c.p;
    if (u < cumulative) return c.id;
  }
  return candidates_.back().id;  // rounding left u above the total
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
