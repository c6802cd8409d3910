// perplexity() (lib/llm/perplexity.h) on tiny random models against the naive double-precision
// reference: each chunk from an empty cache with BOS first, its second half scored, the
// running PPL after each chunk and the final error restated here from the NLLs.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "lib/core/error.h"
#include "lib/llm/hellaswag.h"
#include "lib/llm/kl_divergence.h"
#include "lib/llm/log_prob_file.h"
#include "lib/llm/model.h"
#include "lib/llm/multiple_choice.h"
#include "lib/llm/perplexity.h"
#include "lib/llm/session.h"
#include "lib/llm/task_draw.h"
#include "lib/llm/winogrande.h"
#include "tests/common/byte_edits.h"
#include "tests/common/test_data.h"
#include "tests/llm/multiple_choice_file.h"
#include "tests/llm/reference.h"
#include "tests/llm/tiny_model.h"

namespace oxi::llm::test {
namespace {

using kernels::DType;

// A tiny random model (matrices in `matrices`, vectors f32) written as GGUF and loaded, with a
// CPU backend: what each test below scores.
struct LoadedTiny {
  LoadedTiny(const std::string& arch, DType matrices, uint32_t seed, int threads = 2)
      : tiny(make_tiny_model(tiny_spec(arch, false), matrices, DType::F32, seed)) {
    write_gguf(tiny, dir / "m.gguf");
    model = Model::load(dir / "m.gguf");
    cpu = backends::make_cpu_backend(threads);
  }
  TinyModel tiny;
  oxi::test::TempDir dir;
  std::shared_ptr<const Model> model;
  std::unique_ptr<backends::Backend> cpu;
};

std::vector<int32_t> random_tokens(size_t n, int n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(n);
  for (int32_t& id : ids) id = 3 + static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab - 3));
  return ids;
}

// The log-probabilities of the reference's logits (double precision).
std::vector<double> log_softmax(const std::vector<double>& logits) {
  const double top = *std::max_element(logits.begin(), logits.end());
  double z = 0;
  for (double l : logits) z += std::exp(l - top);
  std::vector<double> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = logits[i] - top - std::log(z);
  return out;
}

