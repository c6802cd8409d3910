// Backend::attention against naive double softmax attention (GQA, causal offset, sliding
// window), bit-identical results across thread counts and between the two row layouts, and an
// f16 cache against the f32 one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "kernels/formats/fp16.h"
#include "lib/core/error.h"
#include "tests/common/test_data.h"

namespace oxi::backends {
namespace {

struct Shape {
  size_t n_queries, n_kv, n_heads, n_kv_heads, head_dim, first_query_pos;
  bool causal;
  size_t window;
};

struct Problem {
  Shape s;
  size_t q_stride, kv_stride, out_stride;
  std::vector<float> q, k, v;
  AttentionArgs args(std::span<float> out) const {
    AttentionArgs a;
    a.q = q;
    a.k = k;
    a.v = v;
    a.out = out;
    a.q_stride = q_stride;
    a.kv_stride = kv_stride;
    a.out_stride = out_stride;
    a.n_queries = s.n_queries;
    a.n_kv = s.n_kv;
    a.n_heads = s.n_heads;
    a.n_kv_heads = s.n_kv_heads;
    a.head_dim = s.head_dim;
    a.first_query_pos = s.first_query_pos;
    a.causal = s.causal;
    a.window = s.window;
    return a;  // scale 0: 1 / sqrt(head_dim)
  }
};

// Rows padded past their contents, so strides are exercised.
Problem make_problem(const Shape& s, uint32_t seed) {
  Problem p{s,
            s.n_heads * s.head_dim + 3,
            s.n_kv_heads * s.head_dim + 5,
            s.n_heads * s.head_dim + 1,
            {},
            {},
            {}};
  p.q = test::random_normal(s.n_queries * p.q_stride, seed);
  p.k = test::random_normal(s.n_kv * p.kv_stride, seed + 1);
  p.v = test::random_normal(s.n_kv * p.kv_stride, seed + 2);
  return p;
}

// softmax(q k^T / sqrt(d)) v per head in double; a query that sees no key gives 0.
std::vector<double> naive_attention(const Problem& p) {
  const Shape& s = p.s;
  std::vector<double> out(s.n_queries * s.n_heads * s.head_dim, 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  for (size_t t = 0; t < s.n_queries; ++t)
    for (size_t h = 0; h < s.n_heads; ++h) {
      const size_t g = h / (s.n_heads / s.n_kv_heads);
      const size_t pos = s.first_query_pos + t;
      std::vector<double> scores;
      std::vector<size_t> keys;
      for (size_t j = 0; j < s.n_kv; ++j) {
        if (s.causal && j > pos) continue;
        if (s.window > 0 && j + s.window <= pos) continue;
        double dot = 0.0;
        for (size_t d = 0; d < s.head_dim; ++d)
          dot += double(p.q[t * p.q_stride + h * s.head_dim + d]) *
                 p.k[j * p.kv_stride + g * s.head_dim + d];
        scores.push_back(dot * scale);
        keys.push_back(j);
      }
      if (keys.empty()) continue;
      double max_score = scores[0], total = 0.0;
      for (double sc : scores) max_score = std::max(max_score, sc);
      for (double& sc : scores) total += (sc = std::exp(sc - max_score));
      for (size_t d = 0; d < s.head_dim; ++d) {
        double acc = 0.0;
        for (size_t i = 0; i < keys.size(); ++i)
          acc += scores[i] * p.v[keys[i] * p.kv_stride + g * s.head_dim + d];
        out[(t * s.n_heads + h) * s.head_dim + d] = acc / total;
      }
    }
  return out;
}

void expect_matches(Backend& backend, const Shape& s, uint32_t seed) {
  const Problem p = make_problem(s, seed);
  std::vector<float> out(s.n_queries * p.out_stride, NAN);
  backend.attention(p.args(out));
  const std::vector<double> want = naive_attention(p);
  size_t failures = 0;
  for (size_t t = 0; t < s.n_queries; ++t)
    for (size_t i = 0; i < s.n_heads * s.head_dim && failures < 5; ++i) {
      const double got = out[t * p.out_stride + i], ref = want[t * s.n_heads * s.head_dim + i];
      // Outputs are convex combinations of values of magnitude ~1..4; float softmax and dot
      // products over head_dim <= 128 keep relative errors near 1e-6.
      if (!(std::fabs(got - ref) <= 2e-5 * (1.0 + std::fabs(ref)))) {
        ++failures;
        ADD_FAILURE() << "query " << t << " element " << i << ": got " << got << ", want " << ref;
      }
    }
}

TEST(CpuAttention, PrefillGqaCausalMatchesNaiveDouble) {
  const auto backend = make_cpu_backend(2);
  // 37 queries at positions 13..49 over 50 keys; 8 query heads share 2 KV heads.
  expect_matches(*backend, {37, 50, 8, 2, 64, 13, true, 0}, 1);
}

TEST(CpuAttention, DecodeOneQuery) {
  const auto backend = make_cpu_backend(2);
  expect_matches(*backend, {1, 77, 6, 3, 128, 76, true, 0}, 2);
  // Multi-query: 20 heads on one kv head, more than the kernel takes through the keys at once,
  // and split over the threads.
  expect_matches(*backend, {1, 150, 20, 1, 64, 149, true, 0}, 13);
}

TEST(CpuAttention, NonCausalAndSlidingWindow) {
  const auto backend = make_cpu_backend(2);
  expect_matches(*backend, {9, 20, 4, 4, 32, 0, false, 0}, 3);
  expect_matches(*backend, {40, 40, 4, 1, 32, 0, true, 7}, 4);
}

// Long non-causal attention (Whisper's encoder) goes through the GEMM: query blocks that end
// mid-block, keys past one GEMM depth block, GQA, a head size that is not a multiple of 8.
TEST(CpuAttention, LongNonCausalThroughTheGemmMatchesNaiveDouble) {
  const auto backend = make_cpu_backend(2);
  expect_matches(*backend, {150, 300, 6, 6, 64, 0, false, 0}, 11);
  expect_matches(*backend, {65, 64, 8, 2, 36, 0, false, 0}, 12);
}

TEST(CpuAttention, BitIdenticalAcrossThreadCounts) {
  for (const Shape& s :
       {Shape{70, 90, 8, 2, 64, 20, true, 0}, Shape{130, 140, 4, 2, 32, 0, false, 0},
        Shape{1, 90, 20, 1, 64, 89, true, 0}, Shape{1, 90, 8, 2, 64, 89, true, 0}}) {
    const Problem p = make_problem(s, 5);
    std::vector<float> first;
    for (int threads : {1, 2, 3, 8}) {
      const auto backend = make_cpu_backend(threads);
      std::vector<float> out(p.s.n_queries * p.out_stride, 0.0f);
      backend->attention(p.args(out));
      if (first.empty())
        first = out;
      else
        EXPECT_EQ(0, std::memcmp(first.data(), out.data(), out.size() * 4)) << threads;
    }
  }
}

// A query's result does not depend on the batch it comes in (the kernel shares each chunk of
// keys among a block of queries): the whole batch, one query at a time and batches split
// elsewhere give the same bits. What makes a prompt continued from a saved state equal to the
// prompt evaluated at once.
TEST(CpuAttention, QueriesGiveTheSameBitsInAnyBatch) {
  const auto backend = make_cpu_backend(2);
  for (const Shape& s :
       {Shape{70, 90, 8, 2, 64, 20, true, 0}, Shape{45, 200, 4, 4, 32, 155, true, 0},
        Shape{40, 140, 6, 3, 64, 100, true, 37}}) {
    const Problem p = make_problem(s, 41);
    std::vector<float> whole(s.n_queries * p.out_stride, 0.0f);
    backend->attention(p.args(whole));
    for (size_t split : {size_t{1}, size_t{7}, size_t{33}}) {
      std::vector<float> parts(whole.size(), 0.0f);
      for (size_t t0 = 0; t0 < s.n_queries; t0 += split) {
        const size_t n = std::min(split, s.n_queries - t0);
        AttentionArgs a = p.args(parts);
        a.q = a.q.subspan(t0 * p.q_stride);
        a.out = a.out.subspan(t0 * p.out_stride);
        a.n_queries = n;
        a.first_query_pos = s.first_query_pos + t0;
        a.n_kv = s.first_query_pos + t0 + n;  // the keys a causal batch has cached so far
        backend->attention(a);
      }
      EXPECT_EQ(0, std::memcmp(whole.data(), parts.data(), parts.size() * 4))
          << s.n_queries << " queries in batches of " << split;
    }
  }
}

// An f16 cache gives exactly what the f32 path gives on its values widened back to f32, on the
// online path (decode, causal prefill with GQA, a sliding window) and through the GEMM.
TEST(CpuAttention, F16CacheEqualsF32OnTheWidenedValues) {
  const auto backend = make_cpu_backend(2);
  for (const Shape& s : {Shape{1, 77, 6, 3, 128, 76, true, 0}, Shape{37, 50, 8, 2, 64, 13, true, 0},
                         Shape{40, 40, 4, 1, 32, 0, true, 7}, Shape{9, 20, 4, 4, 36, 0, false, 0},
                         Shape{150, 300, 6, 6, 64, 0, false, 0}}) {
    Problem p = make_problem(s, 21);
    std::vector<uint16_t> k16(p.k.size()), v16(p.v.size());
    for (size_t i = 0; i < p.k.size(); ++i) {
      k16[i] = kernels::f32_to_f16(p.k[i]);
      v16[i] = kernels::f32_to_f16(p.v[i]);
      p.k[i] = kernels::f16_to_f32(k16[i]);
      p.v[i] = kernels::f16_to_f32(v16[i]);
    }
    std::vector<float> want(s.n_queries * p.out_stride, 0.0f), got(want.size(), 0.0f);
    backend->attention(p.args(want));
    AttentionArgs a = p.args(got);
    a.k = {};
    a.v = {};
    a.k_f16 = k16;
    a.v_f16 = v16;
    backend->attention(a);
    EXPECT_EQ(0, std::memcmp(want.data(), got.data(), got.size() * 4))
        << s.n_queries << " queries over " << s.n_kv << " keys";
  }
}

// The same keys and values with each kv head's rows together (kv_stride = head_dim,
// kv_head_stride past the last position, as the LLM's cache keeps them) give bit for bit what
// the rows with a position's heads side by side give: only the addresses differ. Online path
// (decode, causal prefill, a window), the GEMM path, f32 and f16.
TEST(CpuAttention, HeadMajorRowsEqualPositionMajor) {
  const auto backend = make_cpu_backend(2);
  // The last: a cache of one position (a session of n_ctx 1, as embeddings of one token make),
  // whose head-major rows lie as position-major ones would.
  for (const auto& [s, spare] : {std::pair{Shape{1, 90, 8, 2, 64, 89, true, 0}, 3},
                                 {Shape{37, 50, 8, 2, 64, 13, true, 0}, 3},
                                 {Shape{40, 40, 4, 1, 32, 0, true, 7}, 3},
                                 {Shape{150, 300, 6, 3, 64, 0, false, 0}, 3},
                                 {Shape{1, 77, 6, 3, 128, 76, true, 0}, 3},
                                 {Shape{1, 1, 8, 2, 64, 0, true, 0}, 0}}) {
    const Problem p = make_problem(s, 31);
    // head g's row of position j at (g * head_stride + j) * head_dim, `spare` positions spare a
    // head
    const size_t hd = s.head_dim, head_stride = (s.n_kv + spare) * hd;
    std::vector<float> k(s.n_kv_heads * head_stride, NAN), v(k.size(), NAN);
    for (size_t g = 0; g < s.n_kv_heads; ++g)
      for (size_t j = 0; j < s.n_kv; ++j)
        for (size_t d = 0; d < hd; ++d) {
          k[g * head_stride + j * hd + d] = p.k[j * p.kv_stride + g * hd + d];
          v[g * head_stride + j * hd + d] = p.v[j * p.kv_stride + g * hd + d];
        }
    std::vector<float> want(s.n_queries * p.out_stride, 0.0f), got(want.size(), 0.0f);
    backend->attention(p.args(want));
    AttentionArgs a = p.args(got);
    a.k = std::span<const float>(k).first((s.n_kv_heads - 1) * head_stride + s.n_kv * hd);
    a.v = std::span<const float>(v).first(a.k.size());
    a.kv_stride = hd;
    a.kv_head_stride = head_stride;
    backend->attention(a);
    EXPECT_EQ(0, std::memcmp(want.data(), got.data(), got.size() * 4))
        << s.n_queries << " queries over " << s.n_kv << " keys";
    // f16: both layouts widened from the same halves
    std::vector<uint16_t> k16(p.k.size()), v16(p.v.size()), hk16(k.size()), hv16(v.size());
    for (size_t i = 0; i < p.k.size(); ++i) {
      k16[i] = kernels::f32_to_f16(p.k[i]);
      v16[i] = kernels::f32_to_f16(p.v[i]);
    }
    for (size_t i = 0; i < k.size(); ++i) {
      hk16[i] = kernels::f32_to_f16(k[i]);
      hv16[i] = kernels::f32_to_f16(v[i]);
    }
    AttentionArgs w16 = p.args(want);
    w16.k = w16.v = {};
    w16.k_f16 = k16;
    w16.v_f16 = v16;
    backend->attention(w16);
    a.k = a.v = {};
    a.k_f16 = std::span<const uint16_t>(hk16).first(k.size() - spare * hd);
    a.v_f16 = std::span<const uint16_t>(hv16).first(k.size() - spare * hd);
    backend->attention(a);
    EXPECT_EQ(0, std::memcmp(want.data(), got.data(), got.size() * 4))
        << "f16, " << s.n_queries << " queries over " << s.n_kv << " keys";
    // a span that ends before the last head's last row
    a.k_f16 = a.k_f16.first(a.k_f16.size() - 1);
    EXPECT_THROW(backend->attention(a), Error);
  }
}

TEST(CpuAttention, RejectsBadShapes) {
  const auto backend = make_cpu_backend(1);
  Problem p = make_problem({4, 4, 6, 4, 16, 0, true, 0}, 6);  // 6 heads over 4 KV heads
  std::vector<float> out(4 * p.out_stride);
  EXPECT_THROW(backend->attention(p.args(out)), Error);
  p = make_problem({4, 3, 4, 2, 16, 0, true, 0}, 7);  // causal query 3 needs 4 keys
  EXPECT_THROW(backend->attention(p.args(out)), Error);
  // f32 keys with f16 values, and an f16 cache one row short.
  p = make_problem({4, 4, 4, 2, 16, 0, true, 0}, 8);
  const std::vector<uint16_t> half(p.v.size());
  AttentionArgs a = p.args(out);
  a.v = {};
  a.v_f16 = half;
  EXPECT_THROW(backend->attention(a), Error);
  a.k = {};
  a.k_f16 = std::span(half).first(half.size() - p.kv_stride);
  EXPECT_THROW(backend->attention(a), Error);
  a.k_f16 = half;
  EXPECT_NO_THROW(backend->attention(a));
}

}  // namespace
}  // namespace oxi::backends
