// Sampler: each filter against a direct computation on hand-made logits, the penalty's
// arithmetic, seeds, and ChoiceConstraint always producing one of the choices.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "lib/core/error.h"
#include "lib/llm/logit_bias.h"
#include "lib/llm/sampler.h"
#include "tests/llm_engine/engine_fixture.h"

namespace oxi::llm::test {
namespace {

std::vector<float> random_logits(size_t n, uint32_t seed, float scale = 3.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<Candidate> candidates_of(const std::vector<float>& logits) {
  std::vector<Candidate> c;
  for (size_t i = 0; i < logits.size(); ++i) c.push_back({static_cast<int32_t>(i), logits[i]});
  return c;
}

std::set<int32_t> ids_of(const std::vector<Candidate>& c) {
  std::set<int32_t> s;
  for (const Candidate& x : c) s.insert(x.id);
  return s;
}

// Ids by descending logit (lower id first on ties), and their softmax in double precision.
std::vector<std::pair<int32_t, double>> reference_probs(const std::vector<float>& logits) {
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  const double max = logits[order[0]];
  double sum = 0;
  for (float l : logits) sum += std::exp(l - max);
  std::vector<std::pair<int32_t, double>> out;
  for (int32_t id : order) out.emplace_back(id, std::exp(logits[id] - max) / sum);
  return out;
}

TEST(Sampler, SoftmaxSortsAndNormalizes) {
  const std::vector<float> logits = {1.0f, 3.0f, -2.0f, 3.0f};
  std::vector<Candidate> c = candidates_of(logits);
  softmax(c);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0].id, 1);  // ties: lower id first
  EXPECT_EQ(c[1].id, 3);
  EXPECT_EQ(c[2].id, 0);
  const auto ref = reference_probs(logits);
  for (size_t i = 0; i < c.size(); ++i) EXPECT_NEAR(c[i].p, ref[i].second, 1e-6);
}

TEST(Sampler, TopKKeepsTheKHighest) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    const std::vector<float> logits = random_logits(500, seed);
    for (int k : {1, 5, 40, 499, 500, 1000}) {
      std::vector<Candidate> c = candidates_of(logits);
      top_k_filter(c, k);
      const auto ref = reference_probs(logits);
      std::set<int32_t> expected;
      for (int i = 0; i < std::min<int>(k, 500); ++i) expected.insert(ref[i].first);
      EXPECT_EQ(ids_of(c), expected) << "k " << k;
      EXPECT_TRUE(
          std::is_sorted(c.begin(), c.end(), [](auto& a, auto& b) { return a.logit > b.logit; }));
    }
  }
  std::vector<Candidate> c = candidates_of({1, 2, 3});
  top_k_filter(c, 0);  // off
  EXPECT_EQ(c.size(), 3u);
}

TEST(Sampler, TopPKeepsTheSmallestPrefixReachingP) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    const std::vector<float> logits = random_logits(300, seed, 2.0f);
    for (float p : {0.05f, 0.3f, 0.5f, 0.9f, 0.99f}) {
      std::vector<Candidate> c = candidates_of(logits);
      top_p_filter(c, p);
      const auto ref = reference_probs(logits);
      double mass = 0;
      size_t keep = 0;
      while (keep < ref.size() && mass < p) mass += ref[keep++].second;
      ASSERT_EQ(c.size(), keep) << "p " << p;
      for (size_t i = 0; i < keep; ++i) EXPECT_EQ(c[i].id, ref[i].first);
      double sum = 0;
      for (const Candidate& x : c) sum += x.p;
      EXPECT_NEAR(sum, 1.0, 1e-5);
    }
  }
  std::vector<Candidate> c = candidates_of({1, 2, 3});
  top_p_filter(c, 1.0f);
  EXPECT_EQ(c.size(), 3u);
}

