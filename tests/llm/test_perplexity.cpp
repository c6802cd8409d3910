// perplexity() (lib/llm/perplexity.h) on tiny random models against the naive double-precision
// reference: each chunk from an empty cache with BOS first, its second half scored, the
// running PPL after each chunk and the final error restated here from the NLLs.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "lib/core/error.h"
#include "lib/llm/model.h"
#include "lib/llm/perplexity.h"
#include "lib/llm/session.h"
#include "tests/common/test_data.h"
#include "tests/llm/reference.h"
#include "tests/llm/tiny_model.h"

namespace oxi::llm::test {
namespace {

using kernels::DType;

std::vector<int32_t> random_tokens(size_t n, int n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(n);
  for (int32_t& id : ids) id = 3 + static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab - 3));
  return ids;
}

// What perplexity() should give: per chunk, the reference's logits token by token.
struct Expected {
  std::vector<double> running;
  double ppl = 0, error = 0;
};
Expected reference_perplexity(const TinyModel& tiny, const std::vector<int32_t>& tokens,
                              size_t n_ctx, size_t chunks, int32_t bos, bool f16_cache) {
  Expected e;
  double sum = 0, sum2 = 0;
  size_t n = 0;
  for (size_t c = 0; c < chunks; ++c) {
    std::vector<int32_t> chunk(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx);
    chunk[0] = bos;
    ReferenceModel ref(tiny, f16_cache);
    for (size_t j = 0; j + 1 < n_ctx; ++j) {
      const std::vector<double> logits = ref.step(chunk[j]);
      if (j < n_ctx / 2) continue;
      double top = logits[0];
      for (double l : logits) top = std::max(top, l);
      double z = 0;
      for (double l : logits) z += std::exp(l - top);
      const double nll = std::log(z) + top - logits[chunk[j + 1]];
      sum += nll;
      sum2 += nll * nll;
      ++n;
    }
    e.running.push_back(std::exp(sum / n));
  }
  e.ppl = std::exp(sum / n);
  const double mean = sum / n;
  e.error = std::sqrt((sum2 / n - mean * mean) / (n - 1)) * e.ppl;
  return e;
}

TEST(Perplexity, MatchesTheReferenceChunkByChunk) {
  struct Case {
    const char* arch;
    DType matrices;
    double tolerance;  // relative, on PPL
  };
  // Float weights with an f32 cache: exact arithmetic within float rounding. Q8_0 weights with
  // their f16 cache: the activations are quantized too (8 bits), so a looser bound.
  for (const Case& k : {Case{"llama", DType::F32, 1e-4}, Case{"qwen2", DType::F16, 1e-4},
                        Case{"llama", DType::Q8_0, 2e-2}}) {
    SCOPED_TRACE(std::string(k.arch) + " " + std::string(kernels::name(k.matrices)));
    const TinyModel tiny = make_tiny_model(tiny_spec(k.arch, false), k.matrices, DType::F32, 5);
    oxi::test::TempDir dir;
    write_gguf(tiny, dir / "m.gguf");
    const auto model = Model::load(dir / "m.gguf");
    auto cpu = backends::make_cpu_backend(2);
    const size_t n_ctx = 20;
    const std::vector<int32_t> tokens = random_tokens(3 * n_ctx + 7, tiny.spec.n_vocab, 11);
    Session session(model, *cpu, n_ctx);
    const bool f16_cache = Session::default_kv_type(*model) == DType::F16;
    const PerplexityResult r = perplexity(session, tokens, {.n_ctx = n_ctx});
    const Expected want = reference_perplexity(tiny, tokens, n_ctx, 3, 1, f16_cache);
    ASSERT_EQ(r.chunks, 3u);
    EXPECT_EQ(r.scored, 3 * (n_ctx - n_ctx / 2 - 1));
    ASSERT_EQ(r.running.size(), 3u);
    for (size_t c = 0; c < 3; ++c)
      EXPECT_NEAR(r.running[c] / want.running[c], 1.0, k.tolerance) << "chunk " << c;
    EXPECT_NEAR(r.ppl / want.ppl, 1.0, k.tolerance);
    EXPECT_NEAR(r.ppl_error / want.error, 1.0, 10 * k.tolerance);
    EXPECT_NEAR(std::exp(r.mean_nll), r.ppl, 1e-9 * r.ppl);
    EXPECT_GT(r.ppl, 1.0);

    // --chunks, and a callback that stops: the chunks done, the same running PPL.
    const PerplexityResult two = perplexity(session, tokens, {.n_ctx = n_ctx, .max_chunks = 2});
    ASSERT_EQ(two.chunks, 2u);
    EXPECT_NEAR(two.ppl / want.running[1], 1.0, k.tolerance);
    size_t calls = 0;
    const PerplexityResult one =
        perplexity(session, tokens, {.n_ctx = n_ctx}, [&](size_t index, double ppl) {
          EXPECT_EQ(index, calls);
          EXPECT_NEAR(ppl / want.running[index], 1.0, k.tolerance);
          return ++calls < 1;
        });
    EXPECT_EQ(calls, 1u);
    EXPECT_EQ(one.chunks, 1u);
  }
}

TEST(Perplexity, RefusesTooLittleTextOrContext) {
  const TinyModel tiny = make_tiny_model(tiny_spec("llama", false), DType::F32, DType::F32, 1);
  oxi::test::TempDir dir;
  write_gguf(tiny, dir / "m.gguf");
  const auto model = Model::load(dir / "m.gguf");
  auto cpu = backends::make_cpu_backend(1);
  Session session(model, *cpu, 16);
  const std::vector<int32_t> tokens = random_tokens(31, 300, 2);
  const auto message = [&](std::span<const int32_t> t, size_t n_ctx) {
    try {
      perplexity(session, t, {.n_ctx = n_ctx});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_NE(message(tokens, 16).find("the text has 31 tokens; a context of 16 needs at least 32"),
            std::string::npos);
  EXPECT_NE(message(tokens, 3).find("at least 4 tokens"), std::string::npos);
  const std::vector<int32_t> more = random_tokens(64, 300, 3);
  EXPECT_NE(message(more, 32).find("fewer than the chunks' 32"), std::string::npos);
  std::vector<int32_t> bad = more;
  bad[40] = 300;
  EXPECT_NE(message(bad, 16).find("token 300 is not in the vocabulary"), std::string::npos);
  EXPECT_EQ(message(more, 16), "<no error>");
}

}  // namespace
}  // namespace oxi::llm::test