// n of the tiny vocabulary's words ("w260".."w299"), space separated.
std::string random_words(std::mt19937& rng, size_t n) {
  std::string w;
  for (size_t i = 0; i < n; ++i) w.append(i ? " w" : "w").append(std::to_string(260 + rng() % 40));
  return w;
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
      const double nll = -log_softmax(logits)[chunk[j + 1]];
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
    const LoadedTiny loaded(k.arch, k.matrices, 5);
    const size_t n_ctx = 20;
    const std::vector<int32_t> tokens = random_tokens(3 * n_ctx + 7, loaded.tiny.spec.n_vocab, 11);
    Session session(loaded.model, *loaded.cpu, n_ctx);
    const bool f16_cache = Session::default_kv_type(*loaded.model) == DType::F16;
    const PerplexityResult r = perplexity(session, tokens, {.n_ctx = n_ctx});
    const Expected want = reference_perplexity(loaded.tiny, tokens, n_ctx, 3, 1, f16_cache);
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

// --ppl-stride S: windows of n_ctx + S/2 tokens, S apart, each from an empty cache with its own
// first token (no BOS, as llama.cpp's strided run), its last S tokens scored.
TEST(Perplexity, StridedWindowsMatchTheReference) {
  const LoadedTiny loaded("llama", DType::F32, 6);
  const size_t n_ctx = 16, stride = 6, window = n_ctx + stride / 2;
  const std::vector<int32_t> tokens = random_tokens(47, loaded.tiny.spec.n_vocab, 12);
  Session session(loaded.model, *loaded.cpu, window);
  const PerplexityOptions options{.n_ctx = n_ctx, .stride = stride};
  const size_t windows = (tokens.size() - window + stride - 1) / stride;  // 5
  ASSERT_EQ(perplexity_chunks(tokens.size(), options), windows);
  const PerplexityResult r = perplexity(session, tokens, options);
  ASSERT_EQ(r.chunks, windows);
  EXPECT_EQ(r.scored, windows * stride);
  double sum = 0, sum2 = 0;
  size_t n = 0;
  for (size_t w = 0; w < windows; ++w) {
    ReferenceModel ref(loaded.tiny);
    for (size_t j = 0; j + 1 < window; ++j) {
      const std::vector<double> logits = ref.step(tokens[w * stride + j]);
      if (j + 1 + stride < window) continue;  // the last `stride` tokens are scored
      const double nll = -log_softmax(logits)[tokens[w * stride + j + 1]];
      sum += nll;
      sum2 += nll * nll;
      ++n;
    }
    EXPECT_NEAR(r.running[w] / std::exp(sum / n), 1.0, 1e-4) << "window " << w;
  }
  ASSERT_EQ(n, r.scored);
  const double mean = sum / n;
  EXPECT_NEAR(r.ppl / std::exp(mean), 1.0, 1e-4);
  EXPECT_NEAR(r.ppl_error / (std::sqrt((sum2 / n - mean * mean) / (n - 1)) * std::exp(mean)), 1.0,
              1e-3);

  // A stride not below its window, and a text no longer than one window, are refused.
  EXPECT_EQ(perplexity_chunks(tokens.size(), {.n_ctx = 4, .stride = 8}), 0u);  // window 8
  EXPECT_THROW(perplexity(session, tokens, {.n_ctx = 4, .stride = 8}), Error);
  EXPECT_EQ(perplexity_chunks(window, options), 0u);
  EXPECT_THROW(perplexity(session, std::span(tokens).first(window), options), Error);
  EXPECT_EQ(perplexity_chunks(window + 1, options), 1u);
}

TEST(Perplexity, RefusesTooLittleTextOrContext) {
  const LoadedTiny loaded("llama", DType::F32, 1, 1);
  Session session(loaded.model, *loaded.cpu, 16);
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

// llama.cpp's log-probability file, byte by byte: the header, the tokens, then rows of
// 2 x ((n_vocab + 1) / 2) + 4 uint16 (scale and min_log_prob as floats, each token's
// round((logit - min_logit) / scale) above the floor 16 below the top, 0 at or under it).
TEST(LogProbFile, BytesAreLlamaCppsLayout) {
  oxi::test::TempDir dir;
  const std::vector<int32_t> tokens = {1, 7, 8, 9, 10, 11};
  const std::vector<std::vector<float>> rows = {{0.0f, -1.0f, 2.5f, -30.0f, 1.0f},
                                                {1.0f, 1.0f, 1.0f, 1.0f, 1.0f}};
  {
    LogProbWriter w(dir / "base.kld", 6, 5, 1, tokens);  // 6 - 1 - 3 = 2 rows
    for (const auto& r : rows) w.add(r);
    w.finish();
  }
  const std::vector<uint8_t> bytes = oxi::test::read_file_bytes(dir / "base.kld");
  ASSERT_EQ(bytes.size(), 8 + 12 + 6 * 4 + 2 * 10 * 2);
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 8), "_logits_");
  const auto i32 = [&](size_t at) {
    int32_t v;
    std::memcpy(&v, bytes.data() + at, 4);
    return v;
  };
  EXPECT_EQ(i32(8), 6);
  EXPECT_EQ(i32(12), 5);
  EXPECT_EQ(i32(16), 1);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(i32(20 + 4 * i), tokens[i]);
  for (size_t r = 0; r < 2; ++r) {
    const uint8_t* row = bytes.data() + 44 + r * 20;
    float scale, min_log_prob;
    std::memcpy(&scale, row, 4);
    std::memcpy(&min_log_prob, row + 4, 4);
    const std::vector<float>& l = rows[r];
    const double top = *std::max_element(l.begin(), l.end());
    const double floor = std::max<double>(*std::min_element(l.begin(), l.end()), top - 16);
    double z = 0;
    for (float v : l) z += std::exp(v - top);
    EXPECT_NEAR(scale, (top - floor) / 65535, 1e-9);
    EXPECT_NEAR(min_log_prob, floor - top - std::log(z), 1e-5);
    for (size_t i = 0; i < 5; ++i) {
      uint16_t q;
      std::memcpy(&q, row + 8 + 2 * i, 2);
      const double want = l[i] > floor ? std::nearbyint((l[i] - floor) / (top - floor) * 65535) : 0;
      EXPECT_NEAR(q, want, 1.0) << "row " << r << " token " << i;  // float vs double rounding
      EXPECT_TRUE(l[i] > floor || q == 0);
    }
    uint16_t pad;
    std::memcpy(&pad, row + 18, 2);
    EXPECT_EQ(pad, 0);
  }

  // Read back: the tokens, and each log-probability within half a step (at the floor: it).
  LogProbReader reader(dir / "base.kld");
  EXPECT_EQ(reader.n_ctx(), 6u);
  EXPECT_EQ(reader.n_vocab(), 5u);
  EXPECT_EQ(reader.n_chunk(), 1u);
  EXPECT_EQ(reader.tokens(), tokens);
  std::vector<float> lp(5);
  reader.next(lp);
  double z = 0;
  for (float v : rows[0]) z += std::exp(v - 2.5);
  for (size_t i = 0; i < 5; ++i)
    EXPECT_NEAR(lp[i], std::max(rows[0][i], -13.5f) - 2.5 - std::log(z), 16.0 / 65535) << i;
  reader.next(lp);
  for (float v : lp) EXPECT_NEAR(v, -std::log(5.0), 1e-6);

  // Not such a file, or one whose size is not its header's: errors naming it.
  const auto error = [&](const std::vector<uint8_t>& content) {
    oxi::test::write_file_bytes(dir / "bad.kld", content);
    try {
      LogProbReader bad(dir / "bad.kld");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  const std::string path = (dir / "bad.kld").string();
  EXPECT_EQ(error({'_', 'l', 'o', 'g', 'x', 't', 's', '_', 6, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0})
                .rfind(path + ": not a log-probability file", 0),
            0u);
  std::vector<uint8_t> cut(bytes.begin(), bytes.end() - 2);
  EXPECT_EQ(error(cut).rfind(path + ": its size", 0), 0u);
  std::vector<uint8_t> huge = bytes;
  huge[16] = 0xFF;
  huge[17] = 0xFF;
  huge[18] = 0xFF;
  EXPECT_EQ(error(huge).rfind(path + ": its header says more than the file holds", 0), 0u);
  // Every header byte set to each of a few values, every length cut: read, or an oxi::Error.
  for (size_t at = 0; at < 20; ++at)
    for (uint8_t v : {0x00, 0x01, 0x7F, 0x80, 0xFF}) {
      std::vector<uint8_t> edited = bytes;
      edited[at] = v;
      const std::string e = error(edited);
      EXPECT_TRUE(e == "<no error>" || e.rfind(path + ": ", 0) == 0) << e;
    }
  for (size_t n = 0; n < bytes.size(); n += 3)
    EXPECT_EQ(error(std::vector<uint8_t>(bytes.begin(), bytes.begin() + n)).rfind(path + ": ", 0),
              0u)
        << n;
}

// A base model's file written through perplexity(), then another model against it: the KL
// divergence, the perplexities and the same-top share as restated here from the reference's
// double-precision logits of both models (the base's through llama.cpp's rounding).
TEST(KlDivergence, MatchesTheReference) {
  const TinyModel base_tiny = make_tiny_model(tiny_spec("llama", false), DType::F32, DType::F32, 5);
  const TinyModel other_tiny =
      make_tiny_model(tiny_spec("llama", false), DType::F32, DType::F32, 6);
  oxi::test::TempDir dir;
  write_gguf(base_tiny, dir / "base.gguf");
  write_gguf(other_tiny, dir / "other.gguf");
  auto cpu = backends::make_cpu_backend(2);
  const size_t n_ctx = 16, chunks = 3;
  const std::vector<int32_t> tokens = random_tokens(chunks * n_ctx + 3, 300, 21);
  {
    Session session(Model::load(dir / "base.gguf"), *cpu, n_ctx);
    LogProbWriter writer(dir / "base.kld", n_ctx, 300, chunks,
                         std::span<const int32_t>(tokens).first(chunks * n_ctx));
    perplexity(session, tokens, {.n_ctx = n_ctx}, {},
               [&](size_t, std::span<const float> logits, int32_t) { writer.add(logits); });
    writer.finish();
  }
  LogProbReader reader(dir / "base.kld");
  Session session(Model::load(dir / "other.gguf"), *cpu, n_ctx);
  size_t calls = 0;
  const KlDivergence k = kl_divergence(session, reader, 0, [&](size_t, const KlDivergence&) {
    ++calls;
    return true;
  });
  EXPECT_EQ(calls, chunks);
  ASSERT_EQ(k.count(), chunks * (n_ctx - n_ctx / 2 - 1));

  double kld_sum = 0, nll_sum = 0, base_nll_sum = 0;
  std::vector<double> per_position;
  size_t same = 0, n = 0;
  for (size_t c = 0; c < chunks; ++c) {
    std::vector<int32_t> chunk(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx);
    chunk[0] = 1;
    ReferenceModel a(base_tiny), b(other_tiny);
    for (size_t j = 0; j + 1 < n_ctx; ++j) {
      const std::vector<double> la = a.step(chunk[j]), lb = b.step(chunk[j]);
      if (j < n_ctx / 2) continue;
      // The file's rounding: log-probabilities to 16-bit steps over the top 16 nats.
      std::vector<double> base = log_softmax(la);
      const double top = *std::max_element(base.begin(), base.end());
      const double floor = std::max(*std::min_element(base.begin(), base.end()), top - 16);
      for (double& v : base)
        v = floor + std::nearbyint((std::max(v, floor) - floor) / ((top - floor) / 65535)) *
                        ((top - floor) / 65535);
      const std::vector<double> q = log_softmax(lb);
      double kld = 0;
      for (size_t i = 0; i < base.size(); ++i)
        if (base[i] > -16) kld += std::exp(base[i]) * (base[i] - q[i]);
      kld_sum += kld;
      per_position.push_back(kld);
      nll_sum -= q[chunk[j + 1]];
      base_nll_sum -= base[chunk[j + 1]];
      same += std::max_element(la.begin(), la.end()) - la.begin() ==
              std::max_element(lb.begin(), lb.end()) - lb.begin();
      ++n;
    }
  }
  EXPECT_NEAR(k.mean_kld().value, kld_sum / n, 1e-3 * kld_sum / n + 1e-4);
  EXPECT_NEAR(std::log(k.ppl().value), nll_sum / n, 1e-3);
  EXPECT_NEAR(std::log(k.base_ppl().value), base_nll_sum / n, 1e-3);
  EXPECT_NEAR(k.same_top().value * n, static_cast<double>(same), 1.0);
  EXPECT_GT(k.mean_kld().value, 0.01);  // the models differ
  // Quantiles: q x 20 into the 21 sorted values, between neighbours (0.975: 19.5).
  std::sort(per_position.begin(), per_position.end());
  ASSERT_EQ(per_position.size(), 21u);
  EXPECT_NEAR(k.kld_quantile(0.5), per_position[10], 1e-3 * per_position[10] + 1e-4);
  EXPECT_NEAR(k.kld_quantile(0.9), per_position[18], 1e-3 * per_position[18] + 1e-4);
  EXPECT_NEAR(k.kld_quantile(0.975), 0.5 * (per_position[19] + per_position[20]),
              1e-3 * per_position[20] + 1e-4);
  EXPECT_NEAR(k.kld_quantile(1), per_position[20], 1e-3 * per_position[20] + 1e-4);

  // Against itself, the divergence is the file's rounding alone.
  LogProbReader again(dir / "base.kld");
  Session same_session(Model::load(dir / "base.gguf"), *cpu, n_ctx);
  const KlDivergence self = kl_divergence(same_session, again);
  EXPECT_LT(std::abs(self.mean_kld().value), 1e-5);
  EXPECT_EQ(self.same_top().value, 1.0);
  EXPECT_NEAR(self.ppl().value / self.base_ppl().value, 1.0, 1e-3);

  // A model of another vocabulary: an error.
  TinySpec wide = tiny_spec("llama", false);
  wide.n_vocab = 320;
  write_gguf(make_tiny_model(wide, DType::F32, DType::F32, 1), dir / "wide.gguf");
  LogProbReader third(dir / "base.kld");
  Session wide_session(Model::load(dir / "wide.gguf"), *cpu, n_ctx);
  EXPECT_THROW(kl_divergence(wide_session, third), Error);
}

// HellaSwag: each ending's mean log-probability (its tokens after those all four share, the
// first from the shared tokens' last logits) against the reference's, token by token over the
// whole sequence; the pick is the highest; acc_norm counts the gold picks.
TEST(Hellaswag, MeanLogProbsAndPicksMatchTheReference) {
  const LoadedTiny loaded("llama", DType::F32, 5);
  Session session(loaded.model, *loaded.cpu, 256);
  std::string text;
  std::mt19937 rng(4);
  const auto words = [&](size_t n) { return random_words(rng, n); };
  for (int t = 0; t < 6; ++t) {
    text += words(3 + rng() % 4) + "\n" + std::to_string(t % 4) + "\n";
    for (int e = 0; e < 4; ++e) text += words(1 + rng() % 4) + (t == 5 && e == 3 ? "" : "\n");
  }
  const std::vector<HellaswagTask> tasks = parse_hellaswag(text);
  ASSERT_EQ(tasks.size(), 6u);
  const HellaswagResult r = score_hellaswag(session, tasks);
  ASSERT_EQ(r.picks.size(), 6u);
  size_t correct = 0;
  const tokenizer::Tokenizer& tok = loaded.model->tokenizer();
  for (size_t t = 0; t < 6; ++t) {
    std::array<std::vector<int32_t>, 4> seq;
    for (size_t e = 0; e < 4; ++e)
      seq[e] = tok.encode(tasks[t].context + " " + tasks[t].endings[e], true);
    size_t shared = 0;
    while (shared + 1 < std::min({seq[0].size(), seq[1].size(), seq[2].size(), seq[3].size()}) &&
           seq[0][shared] == seq[1][shared] && seq[0][shared] == seq[2][shared] &&
           seq[0][shared] == seq[3][shared])
      ++shared;
    std::array<double, 4> want{};
    for (size_t e = 0; e < 4; ++e) {
      ReferenceModel ref(loaded.tiny);
      double sum = 0;
      for (size_t j = 0; j + 1 < seq[e].size(); ++j) {
        const std::vector<double> logits = ref.step(seq[e][j]);
        if (j + 1 < shared) continue;
        sum += log_softmax(logits)[seq[e][j + 1]];
      }
      want[e] = sum / static_cast<double>(seq[e].size() - shared);
      EXPECT_NEAR(r.mean_log_prob[t][e], want[e], 1e-4) << "task " << t << " ending " << e;
    }
    const size_t pick = std::max_element(want.begin(), want.end()) - want.begin();
    EXPECT_EQ(r.picks[t], pick) << "task " << t;
    correct += pick == tasks[t].gold;
  }
  EXPECT_EQ(r.correct, correct);
  EXPECT_NEAR(r.accuracy(), correct / 6.0, 1e-12);
  EXPECT_GT(std::set<size_t>(r.picks.begin(), r.picks.end()).size(), 1u);  // picks that tell

  // The draw: a permutation of the tasks when all are taken, distinct ones when fewer.
  const std::vector<HellaswagTask> all = select_hellaswag_tasks(tasks, 100);
  ASSERT_EQ(all.size(), 6u);
  std::set<std::string> contexts;
  for (const auto& task : all) contexts.insert(task.context);
  EXPECT_EQ(contexts.size(), 6u);
  EXPECT_EQ(select_hellaswag_tasks(tasks, 3).size(), 3u);
  // Wilson's interval holds the share.
  const auto [lo, hi] = wilson_interval(0.5, 40);
  EXPECT_LT(lo, 0.5);
  EXPECT_GT(hi, 0.5);
  EXPECT_NEAR(lo + hi, 1.0, 1e-12);  // symmetric at one half

  EXPECT_THROW(parse_hellaswag("a\n0\nb\nc\nd"), Error);
  try {
    parse_hellaswag("ctx\n7\na\nb\nc\nd");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2: the gold ending's index must be 0, 1, 2 or 3"),
              std::string::npos)
        << e.what();
  }
}

// Winogrande: each choice's score is the mean log-probability of the sentence's tokens after
// the choice (but the last), or after the shared tokens when a rest is 3 tokens or fewer, as
// restated here over the reference's logits token by token; the pick is the higher.
TEST(Winogrande, ScoresAndPicksMatchTheReference) {
  const LoadedTiny loaded("llama", DType::F32, 5);
  Session session(loaded.model, *loaded.cpu, 256);
  std::mt19937 rng(8);
  const auto words = [&](size_t n) { return random_words(rng, n); };
  std::string csv = "not a task\n";
  for (int t = 0; t < 8; ++t) {
    // Short rests (the choices scored too) in some tasks, long ones in others; a quoted
    // sentence with a comma in one.
    const std::string sentence = words(2) + " _" + (t % 3 == 0 ? "" : " " + words(1 + t % 5));
    csv += std::to_string(t) + "," + (t == 4 ? "\"" + sentence + ", w261\"" : sentence) + "," +
           words(1 + t % 2) + "," + words(1 + (t + 1) % 2) + "," + std::to_string(1 + t % 2) + "\n";
  }
  const std::vector<WinograndeTask> tasks = parse_winogrande(csv);
  ASSERT_EQ(tasks.size(), 8u);
  EXPECT_EQ(tasks[4].second.substr(tasks[4].second.size() - 6), ", w261");
  const WinograndeResult r = score_winogrande(session, tasks);
  ASSERT_EQ(r.picks.size(), 8u);
  const tokenizer::Tokenizer& tok = loaded.model->tokenizer();
  size_t correct = 0, skipped_choice = 0;
  for (size_t t = 0; t < 8; ++t) {
    std::array<std::vector<int32_t>, 2> seq;
    std::array<size_t, 2> base{};
    for (size_t c = 0; c < 2; ++c) {
      seq[c] = tok.encode(tasks[t].first + tasks[t].choices[c] + tasks[t].second, true);
      base[c] = tok.encode(tasks[t].first + tasks[t].choices[c], true).size();
    }
    size_t shared = 0;
    while (shared + 1 < std::min(seq[0].size(), seq[1].size()) && seq[0][shared] == seq[1][shared])
      ++shared;
    const bool skip = seq[0].size() - shared > 3 && seq[1].size() - shared > 3;
    skipped_choice += skip;
    std::array<double, 2> want{};
    for (size_t c = 0; c < 2; ++c) {
      const size_t from = skip ? base[c] : shared;
      const size_t last = seq[c].size() - from > 1 ? 1 : 0;
      ReferenceModel ref(loaded.tiny);
      double sum = 0;
      size_t n = 0;
      for (size_t j = 0; j + 1 + last < seq[c].size(); ++j) {
        const std::vector<double> logits = ref.step(seq[c][j]);
        if (j + 1 < from) continue;
        sum += log_softmax(logits)[seq[c][j + 1]];
        ++n;
      }
      want[c] = sum / static_cast<double>(n);
      EXPECT_NEAR(r.scores[t][c], want[c], 1e-4) << "task " << t << " choice " << c;
    }
    const int pick = want[0] > want[1] ? 1 : 2;
    EXPECT_EQ(r.picks[t], pick) << "task " << t;
    correct += pick == tasks[t].answer;
  }
  EXPECT_EQ(r.correct, correct);
  EXPECT_GT(skipped_choice, 0u);  // both ways of scoring met
  EXPECT_LT(skipped_choice, 8u);
  EXPECT_EQ(select_winogrande_tasks(tasks, 3).size(), 3u);
  EXPECT_EQ(select_winogrande_tasks(tasks, 0).size(), 8u);
  EXPECT_THROW(parse_winogrande("a,b,c\n"), Error);
}

}  // namespace
}  // namespace oxi::llm::test