TEST(Sampler, MinPKeepsTokensAboveAShareOfTheTop) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    const std::vector<float> logits = random_logits(300, seed, 2.0f);
    for (float min_p : {0.01f, 0.05f, 0.2f, 0.9f, 1.0f}) {
      std::vector<Candidate> c = candidates_of(logits);
      min_p_filter(c, min_p);
      const auto ref = reference_probs(logits);
      std::set<int32_t> expected;
      for (const auto& [id, p] : ref)
        if (p >= ref[0].second * min_p * (1 - 1e-6)) expected.insert(id);
      EXPECT_EQ(ids_of(c), expected) << "min_p " << min_p;
    }
  }
  // Equivalent in logits: keep l >= l_max + log(min_p).
  std::vector<Candidate> c = candidates_of({0.0f, -1.0f, -2.0f, -3.0f});
  min_p_filter(c, std::exp(-2.5f));
  EXPECT_EQ(ids_of(c), (std::set<int32_t>{0, 1, 2}));
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegativeOnce) {
  std::vector<float> logits = {2.0f, -2.0f, 0.5f, 3.0f, -0.5f};
  const std::vector<int32_t> recent = {0, 1, 1, 1, 4, 99, -1};  // repeats count once
  apply_penalties(logits, recent, {.repeat = 2.0f});
  EXPECT_FLOAT_EQ(logits[0], 1.0f);
  EXPECT_FLOAT_EQ(logits[1], -4.0f);
  EXPECT_FLOAT_EQ(logits[2], 0.5f);
  EXPECT_FLOAT_EQ(logits[3], 3.0f);
  EXPECT_FLOAT_EQ(logits[4], -1.0f);

  // Only the last repeat_last_n tokens of the history count: greedy then avoids token 0.
  SamplerOptions o;
  o.temperature = 0;
  o.repeat_penalty = 4.0f;
  o.repeat_last_n = 2;
  Sampler s(o);
  const std::vector<float> l = {2.0f, 1.0f, 0.0f};
  EXPECT_EQ(s.sample(l, std::vector<int32_t>{2, 2}), 0);     // 0 is not recent
  EXPECT_EQ(s.sample(l, std::vector<int32_t>{0, 2, 2}), 0);  // 0 fell out of the window
  EXPECT_EQ(s.sample(l, std::vector<int32_t>{2, 0}), 1);     // 2 / 4 = 0.5 < 1
}

TEST(Sampler, FrequencyAndPresencePenaltiesFollowTheCounts) {
  // llama.cpp's penalties: the repetition penalty once per distinct token, then minus count x
  // frequency and presence once, for tokens in range; the rest untouched.
  for (uint32_t seed = 0; seed < 10; ++seed) {
    const std::vector<float> logits = random_logits(50, seed);
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> pick(-3, 60);
    std::vector<int32_t> recent(40);
    for (int32_t& id : recent) id = pick(rng);
    const Penalties penalties{.repeat = 1.3f, .frequency = 0.25f, .presence = 0.7f};
    std::vector<float> got = logits;
    apply_penalties(got, recent, penalties);
    for (size_t t = 0; t < logits.size(); ++t) {
      const auto count = std::count(recent.begin(), recent.end(), static_cast<int32_t>(t));
      double want = logits[t];
      if (count > 0) {
        want = want > 0 ? want / 1.3 : want * 1.3;
        want -= 0.25 * count + 0.7;
      }
      EXPECT_NEAR(got[t], want, 1e-5) << "token " << t << " seen " << count << " times";
    }
  }
  // Off (1, 0, 0) or nothing recent: unchanged.
  std::vector<float> l = {1.0f, -1.0f};
  apply_penalties(l, std::vector<int32_t>{0, 1}, {});
  apply_penalties(l, {}, {.repeat = 2.0f, .frequency = 1.0f, .presence = 1.0f});
  EXPECT_EQ(l, (std::vector<float>{1.0f, -1.0f}));

  // Through the sampler, over the last repeat_last_n tokens only: token 0 (logit 2) seen
  // twice loses 2 x 0.6, below token 1 (logit 1); once in the window, 0.6: still above.
  SamplerOptions o;
  o.temperature = 0;
  o.frequency_penalty = 0.6f;
  o.repeat_last_n = 2;
  EXPECT_EQ(Sampler(o).sample(std::vector<float>{2.0f, 1.0f}, std::vector<int32_t>{0, 0}), 1);
  EXPECT_EQ(Sampler(o).sample(std::vector<float>{2.0f, 1.0f}, std::vector<int32_t>{0, 0, 1, 0}), 0);
  o.frequency_penalty = 0;
  o.presence_penalty = 1.5f;
  EXPECT_EQ(Sampler(o).sample(std::vector<float>{2.0f, 1.0f}, std::vector<int32_t>{0}), 1);
}

