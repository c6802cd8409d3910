// Sampler: picks the next token from a model's logits, as llama.cpp's default chain does:
// logit bias → penalties (repetition, frequency, presence) → top-n-sigma → top-k → typical →
// top-p → min-p → XTC → temperature → draw (temperature 0: the best token left). With mirostat
// (1 or 2) the chain is llama.cpp's for it instead: logit bias → temperature → mirostat.
// Each filter is also a free function over a candidate list so that it can be tested alone.
//
//   Sampler sampler({.temperature = 0.7f, .top_k = 40, .seed = 42});
//   int32_t next = sampler.sample(logits, session.tokens());
//
// ChoiceConstraint restricts decoding to a fixed set of replies (--choices): each step may only
// pick a token that continues some still-possible choice, so the reply is always one of them.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace oxi::tokenizer {
class Tokenizer;
}

namespace oxi::llm {

// Added to one token's logit before anything else; -inf: never picked.
struct LogitBias {
  int32_t id;
  float bias;
};

struct SamplerOptions {
  float temperature = 0.8f;        // <= 0: greedy (argmax after bias and penalties)
  int top_k = 40;                  // <= 0: off
  float top_p = 0.95f;             // >= 1: off
  float min_p = 0.05f;             // <= 0: off
  float typical_p = 1.0f;          // locally typical sampling; >= 1: off
  float repeat_penalty = 1.0f;     // 1: off
  float frequency_penalty = 0.0f;  // 0: off; minus this times a recent token's count
  float presence_penalty = 0.0f;   // 0: off; minus this once for each recent token
  int repeat_last_n = 64;          // tokens of prompt + reply the penalties look at; < 0: all
  std::vector<LogitBias> logit_bias;
  float top_n_sigma = -1.0f;     // keep logits within n standard deviations of the top; <= 0: off
  float xtc_probability = 0.0f;  // XTC: how often the likeliest tokens leave; <= 0: off
  float xtc_threshold = 0.1f;    // ... those at or above this probability, but the last of them
  int mirostat = 0;              // 0: off; 1 or 2: Mirostat v1 / v2 in place of the filters
  float mirostat_tau = 5.0f;     // target surprise (bits)
  float mirostat_eta = 0.1f;     // learning rate
  uint64_t seed = 0;             // std::mt19937_64 seed: same seed, same logits, same tokens
};

struct Candidate {
  int32_t id;
  float logit;
  float p = 0.0f;  // filled by softmax()
};

struct Penalties {
  float repeat = 1.0f;
  float frequency = 0.0f;
  float presence = 0.0f;
};

// llama.cpp's penalties: each distinct token among `recent` has its logit divided by
// `repeat` when positive and multiplied by it otherwise (once, however often it occurs), then
// lowered by count x `frequency` + `presence` (count: its occurrences in `recent`).
void apply_penalties(std::span<float> logits, std::span<const int32_t> recent,
                     const Penalties& penalties);

// Sorts candidates by logit, descending, and sets p to their softmax (over the list).
void softmax(std::vector<Candidate>& candidates);
// Keeps the k highest logits (ties broken by lower id), sorted descending. k <= 0: no-op.
void top_k_filter(std::vector<Candidate>& candidates, int k);
// Keeps the smallest prefix (by descending probability) whose probability mass reaches p, at
// least one candidate. p >= 1: no-op. Leaves the list sorted with p renormalized.
void top_p_filter(std::vector<Candidate>& candidates, float p);
// Locally typical sampling (Meister et al., 2022), as llama.cpp has it: candidates ordered by
// how far their surprisal -log p lies from the entropy, closest first, are kept until their
// mass exceeds p (at least one). p >= 1: no-op. Leaves the list sorted with p renormalized.
void typical_filter(std::vector<Candidate>& candidates, float p);
// Keeps candidates whose logit is at least the top logit minus n standard deviations of the
// finite logits (Tang et al., 2024, as llama.cpp's --top-nsigma). n <= 0: no-op. Leaves the
// list sorted with p renormalized.
void top_n_sigma_filter(std::vector<Candidate>& candidates, float n);
// XTC, "exclude top choices", when it fires: of the candidates with probability >= threshold,
// all but the least likely leave, if at least two are there (and threshold <= 0.5). Leaves
// the list sorted with p renormalized.
void xtc_filter(std::vector<Candidate>& candidates, float threshold);
// Keeps candidates whose probability is at least min_p times the largest one. min_p <= 0: no-op.
// Leaves the list sorted with p renormalized.
void min_p_filter(std::vector<Candidate>& candidates, float min_p);

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& options);

  // Whether sample() picks the best token left after bias and penalties, with no draw: then a
  // pick from every token that is among `allowed` is also the pick from `allowed` alone.
  bool greedy() const {
    return options_.temperature <= 0.0f &&
           (options_.mirostat != 0 ||
            (options_.typical_p >= 1.0f && !(options_.xtc_probability > 0.0f)));
  }

  // The next token. history: the tokens so far (prompt + reply), for the repetition penalty.
  // allowed: when given, only these ids may be picked (must not be empty).
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history,
                 const std::vector<int32_t>* allowed = nullptr);

  // How many of the likeliest allowed tokens decide a draw: top_k when no filter before it
  // looks at the others (top-n-sigma, mirostat off), else 0 (all of them). Then sample() with
  // `allowed` holding those k is sample() with every allowed token: the same pick, the same draws.
  size_t deciding_count() const {
    return options_.top_k > 0 && options_.mirostat == 0 && options_.top_n_sigma <= 0.0f
               ? static_cast<size_t>(options_.top_k)
               : 0;
  }
  // The `n` likeliest tokens in sample()'s order before its filters (logit bias and penalties
  // applied, NaN as -inf; highest first, ties by lower id).
  std::vector<int32_t> leading_tokens(std::span<const float> logits,
                                      std::span<const int32_t> history, size_t n);

  // Throws oxi::Error for a logit bias whose token is not among n_vocab (sample() checks
  // against its logits; a caller may check before it has any).
  void check_logit_bias(size_t n_vocab) const;

  const SamplerOptions& options() const { return options_; }
  // Mirostat's running surprise bound (starts at 2 tau, moves after every draw).
  float mirostat_mu() const { return mu_; }

 private:
  // scratch_ = logits with the bias and the penalties applied (sample()'s first steps).
  void adjust(std::span<const float> logits, std::span<const int32_t> history);
  size_t draw();  // an index into candidates_ (p set), by one uniform draw
  int32_t mirostat_step();

  SamplerOptions options_;
  std::mt19937_64 rng_;
  float mu_;
  std::vector<float> scratch_;  // penalized logits
  std::vector<Candidate> candidates_;
};