namespace oxi::llm::test {
namespace {

std::string read_error(std::string_view bytes, size_t count) {
  try {
    read_multiple_choice(bytes, count);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

// llama.cpp's draw, values worked by hand from std::mt19937(1)'s first outputs (1791095845,
// 4282876139, 3093770124): floor(u / 2^32 x tasks left), the pick's place taken by the last.
TEST(TaskDraw, IsLlamaCppsDraw) {
  EXPECT_EQ(draw_task_indices(10, 3), (std::vector<size_t>{4, 8, 5}));
  std::vector<size_t> all = draw_task_indices(7, 7);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6}));
}

// --multiple-choice: the file read in order or by the drawn offsets; each answer's mean
// log-probability after the tokens all share against the reference's logits token by token;
// the pick the highest; correct where its label is 1; broken files are errors naming the task.
TEST(MultipleChoice, ReadsLlamaCppsFileAndScoresAgainstTheReference) {
  const LoadedTiny loaded("llama", DType::F32, 7);
  Session session(loaded.model, *loaded.cpu, 256);
  std::mt19937 rng(9);
  std::vector<MultipleChoiceTask> tasks(7);
  for (size_t t = 0; t < tasks.size(); ++t) {
    tasks[t].question = random_words(rng, 2 + rng() % 4);
    const size_t n = 2 + t % 4;  // 2 to 5 answers
    for (size_t a = 0; a < n; ++a) {
      tasks[t].answers.push_back(random_words(rng, 1 + rng() % 3));
      tasks[t].labels.push_back(a == t % n ? 1 : 0);
    }
  }
  const std::string file = multiple_choice_file(tasks);
  const std::vector<MultipleChoiceTask> all = read_multiple_choice(file, 0);
  ASSERT_EQ(all.size(), tasks.size());
  for (size_t t = 0; t < tasks.size(); ++t) {
    EXPECT_EQ(all[t].question, tasks[t].question);
    EXPECT_EQ(all[t].answers, tasks[t].answers);
    EXPECT_EQ(all[t].labels, tasks[t].labels);
  }
  EXPECT_EQ(read_multiple_choice(file, 7).size(), 7u);
  EXPECT_EQ(multiple_choice_task_count(file), 7u);
  const std::vector<MultipleChoiceTask> drawn = read_multiple_choice(file, 3);
  const std::vector<size_t> picked = draw_task_indices(7, 3);
  ASSERT_EQ(drawn.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(drawn[i].question, tasks[picked[i]].question);

  const MultipleChoiceResult r = score_multiple_choice(session, all);
  ASSERT_EQ(r.picks.size(), tasks.size());
  const tokenizer::Tokenizer& tok = loaded.model->tokenizer();
  size_t correct = 0, answers = 0;
  for (size_t t = 0; t < tasks.size(); ++t) {
    std::vector<std::vector<int32_t>> seq;
    for (const std::string& a : tasks[t].answers)
      seq.push_back(tok.encode(tasks[t].question + " " + a, true));
    size_t shortest = seq[0].size();
    for (const auto& q : seq) shortest = std::min(shortest, q.size());
    size_t shared = 0;
    while (shared + 1 < shortest && std::all_of(seq.begin(), seq.end(), [&](const auto& q) {
             return q[shared] == seq[0][shared];
           }))
      ++shared;
    std::vector<double> want;
    for (size_t a = 0; a < seq.size(); ++a) {
      ReferenceModel ref(loaded.tiny);
      double sum = 0;
      for (size_t j = 0; j + 1 < seq[a].size(); ++j) {
        const std::vector<double> logits = ref.step(seq[a][j]);
        if (j + 1 >= shared) sum += log_softmax(logits)[seq[a][j + 1]];
      }
      want.push_back(sum / static_cast<double>(seq[a].size() - shared));
      EXPECT_NEAR(r.mean_log_prob[t][a], want[a], 1e-4) << "task " << t << " answer " << a;
    }
    const size_t pick = std::max_element(want.begin(), want.end()) - want.begin();
    EXPECT_EQ(r.picks[t], pick) << "task " << t;
    correct += tasks[t].labels[pick] == 1;
    answers += tasks[t].answers.size();
  }
  EXPECT_EQ(r.correct, correct);
  EXPECT_EQ(r.answers, answers);
  EXPECT_GT(std::set<size_t>(r.picks.begin(), r.picks.end()).size(), 1u);  // picks that tell

  // Every cut of the file is an error (or, cut after the tasks the draw reads, fewer tasks),
  // never a crash; the errors name the task.
  for (size_t cut = 0; cut < file.size(); ++cut)
    EXPECT_NE(read_error(std::string_view(file).substr(0, cut), 0), "<no error>") << cut;
  EXPECT_NE(read_error("", 0).find("no tasks"), std::string::npos);
  EXPECT_NE(read_error(std::string_view(file).substr(0, file.size() - 1), 0).find("task 7 of 7"),
            std::string::npos);
  std::vector<MultipleChoiceTask> empty_answer = tasks;
  empty_answer[2].answers[1].clear();
  EXPECT_NE(read_error(multiple_choice_file(empty_answer), 0).find("task 3 of 7: an empty answer"),
            std::string::npos);
  std::string many = file;
  const size_t count_at = 4 + 4 * 7 + 4 + tasks[0].question.size();  // task 1's answer count
  many[count_at] = 101;
  EXPECT_NE(read_error(many, 0).find("task 1 of 7: 101 answers (at most 100)"), std::string::npos)
      << read_error(many, 0);
  std::string far = file;
  far[4] = far[5] = far[6] = far[7] = '\x7f';   // task 1's offset
  for (size_t count = 1; count < 7; ++count) {  // read at its offset where the draw takes it
    const std::vector<size_t> take = draw_task_indices(7, count);
    if (std::find(take.begin(), take.end(), 0) != take.end())
      EXPECT_NE(read_error(far, count).find("task 1: its offset"), std::string::npos) << count;
    else
      EXPECT_EQ(read_error(far, count), "<no error>") << count;
  }
}

// Edited multiple-choice files (bit flips, random bytes, bumped counts and lengths, cuts),
// read whole and by the draw: each reads or is an oxi::Error, never a crash or a huge
// allocation.
TEST(MultipleChoice, EditedFilesReadOrFailCleanly) {
  std::mt19937 rng(21);
  std::vector<MultipleChoiceTask> tasks(5);
  for (size_t t = 0; t < tasks.size(); ++t) {
    tasks[t].question = random_words(rng, 3);
    for (size_t a = 0; a < 3; ++a) {
      tasks[t].answers.push_back(random_words(rng, 2));
      tasks[t].labels.push_back(a == 1);
    }
  }
  const std::string seed = multiple_choice_file(tasks);
  const std::vector<char> bytes(seed.begin(), seed.end());
  size_t read = 0, refused = 0;
  for (int i = 0; i < 4000; ++i) {
    const std::vector<char> edited = oxi::test::edit_bytes(bytes, rng);
    const std::string_view view(edited.data(), edited.size());
    for (size_t count : {size_t{0}, size_t{2}}) {
      try {
        const std::vector<MultipleChoiceTask> got = read_multiple_choice(view, count);
        for (const MultipleChoiceTask& t : got) ASSERT_EQ(t.answers.size(), t.labels.size());
        ++read;
      } catch (const Error&) {
        ++refused;
      }
    }
  }
  EXPECT_GT(read, 100u);
  EXPECT_GT(refused, 1000u);
}

}  // namespace
}  // namespace oxi::llm::test