TEST(Sampler, LogitBiasComesFirst) {
  SamplerOptions o;
  o.temperature = 0;
  o.logit_bias = {{2, 3.5f}};
  const std::vector<float> logits = {1.0f, 4.0f, 1.0f};
  EXPECT_EQ(Sampler(o).sample(logits, {}), 2);  // 1 + 3.5 > 4
  // Before the repetition penalty: (1 + 3.5) / 2 < 4.
  o.repeat_penalty = 2.0f;
  EXPECT_EQ(Sampler(o).sample(logits, std::vector<int32_t>{2}), 1);
  // -inf: never, whatever the temperature.
  o = SamplerOptions{};
  o.temperature = 3.0f;
  o.top_k = 0;
  o.min_p = 0;
  o.logit_bias = {{1, -std::numeric_limits<float>::infinity()}};
  for (uint64_t seed = 0; seed < 200; ++seed) {
    o.seed = seed;
    EXPECT_NE(Sampler(o).sample(logits, {}), 1);
  }
  // Every token impossible, an id off the vocabulary, +inf or NaN: errors, not a pick.
  o.logit_bias = {{0, -INFINITY}, {1, -INFINITY}, {2, -INFINITY}};
  EXPECT_THROW(Sampler(o).sample(logits, {}), Error);
  o.temperature = 0;
  EXPECT_THROW(Sampler(o).sample(logits, {}), Error);
  o.logit_bias = {{3, 1.0f}};
  EXPECT_THROW(Sampler(o).sample(logits, {}), Error);
  o.logit_bias = {{0, INFINITY}};
  EXPECT_THROW(Sampler{o}, Error);
  o.logit_bias = {{0, NAN}};
  EXPECT_THROW(Sampler{o}, Error);
}

// Locally typical sampling restated: probabilities in double, candidates ordered by
// |-log p - H| (more likely first on ties), the shortest prefix whose mass exceeds p.
std::set<int32_t> reference_typical(const std::vector<float>& logits, double p) {
  const auto probs = reference_probs(logits);
  double entropy = 0;
  for (const auto& [id, q] : probs) entropy -= q > 0 ? q * std::log(q) : 0.0;
  std::vector<size_t> order(probs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const auto distance = [&](size_t i) { return std::abs(-std::log(probs[i].second) - entropy); };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return distance(a) < distance(b); });
  std::set<int32_t> kept;
  double mass = 0;
  for (size_t i : order) {
    kept.insert(probs[i].first);
    mass += probs[i].second;
    if (mass > p) break;
  }
  return kept;
}

