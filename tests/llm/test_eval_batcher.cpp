// Continuous batching (lib/llm/eval_batcher.h): sessions of several threads whose evaluations
// share forward passes get the double-precision reference's logits (float weights) and the
// logits each would get alone (within the batched-prefill
// tolerance: a pass's rows go through the GEMM path where one token alone takes the
// matrix-vector one), on every architecture; their caches hold their own rows; one session's
// bad request fails it alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "lib/core/error.h"
#include "lib/llm/eval_batcher.h"
#include "lib/llm/model.h"
#include "lib/llm/session.h"
#include "tests/common/test_data.h"
#include "tests/llm/reference.h"
#include "tests/llm/tiny_model.h"

namespace oxi::llm::test {
namespace {

using kernels::DType;

// What one conversation evaluates: a prompt (all its logits, or the last's), then tokens one at
// a time.
struct Script {
  std::vector<int32_t> prompt;
  bool all_logits = false;
  std::vector<int32_t> steps;
};

// Every logit the script's evals return, in order.
std::vector<float> run_script(Session& session, const Script& s) {
  std::vector<float> out;
  const auto keep = [&](std::span<const float> l) { out.insert(out.end(), l.begin(), l.end()); };
  keep(session.eval(s.prompt, s.all_logits));
  for (int32_t t : s.steps) keep(session.eval(std::span(&t, 1)));
  return out;
}

// max |a - b| / max(1, |a|) over each logit.
double max_relative_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]) /
                                std::max(1.0, std::abs(static_cast<double>(a[i]))));
  return worst;
}

class Batched : public ::testing::TestWithParam<std::string> {};