// Constrained decoding to one of a fixed set of replies. Each choice is tokenized as the start
// of a reply (tokenizer.encode(choice, false)); decoding follows the token sequences.
class ChoiceConstraint {
 public:
  // end_token: what the model may pick to end with a choice that is a prefix of another
  // ("yes" vs "yes!"); usually the model's eos. Throws oxi::Error for no choices or an empty one.
  ChoiceConstraint(const tokenizer::Tokenizer& tokenizer, const std::vector<std::string>& choices,
                   int32_t end_token);

  // The tokens allowed next (never empty while !done()).
  const std::vector<int32_t>& allowed() const { return allowed_; }
  // Records the picked token (one of allowed()).
  void accept(int32_t token);
  // A choice is complete and nothing else can follow (or the end token was picked).
  bool done() const { return done_.has_value(); }
  // The index of the chosen reply once done().
  size_t choice() const { return done_.value_or(0); }
  // Tokens of the reply so far (the end token is not one of them).
  size_t position() const { return position_; }
  const std::vector<std::string>& choices() const { return choices_; }

 private:
  void update_allowed();

  std::vector<std::string> choices_;
  std::vector<std::vector<int32_t>> sequences_;
  std::vector<bool> alive_;
  size_t position_ = 0;
  int32_t end_token_;
  std::vector<int32_t> allowed_;
  std::optional<size_t> done_;
};

}  // namespace oxi::llm