// llama.cpp's --logit-bias text: ID(+|-)BIAS, -inf allowed, +inf and anything else refused with
// the text and the name it came under; lists are comma separated.
TEST(Sampler, LogitBiasTextParses) {
  using oxi::llm::parse_logit_bias;
  const float inf = std::numeric_limits<float>::infinity();
  const auto same = [](oxi::llm::LogitBias a, int32_t id, float bias) {
    return a.id == id && a.bias == bias;
  };
  EXPECT_TRUE(same(parse_logit_bias("15043+1"), 15043, 1.0f));
  EXPECT_TRUE(same(parse_logit_bias("0-2.5"), 0, -2.5f));
  EXPECT_TRUE(same(parse_logit_bias("7+1e2"), 7, 100.0f));
  EXPECT_TRUE(same(parse_logit_bias("2-inf"), 2, -inf));
  for (const char* bad : {"", "5", "x+1", "+1", "-1+1", "5+", "5+x", "5+1x", "5++1", "5+-1",
                          "5+nan", "5+infinity", "5+inf", "99999999999+1", "5 +1", "5+1e99"}) {
    try {
      parse_logit_bias(bad, "--logit-bias");
      ADD_FAILURE() << bad;
    } catch (const oxi::Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(std::string("--logit-bias '") + bad + "'", 0), 0u)
          << e.what();
    }
  }
  const std::vector<oxi::llm::LogitBias> list =
      oxi::llm::parse_logit_bias_list("1+1,,2-inf,3-0.5,");
  ASSERT_EQ(list.size(), 3u);
  EXPECT_TRUE(same(list[0], 1, 1.0f) && same(list[1], 2, -inf) && same(list[2], 3, -0.5f));
  EXPECT_TRUE(oxi::llm::parse_logit_bias_list("").empty());
  EXPECT_THROW(oxi::llm::parse_logit_bias_list("1+1,2"), oxi::Error);
}

TEST(Sampler, TypicalKeepsTheTokensNearestTheEntropy) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    const std::vector<float> logits = random_logits(300, seed, 2.0f);
    for (float p : {0.05f, 0.2f, 0.5f, 0.9f, 0.99f}) {
      std::vector<Candidate> c = candidates_of(logits);
      typical_filter(c, p);
      EXPECT_EQ(ids_of(c), reference_typical(logits, p)) << "seed " << seed << " p " << p;
      EXPECT_TRUE(
          std::is_sorted(c.begin(), c.end(), [](auto& a, auto& b) { return a.logit > b.logit; }));
      double sum = 0;
      for (const Candidate& x : c) sum += x.p;
      EXPECT_NEAR(sum, 1.0, 1e-5);
    }
  }
  // A peaked distribution: the top token's surprisal is far below the entropy, so a small p
  // keeps a less likely token instead of it, and greedy after the filter picks that one.
  std::vector<float> peaked(62, 0.0f);  // p: 0.67, 0.055, 60 x 0.0045; entropy 1.89
  peaked[0] = 5.0f;
  peaked[1] = 2.5f;
  std::vector<Candidate> c = candidates_of(peaked);
  typical_filter(c, 0.05f);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(ids_of(c), reference_typical(peaked, 0.05));
  EXPECT_EQ(c[0].id, 1);  // surprisal 2.9 against the top token's 0.4
  SamplerOptions o;
  o.temperature = 0;
  o.top_k = 0;  // (top-k comes first: 40 of the 62 would have another entropy)
  o.typical_p = 0.05f;
  EXPECT_EQ(Sampler(o).sample(peaked, {}), c[0].id);
  o.typical_p = 1.0f;  // off
  EXPECT_EQ(Sampler(o).sample(peaked, {}), 0);
  std::vector<Candidate> all = candidates_of(peaked);
  typical_filter(all, 1.0f);
  EXPECT_EQ(all.size(), peaked.size());
}

TEST(Sampler, TopNSigmaKeepsLogitsNearTheTop) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    std::vector<float> logits = random_logits(400, seed);
    for (size_t i = 0; i < logits.size(); i += 37) logits[i] = -INFINITY;  // not counted
    for (float n : {0.5f, 1.0f, 2.0f, 3.0f}) {
      double sum = 0, squares = 0, max = -INFINITY;
      size_t finite = 0;
      for (float l : logits)
        if (std::isfinite(l)) sum += l, max = std::max<double>(max, l), ++finite;
      for (float l : logits)
        if (std::isfinite(l)) squares += (l - sum / finite) * (l - sum / finite);
      const double floor = max - n * std::sqrt(squares / finite);
      std::set<int32_t> expected;
      for (size_t i = 0; i < logits.size(); ++i)
        if (logits[i] >= floor) expected.insert(static_cast<int32_t>(i));
      std::vector<Candidate> c = candidates_of(logits);
      top_n_sigma_filter(c, n);
      EXPECT_EQ(ids_of(c), expected) << "seed " << seed << " n " << n;
    }
  }
  std::vector<Candidate> c = candidates_of({1, 2, 3});
  top_n_sigma_filter(c, -1.0f);  // off
  EXPECT_EQ(c.size(), 3u);
}