TEST_P(Batched, SessionsSharingPassesGetTheirOwnLogits) {
  for (DType dtype : {DType::F32, DType::Q8_0}) {
    const TinyModel tiny = make_tiny_model(tiny_spec(GetParam(), false), dtype, DType::F32, 21);
    oxi::test::TempDir dir;
    write_gguf(tiny, dir / "m.gguf");
    const std::shared_ptr<const Model> model = Model::load(dir / "m.gguf");
    const int n_vocab = tiny.spec.n_vocab;
    // A prompt longer than a session's batch (two passes), one whose every logit is asked
    // for, a short one; then decode steps of different counts.
    const std::vector<Script> scripts = {
        {test_prompt(300, n_vocab, 1), false, test_prompt(6, n_vocab, 2)},
        {test_prompt(23, n_vocab, 3), true, test_prompt(9, n_vocab, 4)},
        {test_prompt(4, n_vocab, 5), false, test_prompt(12, n_vocab, 6)},
    };
    const auto cpu = backends::make_cpu_backend(2);

    std::vector<std::vector<float>> alone;
    for (const Script& s : scripts) {
      Session session(model, *cpu, 512);
      alone.push_back(run_script(session, s));
    }

    // Each script in a thread of its own; every session active from the start, so each pass
    // waits (the gather time is long) for all that have not finished.
    const auto batch_backend = backends::make_cpu_backend(2);
    const auto batcher =
        std::make_shared<EvalBatcher>(model, *batch_backend, 512, std::chrono::seconds(30));
    std::vector<std::unique_ptr<Session>> sessions;
    std::vector<std::unique_ptr<EvalBatcher::Activity>> active;
    for (size_t i = 0; i < scripts.size(); ++i) {
      sessions.push_back(std::make_unique<Session>(model, *cpu, 512));
      sessions.back()->use_batcher(batcher);
      active.push_back(std::make_unique<EvalBatcher::Activity>(*batcher));
    }
    std::vector<std::vector<float>> together(scripts.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < scripts.size(); ++i)
      threads.emplace_back([&, i] {
        together[i] = run_script(*sessions[i], scripts[i]);
        active[i].reset();
      });
    for (std::thread& t : threads) t.join();

    for (size_t i = 0; i < scripts.size(); ++i) {
      ASSERT_EQ(together[i].size(), alone[i].size()) << i;
      const double diff = max_relative_diff(alone[i], together[i]);
      EXPECT_LE(diff, 1e-4) << GetParam() << " " << kernels::name(dtype) << " script " << i;
      std::cout << "[ measure ] " << GetParam() << " " << kernels::name(dtype) << " script " << i
                << " batched with others vs alone max rel diff = " << diff << "\n";
      std::vector<int32_t> tokens = scripts[i].prompt;
      tokens.insert(tokens.end(), scripts[i].steps.begin(), scripts[i].steps.end());
      EXPECT_EQ(sessions[i]->tokens(), tokens);
    }
    // Against the independent double-precision reference (float weights, f32 cache: exact
    // arithmetic but for f32 rounding, the 1e-4 x RMS bound of the model tests): every row of
    // logits a shared pass gave.
    if (dtype == DType::F32) {
      for (size_t i = 0; i < scripts.size(); ++i) {
        ReferenceModel ref(tiny);
        std::vector<std::vector<double>> want;
        const Script& sc = scripts[i];
        for (size_t t = 0; t < sc.prompt.size(); ++t) {
          std::vector<double> l = ref.step(sc.prompt[t]);
          if (sc.all_logits || t + 1 == sc.prompt.size()) want.push_back(std::move(l));
        }
        for (int32_t t : sc.steps) want.push_back(ref.step(t));
        ASSERT_EQ(want.size() * static_cast<size_t>(n_vocab), together[i].size());
        double worst = 0, worst_abs = 0;
        for (size_t row = 0; row < want.size(); ++row) {
          double ss = 0, diff = 0;
          for (double v : want[row]) ss += v * v;
          for (size_t k = 0; k < want[row].size(); ++k)
            diff = std::max(diff, std::abs(together[i][row * n_vocab + k] - want[row][k]));
          worst = std::max(worst, diff / std::sqrt(ss / static_cast<double>(want[row].size())));
          worst_abs = std::max(worst_abs, diff);
        }
        EXPECT_LE(worst, 1e-4) << GetParam() << " script " << i;
        EXPECT_LE(worst_abs, 1e-3) << GetParam() << " script " << i;
        std::cout << "[ measure ] " << GetParam() << " script " << i
                  << " batched vs double reference: max |diff| = " << worst_abs << " = " << worst
                  << " x rms(logits)\n";
      }
    }

    // 300 + 23 + 4 prompt tokens, then 6 + 9 + 12 steps: the first pass took the first
    // script's 256-token batch with the two others' prompts, later passes their steps together
    // (fewer passes than requests), and the rows are all the tokens.
    const EvalBatcher::Stats stats = batcher->stats();
    EXPECT_EQ(stats.most_shared, 3u);
    EXPECT_EQ(stats.requests, 2u + 1 + 1 + 6 + 9 + 12);
    EXPECT_LT(stats.passes, stats.requests);
    EXPECT_EQ(stats.rows, 300u + 23 + 4 + 6 + 9 + 12);

    // The caches hold each session's own rows: a session continued alone from there equals
    // one that never shared a pass.
    for (size_t i = 0; i < scripts.size(); ++i) {
      sessions[i]->use_batcher(nullptr);
      Session fresh(model, *cpu, 512);
      std::vector<int32_t> tokens = sessions[i]->tokens();
      fresh.eval(tokens);
      const int32_t next = 7;
      const auto a = sessions[i]->eval(std::span(&next, 1));
      const std::vector<float> mine(a.begin(), a.end());
      const auto b = fresh.eval(std::span(&next, 1));
      EXPECT_LE(max_relative_diff(std::vector<float>(b.begin(), b.end()), mine), 1e-4) << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, Batched,
                         ::testing::Values("llama", "qwen2", "qwen3", "gemma3", "phi3"));

TEST(EvalBatcher, ABadRequestFailsItsSessionAlone) {
  const TinyModel tiny = make_tiny_model(tiny_spec("llama", false), DType::Q8_0, DType::F32, 3);
  oxi::test::TempDir dir;
  write_gguf(tiny, dir / "m.gguf");
  const std::shared_ptr<const Model> model = Model::load(dir / "m.gguf");
  const auto cpu = backends::make_cpu_backend(1);
  const auto batcher = std::make_shared<EvalBatcher>(model, *cpu);
  Session good(model, *cpu, 16), bad(model, *cpu, 16), alone(model, *cpu, 16);
  good.use_batcher(batcher);
  bad.use_batcher(batcher);
  const std::vector<int32_t> prompt = test_prompt(5, tiny.spec.n_vocab, 9);
  const int32_t outside = tiny.spec.n_vocab;
  EXPECT_THROW(bad.eval(std::span(&outside, 1)), Error);
  EXPECT_EQ(bad.n_past(), 0u);
  const auto a = good.eval(prompt);
  const std::vector<float> mine(a.begin(), a.end());
  const auto b = alone.eval(prompt);
  EXPECT_LE(max_relative_diff(std::vector<float>(b.begin(), b.end()), mine), 1e-4);
  // Another model's batcher is refused.
  const TinyModel other_tiny =
      make_tiny_model(tiny_spec("llama", false), DType::F32, DType::F32, 4);
  write_gguf(other_tiny, dir / "o.gguf");
  const auto other = std::make_shared<EvalBatcher>(Model::load(dir / "o.gguf"), *cpu);
  EXPECT_THROW(good.use_batcher(other), Error);
}

}  // namespace
}  // namespace oxi::llm::test
