// DTW, the median filter and punctuation merging against naive implementations.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "lib/whisper/word_timestamps.h"

namespace oxi::whisper {
namespace {

// The least total cost over every monotonic path of steps (1,0), (0,1), (1,1), by enumeration.
double brute_force_min_cost(const std::vector<float>& x, int n, int m) {
  double best = std::numeric_limits<double>::infinity();
  std::function<void(int, int, double)> walk = [&](int i, int j, double cost) {
    cost += x[i * m + j];
    if (i == n - 1 && j == m - 1) {
      best = std::min(best, cost);
      return;
    }
    if (i + 1 < n) walk(i + 1, j, cost);
    if (j + 1 < m) walk(i, j + 1, cost);
    if (i + 1 < n && j + 1 < m) walk(i + 1, j + 1, cost);
  };
  walk(0, 0, 0.0);
  return best;
}

TEST(Dtw, FindsTheCheapestMonotonicPath) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 5), m = 1 + static_cast<int>(rng() % 6);
    std::vector<float> x(n * m);
    for (float& v : x) v = u(rng);
    const DtwPath p = dtw(x, n, m);
    ASSERT_FALSE(p.rows.empty());
    EXPECT_EQ(p.rows.front(), 0);
    EXPECT_EQ(p.cols.front(), 0);
    EXPECT_EQ(p.rows.back(), n - 1);
    EXPECT_EQ(p.cols.back(), m - 1);
    double cost = x[0];
    for (size_t k = 1; k < p.rows.size(); ++k) {
      const int di = p.rows[k] - p.rows[k - 1], dj = p.cols[k] - p.cols[k - 1];
      EXPECT_TRUE((di == 1 && dj == 0) || (di == 0 && dj == 1) || (di == 1 && dj == 1));
      cost += x[p.rows[k] * m + p.cols[k]];
    }
    EXPECT_NEAR(cost, brute_force_min_cost(x, n, m), 1e-4) << n << "x" << m;
  }
}

TEST(Dtw, DiagonalOfAnIdentityCost) {
  // -1 on the diagonal, +1 elsewhere: the diagonal is the only cheapest path.
  const int n = 4;
  std::vector<float> x(n * n, 1.0f);
  for (int i = 0; i < n; ++i) x[i * n + i] = -1.0f;
  const DtwPath p = dtw(x, n, n);
  ASSERT_EQ(p.rows.size(), 4u);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(p.rows[i], i);
    EXPECT_EQ(p.cols[i], i);
  }
}

std::vector<float> naive_median(const std::vector<float>& row, int width) {
  const int n = static_cast<int>(row.size()), pad = width / 2;
  if (n <= pad) return row;
  std::vector<float> out(n);
  for (int c = 0; c < n; ++c) {
    std::vector<float> w;
    for (int k = c - pad; k <= c + pad; ++k) {
      int j = k < 0 ? -k : k >= n ? 2 * (n - 1) - k : k;  // reflect (numpy / torch "reflect")
      w.push_back(row[j]);
    }
    std::sort(w.begin(), w.end());
    out[c] = w[pad];
  }
  return out;
}

TEST(MedianFilter, MatchesNaiveReflectPaddedMedian) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  for (int cols : {1, 3, 4, 7, 8, 25}) {
    const int rows = 3;
    std::vector<float> x(rows * cols);
    for (float& v : x) v = u(rng);
    std::vector<float> got = x;
    median_filter_rows(got, rows, cols, 7);
    for (int r = 0; r < rows; ++r) {
      const std::vector<float> row(x.begin() + r * cols, x.begin() + (r + 1) * cols);
      const std::vector<float> want = naive_median(row, 7);
      for (int c = 0; c < cols; ++c) EXPECT_EQ(got[r * cols + c], want[c]) << cols << " " << c;
    }
  }
}

std::vector<std::string> non_empty_words(const std::vector<WordTiming>& w) {
  std::vector<std::string> out;
  for (const WordTiming& t : w)
    if (!t.word.empty()) out.push_back(t.word);
  return out;
}

TEST(MergePunctuations, LeadingAndTrailingPunctuationJoinTheirWords) {
  std::vector<WordTiming> words;
  for (const char* w : {" Hello", ",", " (", "world", ")", ".", " \"", "Yes", "\"", "?"})
    words.push_back({w, {1}, 0, 0, 1});
  merge_punctuations(words);
  EXPECT_EQ(non_empty_words(words),
            (std::vector<std::string>{" Hello,", " (world).", " \"Yes\"?"}));
  // tokens travel with the text
  size_t tokens = 0;
  for (const WordTiming& w : words) tokens += w.tokens.size();
  EXPECT_EQ(tokens, 10u);
}

TEST(MergePunctuations, AWordEndingInASpaceKeepsFollowingPunctuationApart) {
  std::vector<WordTiming> words = {{" a ", {1}, 0, 0, 1}, {".", {2}, 0, 0, 1}};
  merge_punctuations(words);
  EXPECT_EQ(non_empty_words(words), (std::vector<std::string>{" a ", "."}));
}

}  // namespace
}  // namespace oxi::whisper