TEST(Sampler, XtcDropsAllButTheLeastLikelyTopChoice) {
  // p ~ 0.45, 0.30, 0.17, 0.05, 0.02 (logits of those): threshold 0.1 leaves 2 (0.17) and below.
  const std::vector<float> logits = {std::log(0.45f), std::log(0.30f), std::log(0.17f),
                                     std::log(0.05f), std::log(0.02f)};
  std::vector<Candidate> c = candidates_of(logits);
  xtc_filter(c, 0.1f);
  EXPECT_EQ(ids_of(c), (std::set<int32_t>{2, 3, 4}));
  c = candidates_of(logits);
  xtc_filter(c, 0.4f);  // one at or above: nothing leaves
  EXPECT_EQ(c.size(), 5u);
  c = candidates_of(logits);
  xtc_filter(c, 0.6f);  // beyond 0.5: off, as llama.cpp
  EXPECT_EQ(c.size(), 5u);

  // Through the sampler: probability 1 always fires (greedy then takes token 2), 0.5 about
  // half the time.
  SamplerOptions o;
  o.temperature = 0;
  o.xtc_probability = 1.0f;
  o.xtc_threshold = 0.1f;
  o.top_k = 0;
  o.min_p = 0;
  EXPECT_EQ(Sampler(o).sample(logits, {}), 2);
  o.xtc_probability = 0.5f;
  int fired = 0;
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    o.seed = seed;
    fired += Sampler(o).sample(logits, {}) == 2;
  }
  EXPECT_NEAR(fired / 2000.0, 0.5, 0.05);
}

// Mirostat restated: the same draws (mt19937_64 from the seed, the top 53 bits as a uniform),
// the tempered softmax in double, v1's Zipf estimate over the 100 likeliest tokens or v2's
// surprise cut, and mu's update; 60 draws from fixed logits, ids and mu compared.
TEST(Sampler, MirostatFollowsItsAlgorithm) {
  const std::vector<float> logits = random_logits(3000, 21, 2.5f);
  for (int version : {1, 2}) {
    SamplerOptions o;
    o.mirostat = version;
    o.mirostat_tau = 4.0f;
    o.mirostat_eta = 0.2f;
    o.temperature = 0.9f;
    o.repeat_penalty = 3.0f;  // not in mirostat's chain
    o.seed = 77;
    Sampler sampler(o);
    std::mt19937_64 rng(o.seed);
    double mu = 2 * o.mirostat_tau;
    std::vector<float> tempered;
    for (float l : logits) tempered.push_back(l / o.temperature);
    const auto all = reference_probs(tempered);
    std::set<int32_t> distinct;
    for (int step = 0; step < 60; ++step) {
      std::vector<std::pair<int32_t, double>> kept = all;
      if (version == 1) {
        double tb = 0, tt = 0;
        for (size_t i = 0; i + 1 < 100; ++i) {
          const double t = std::log((i + 2.0) / (i + 1.0));
          tb += t * std::log(kept[i].second / kept[i + 1].second);
          tt += t * t;
        }
        const double s = tb / tt, e = s - 1;
        const double k = std::pow(e * std::pow(2.0, mu) / (1 - std::pow(3000.0, -e)), 1 / s);
        kept.resize(std::clamp<size_t>(static_cast<size_t>(std::clamp(k, 1.0, 3000.0)), 1, 3000));
      } else {
        size_t n = 0;
        while (n < kept.size() && -std::log2(kept[n].second) <= mu) ++n;
        kept.resize(std::max<size_t>(n, 1));
      }
      double total = 0;
      for (const auto& [id, p] : kept) total += p;
      const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
      size_t pick = kept.size() - 1;
      double cumulative = 0;
      for (size_t i = 0; i < kept.size(); ++i) {
        cumulative += kept[i].second / total;
        if (u < cumulative) {
          pick = i;
          break;
        }
      }
      mu -= o.mirostat_eta * (-std::log2(kept[pick].second / total) - o.mirostat_tau);
      const int32_t id = sampler.sample(logits, std::vector<int32_t>{kept[pick].first});
      ASSERT_EQ(id, kept[pick].first) << "v" << version << " step " << step;
      EXPECT_NEAR(sampler.mirostat_mu(), mu, 1e-3) << "v" << version << " step " << step;
      distinct.insert(id);
    }
    EXPECT_GT(distinct.size(), 5u) << "v" << version;
  }
  SamplerOptions bad;
  bad.mirostat = 3;
  EXPECT_THROW(Sampler{bad}, Error);
}

