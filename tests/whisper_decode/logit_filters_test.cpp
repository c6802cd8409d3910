// openai-whisper's logit filters on hand-made logits: each rule against the mask it should give.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "lib/whisper/logit_filters.h"

namespace oxi::whisper {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// A toy vocabulary: 0..9 text, 10 <|endoftext|>, 11 <|notimestamps|>, 12..19 timestamps.
constexpr int kVocab = 20, kEot = 10, kNoTs = 11, kTs = 12;

TimestampRuleParams params(int max_initial = 3) {
  return {.timestamp_begin = kTs,
          .eot = kEot,
          .no_timestamps = kNoTs,
          .max_initial_timestamp_index = max_initial};
}

std::vector<float> flat(float v = 0.0f) {
  return std::vector<float>(kVocab, v);
}

std::vector<bool> masked(const std::vector<float>& logits) {
  std::vector<bool> m;
  for (float x : logits) m.push_back(x == -kInf);
  return m;
}

std::vector<bool> mask_of(std::initializer_list<std::pair<int, int>> ranges) {
  std::vector<bool> m(kVocab, false);
  for (auto [a, b] : ranges)
    for (int i = a; i < b; ++i) m[i] = true;
  return m;
}

TEST(LogitFilters, SuppressBlankOnlyAtTheFirstStep) {
  const std::vector<int32_t> blank = {3, kEot};
  std::vector<float> logits = flat();
  suppress_blank(logits, {}, blank);
  EXPECT_EQ(masked(logits), mask_of({{3, 4}, {kEot, kEot + 1}}));
  logits = flat();
  const std::vector<int32_t> sampled = {kTs};
  suppress_blank(logits, sampled, blank);
  EXPECT_EQ(masked(logits), mask_of({}));
}

TEST(LogitFilters, SuppressTokensIgnoresIdsOutsideTheVocabulary) {
  std::vector<float> logits = flat();
  const std::vector<int32_t> ids = {1, 5, -1, 999};
  suppress_tokens(logits, ids);
  EXPECT_EQ(masked(logits), mask_of({{1, 2}, {5, 6}}));
}

TEST(TimestampRules, FirstStepIsAnEarlyTimestamp) {
  std::vector<float> logits = flat();
  apply_timestamp_rules(logits, {}, params(3));
  // text, eot and <|notimestamps|> masked; timestamps 0..3 allowed, later ones masked
  EXPECT_EQ(masked(logits), mask_of({{0, kTs}, {kTs + 4, kVocab}}));
  logits = flat();
  apply_timestamp_rules(logits, {}, params(-1));
  EXPECT_EQ(masked(logits), mask_of({{0, kTs}}));
}

TEST(TimestampRules, NoTimestampPastTheWindow) {
  std::vector<float> logits = flat();
  logits[1] = 10.0f;
  TimestampRuleParams p = params(-1);
  p.max_timestamp_index = 5;
  const std::vector<int32_t> sampled = {kTs, 4};
  apply_timestamp_rules(logits, sampled, p);
  // <|0|> (no growth) and everything after <|5|> masked
  EXPECT_EQ(masked(logits), mask_of({{kNoTs, kNoTs + 1}, {kTs, kTs + 1}, {kTs + 6, kVocab}}));
}

TEST(TimestampRules, AfterTextTimestampsMustGrow) {
  std::vector<float> logits = flat();
  logits[2] = 10.0f;  // a text token dominates: the probability rule stays out of the way
  const std::vector<int32_t> sampled = {kTs + 2, 4};
  apply_timestamp_rules(logits, sampled, params());
  // <|notimestamps|> and timestamps <= <|2|> masked (a segment has nonzero length)
  EXPECT_EQ(masked(logits), mask_of({{kNoTs, kNoTs + 1}, {kTs, kTs + 3}}));
}

TEST(TimestampRules, AClosingTimestampIsFollowedByATimestampOrEot) {
  std::vector<float> logits = flat();
  logits[kEot] = 5.0f;  // above the timestamps' total (log 3): the probability rule stays out
  const std::vector<int32_t> sampled = {kTs + 1, 4, kTs + 5};
  apply_timestamp_rules(logits, sampled, params());
  // text masked; timestamps before <|5|> masked, <|5|> itself allowed (the next segment may
  // start where this one ended); eot allowed
  EXPECT_EQ(masked(logits), mask_of({{0, kEot}, {kNoTs, kNoTs + 1}, {kTs, kTs + 5}}));
}

TEST(TimestampRules, APairOfTimestampsIsFollowedByText) {
  std::vector<float> logits = flat();
  logits[0] = 10.0f;
  const std::vector<int32_t> sampled = {kTs + 1, 4, kTs + 5, kTs + 5};
  apply_timestamp_rules(logits, sampled, params());
  EXPECT_EQ(masked(logits), mask_of({{kNoTs, kNoTs + 1}, {kTs, kVocab}}));
}

TEST(TimestampRules, TimestampMassAboveTheBestTextTokenForcesATimestamp) {
  // Direct computation: log-sum-exp over timestamps vs the largest text logit.
  std::vector<float> logits = flat(-5.0f);
  logits[0] = 1.0f;                                         // best text token
  for (int t = kTs + 3; t < kVocab; ++t) logits[t] = 0.0f;  // 5 timestamps at 0: lse = log 5
  const std::vector<int32_t> sampled = {kTs, 4};
  std::vector<float> a = logits;
  apply_timestamp_rules(a, sampled, params());
  ASSERT_GT(std::log(5.0), 1.0);
  for (int i = 0; i < kTs; ++i) EXPECT_EQ(a[i], -kInf) << i;

  logits[0] = 2.0f;  // log 5 = 1.61 < 2: text stays
  std::vector<float> b = logits;
  apply_timestamp_rules(b, sampled, params());
  EXPECT_EQ(b[0], 2.0f);
}

TEST(TimestampRules, LogSumExpMatchesDirectSum) {
  const std::vector<float> v = {0.5f, -1.0f, 2.0f, -kInf};
  double direct = 0;
  for (float x : v) direct += std::exp(static_cast<double>(x));
  EXPECT_NEAR(log_sum_exp(v), std::log(direct), 1e-9);
  const std::vector<float> none = {-kInf, -kInf};
  EXPECT_EQ(log_sum_exp(none), -kInf);
}

// Greedy decoding of random logits under the rules always yields a well-formed sequence:
// <|t|> text... <|t|> [<|t|> text... <|t|>]... [<|t|>] <|endoftext|>, non-decreasing times.
TEST(TimestampRules, RandomGreedySequencesAreWellFormed) {
  std::mt19937 rng(5);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<int32_t> seq;
    for (int step = 0; step < 30; ++step) {
      std::vector<float> logits(kVocab);
      for (float& x : logits) x = noise(rng);
      apply_timestamp_rules(logits, seq, params(3));
      const int32_t tok =
          static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      ASSERT_NE(logits[tok], -kInf);
      if (tok == kEot) break;
      seq.push_back(tok);
    }
    ASSERT_FALSE(seq.empty());
    EXPECT_GE(seq[0], kTs);
    EXPECT_LE(seq[0], kTs + 3);
    int32_t last_ts = -1;
    size_t run = 0;  // consecutive timestamps
    for (size_t i = 0; i < seq.size(); ++i) {
      EXPECT_NE(seq[i], kNoTs);
      if (seq[i] >= kTs) {
        EXPECT_GE(seq[i], last_ts);
        last_ts = seq[i];
        ++run;
        EXPECT_LE(run, 2u) << "three timestamps in a row";
      } else {
        // text after a lone timestamp that closed a segment is not allowed
        if (i >= 2 && seq[i - 1] >= kTs && seq[i - 2] < kTs) ADD_FAILURE() << "text after close";
        run = 0;
      }
    }
  }
}

}  // namespace
}  // namespace oxi::whisper