TEST(Sampler, GreedyIsArgmaxWithLowestIdOnTies) {
  SamplerOptions o;
  o.temperature = 0;
  Sampler s(o);
  EXPECT_EQ(s.sample(std::vector<float>{0.1f, 5.0f, -1.0f, 5.0f}, {}), 1);
  for (uint32_t seed = 0; seed < 10; ++seed) {
    const auto logits = random_logits(1000, seed);
    EXPECT_EQ(s.sample(logits, {}),
              std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  // NaN never wins.
  const float nan = std::nanf("");
  EXPECT_EQ(s.sample(std::vector<float>{nan, 1.0f, nan}, {}), 1);
}

TEST(Sampler, SameSeedSameTokensOtherSeedOtherTokens) {
  SamplerOptions o;
  o.temperature = 1.0f;
  o.top_k = 0;
  o.top_p = 1.0f;
  o.min_p = 0.0f;
  const auto logits = random_logits(200, 3, 1.0f);
  auto draw = [&](uint64_t seed) {
    o.seed = seed;
    Sampler s(o);
    std::vector<int32_t> ids;
    for (int i = 0; i < 64; ++i) ids.push_back(s.sample(logits, {}));
    return ids;
  };
  EXPECT_EQ(draw(42), draw(42));
  EXPECT_NE(draw(42), draw(43));
}

TEST(Sampler, DrawsFollowTheTemperedDistribution) {
  SamplerOptions o;
  o.temperature = 0.7f;
  o.top_k = 0;
  o.top_p = 1.0f;
  o.min_p = 0.0f;
  o.seed = 5;
  Sampler s(o);
  const std::vector<float> logits = {1.0f, 0.5f, 0.0f, -1.0f};
  std::vector<float> tempered;
  for (float l : logits) tempered.push_back(l / o.temperature);
  const auto ref = reference_probs(tempered);
  std::map<int32_t, int> counts;
  const int n = 40000;
  for (int i = 0; i < n; ++i) ++counts[s.sample(logits, {})];
  for (const auto& [id, p] : ref) {
    const double sd = std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(static_cast<double>(counts[id]) / n, p, 5 * sd) << "token " << id;
  }
}

TEST(Sampler, FiltersComposeBeforeTheDraw) {
  // top_k 2 leaves only the two best tokens, whatever the seed.
  SamplerOptions o;
  o.temperature = 5.0f;  // flat: without the filter every token would come up
  o.top_k = 2;
  o.top_p = 1.0f;
  o.min_p = 0.0f;
  const std::vector<float> logits = {0.0f, 3.0f, 1.0f, 2.9f, -1.0f};
  for (uint64_t seed = 0; seed < 200; ++seed) {
    o.seed = seed;
    const int32_t id = Sampler(o).sample(logits, {});
    EXPECT_TRUE(id == 1 || id == 3) << id;
  }
  // min_p 0.5 (on the untempered distribution) drops 0, 2 and 4.
  o.top_k = 0;
  o.min_p = 0.5f;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    o.seed = seed;
    const int32_t id = Sampler(o).sample(logits, {});
    EXPECT_TRUE(id == 1 || id == 3) << id;
  }
}

TEST(Sampler, AllowedTokensOnly) {
  SamplerOptions o;
  o.temperature = 2.0f;
  o.top_k = 0;
  o.min_p = 0;
  const auto logits = random_logits(100, 9);
  const std::vector<int32_t> allowed = {7, 13, 99};
  for (uint64_t seed = 0; seed < 100; ++seed) {
    o.seed = seed;
    const int32_t id = Sampler(o).sample(logits, {}, &allowed);
    EXPECT_TRUE(id == 7 || id == 13 || id == 99);
  }
  o.temperature = 0;
  const int32_t best = *std::max_element(
      allowed.begin(), allowed.end(), [&](int32_t a, int32_t b) { return logits[a] < logits[b]; });
  EXPECT_EQ(Sampler(o).sample(logits, {}, &allowed), best);
  const std::vector<int32_t> none;
  EXPECT_THROW(Sampler(o).sample(logits, {}, &none), Error);
}

TEST(ChoiceConstraint, FollowsTheChoicesTokenByToken) {
  const tokenizer::Tokenizer tok = hand_tokenizer();
  const std::vector<std::string> choices = {"yes", "no", "yes please", "maybe!"};
  ChoiceConstraint c(tok, choices, *tok.eos());
  // First step: the first token of every choice ("▁yes" twice counts once).
  std::set<int32_t> first(c.allowed().begin(), c.allowed().end());
  EXPECT_EQ(first,
            (std::set<int32_t>{piece_id(tok, "\xE2\x96\x81yes"), piece_id(tok, "\xE2\x96\x81no"),
                               piece_id(tok, "\xE2\x96\x81maybe")}));
  // After "▁yes": "yes" is complete but "yes please" goes on, so the end token is allowed.
  c.accept(piece_id(tok, "\xE2\x96\x81yes"));
  EXPECT_FALSE(c.done());
  std::set<int32_t> second(c.allowed().begin(), c.allowed().end());
  EXPECT_EQ(second, (std::set<int32_t>{piece_id(tok, "\xE2\x96\x81please"), *tok.eos()}));
  c.accept(*tok.eos());
  ASSERT_TRUE(c.done());
  EXPECT_EQ(c.choice(), 0u);
  EXPECT_EQ(c.position(), 1u);

  ChoiceConstraint d(tok, choices, *tok.eos());
  d.accept(piece_id(tok, "\xE2\x96\x81no"));
  ASSERT_TRUE(d.done());  // nothing else starts with "no"
  EXPECT_EQ(d.choice(), 1u);
  EXPECT_THROW(d.accept(5), Error);

  ChoiceConstraint e(tok, choices, *tok.eos());
  EXPECT_THROW(e.accept(piece_id(tok, "\xE2\x96\x81Hello")), Error);
  EXPECT_THROW(ChoiceConstraint(tok, {}, 2), Error);
  EXPECT_THROW(ChoiceConstraint(tok, {"a", ""}, 2), Error);
}

TEST(ChoiceConstraint, SamplingAlwaysEndsOnAChoice) {
  const tokenizer::Tokenizer tok = hand_tokenizer();
  const std::vector<std::string> choices = {"yes",    "no",          "yes please",
                                            "maybe!", "Hello world", "STOP"};
  std::set<size_t> seen;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    SamplerOptions o;
    o.temperature = 1.5f;
    o.seed = seed;
    Sampler sampler(o);
    ChoiceConstraint c(tok, choices, *tok.eos());
    std::vector<int32_t> reply;
    std::mt19937 rng(static_cast<uint32_t>(seed));
    for (int step = 0; step < 20 && !c.done(); ++step) {
      const auto logits = random_logits(tok.vocab_size(), rng(), 4.0f);
      const int32_t id = sampler.sample(logits, reply, &c.allowed());
      const size_t before = c.position();
      c.accept(id);
      if (c.position() > before) reply.push_back(id);
    }
    ASSERT_TRUE(c.done()) << "seed " << seed;
    EXPECT_EQ(tok.decode(reply), choices[c.choice()]) << "seed " << seed;
    seen.insert(c.choice());
  }
  EXPECT_EQ(seen.size(), choices.size());  // random logits reach every choice
}

}  // namespace
}  // namespace oxi::llm::test
