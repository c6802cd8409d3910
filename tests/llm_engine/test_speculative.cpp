// Speculative decoding (EngineOptions::draft_model): the engine with a draft gives the replies
// the engine alone gives (greedy, sampled with penalties, grammar, stop strings, token and
// context limits), leaves the same cache behind for the next turn, and counts what the draft
// proposed and what was taken; a draft of another vocabulary is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/core/error.h"
#include "lib/llm/engine.h"
#include "lib/llm/session.h"
#include "tests/common/test_data.h"
#include "tests/llm/tiny_model.h"
#include "tests/llm_engine/engine_fixture.h"

namespace oxi::llm::test {
namespace {

class Speculative : public ::testing::Test {
 protected:
  void SetUp() override {
    // Q8_0 matrices: a batch's logits are bit-identical to one token's, so the draft's batch
    // and plain decoding see the same numbers.
    write_gguf(
        make_tiny_model(tiny_spec("llama", false), kernels::DType::Q8_0, kernels::DType::F32, 7),
        dir_ / "model.gguf");
    write_gguf(
        make_tiny_model(tiny_spec("llama", false), kernels::DType::Q8_0, kernels::DType::F32, 31),
        dir_ / "other.gguf");
  }
  std::unique_ptr<Engine> engine(const std::string& draft = "", size_t n_ctx = 0,
                                 int draft_max = 16, float p_min = 0.0f) {
    EngineOptions o;
    o.threads = 2;
    o.n_ctx = n_ctx;
    if (!draft.empty()) o.draft_model = (dir_ / draft).string();
    o.draft_max = draft_max;
    o.draft_p_min = p_min;
    return Engine::load((dir_ / "model.gguf").string(), o);
  }
  oxi::test::TempDir dir_;
};

GenerateOptions sampled(uint64_t seed, int max_tokens) {
  GenerateOptions g;
  g.sampling.temperature = 1.0f;
  g.sampling.top_k = 0;
  g.sampling.min_p = 0;
  g.sampling.repeat_penalty = 1.3f;
  g.sampling.presence_penalty = 0.5f;
  g.sampling.seed = seed;
  g.max_tokens = max_tokens;
  return g;
}

void expect_same_turn(const TurnStats& with, const TurnStats& without, const std::string& what) {
  EXPECT_EQ(with.generated_ids, without.generated_ids) << what;
  EXPECT_EQ(with.text, without.text) << what;
  EXPECT_EQ(with.stop_reason, without.stop_reason) << what;
}

TEST_F(Speculative, RepliesAreThoseOfTheModelAlone) {
  GenerateOptions greedy;
  greedy.sampling.temperature = 0;
  greedy.max_tokens = 40;
  for (const std::string draft : {"model.gguf", "other.gguf"}) {
    SCOPED_TRACE(draft);
    const auto plain = engine();
    const auto fast = engine(draft);
    const TurnStats a = fast->send_raw("w260 w261", greedy);
    const TurnStats b = plain->send_raw("w260 w261", greedy);
    expect_same_turn(a, b, "greedy");
    EXPECT_GT(a.draft_tokens, 0u);
    if (draft == "model.gguf") {
      EXPECT_EQ(a.draft_accepted, a.draft_tokens);  // it is the model
    }
    EXPECT_EQ(fast->session().tokens(), plain->session().tokens());
    // A chat turn after it, sampled with penalties (which look at the context, not the drafts).
    size_t proposed = 0, accepted = 0;
    for (uint64_t seed : {1u, 2u, 3u, 4u}) {
      const TurnStats c = fast->send({{"user", "w270 w271"}}, sampled(seed, 30));
      const TurnStats d = plain->send({{"user", "w270 w271"}}, sampled(seed, 30));
      expect_same_turn(c, d, "sampled, seed " + std::to_string(seed));
      EXPECT_EQ(fast->session().tokens(), plain->session().tokens());
      proposed += c.draft_tokens;
      accepted += c.draft_accepted;
    }
    EXPECT_GT(proposed, 0u);
    if (draft == "other.gguf") {
      EXPECT_LT(accepted, proposed);  // another model's guesses: some are not taken
    }
  }
}

TEST_F(Speculative, LimitsGrammarsAndStopsAsWithoutADraft) {
  const auto plain = engine(), fast = engine("model.gguf");
  GenerateOptions g = sampled(5, 7);  // a token limit inside a draft
  expect_same_turn(fast->send_raw("w280", g), plain->send_raw("w280", g), "max tokens");
  EXPECT_EQ(fast->session().tokens(), plain->session().tokens());

  g = sampled(6, 40);
  g.grammar = "root ::= (\"yes\" | \"no\") \" \" [0-9]{1,2}";
  expect_same_turn(fast->send_raw("w281", g), plain->send_raw("w281", g), "grammar");

  g = sampled(7, 40);
  GenerateOptions alone = g;  // the same context as the two engines' next turn
  const auto third = engine();
  third->send_raw("w280", sampled(5, 7));
  third->send_raw("w281", [&] {
    GenerateOptions h = sampled(6, 40);
    h.grammar = "root ::= (\"yes\" | \"no\") \" \" [0-9]{1,2}";
    return h;
  }());
  const TurnStats free = third->send_raw("w282", alone);
  ASSERT_GT(free.text.size(), 8u);
  g.stop = {free.text.substr(free.text.size() / 2, 3)};
  std::string streamed;
  const TurnStats stopped = fast->send_raw("w282", g, [&](std::string_view piece) {
    streamed += piece;
    return true;
  });
  expect_same_turn(stopped, plain->send_raw("w282", g), "stop string");
  EXPECT_EQ(streamed, stopped.text);
  EXPECT_EQ(fast->session().tokens(), plain->session().tokens());

  // A context that fills inside a draft.
  const auto small_plain = engine("", 24), small_fast = engine("model.gguf", 24, 8);
  GenerateOptions unbounded = sampled(8, -1);
  unbounded.ignore_eos = true;
  const TurnStats full = small_fast->send_raw("w283 w284", unbounded);
  expect_same_turn(full, small_plain->send_raw("w283 w284", unbounded), "context full");
  EXPECT_EQ(full.stop_reason, StopReason::context_full);
  EXPECT_EQ(small_fast->session().tokens(), small_plain->session().tokens());
}

// draft_min: shorter drafts are not used. The model as its own draft, 20 tokens, drafts of up
// to 16 from the second token on: the first is 16 long (all taken), then fewer fit.
TEST_F(Speculative, DraftsShorterThanDraftMinAreNotUsed) {
  EngineOptions o;
  o.threads = 2;
  o.draft_model = (dir_ / "model.gguf").string();
  o.draft_p_min = 0;
  o.draft_min = 16;
  GenerateOptions greedy;
  greedy.sampling.temperature = 0;
  greedy.max_tokens = 20;
  greedy.ignore_eos = true;
  const TurnStats s = Engine::load((dir_ / "model.gguf").string(), o)->send_raw("w290", greedy);
  expect_same_turn(s, engine()->send_raw("w290", greedy), "draft_min");
  EXPECT_EQ(s.generated_tokens, 20u);
  EXPECT_EQ(s.draft_tokens, 16u);
  EXPECT_EQ(s.draft_accepted, 16u);
}

TEST_F(Speculative, DraftOfAnotherVocabularyIsRefused) {
  TinySpec wide = tiny_spec("llama", false);
  wide.n_vocab = 320;
  write_gguf(make_tiny_model(wide, kernels::DType::F32, kernels::DType::F32, 1),
             dir_ / "wide.gguf");
  try {
    engine("wide.gguf");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find((dir_ / "wide.gguf").string() +
                                         ": the draft model's vocabulary has 320 tokens"),
              std::string::npos)
        << e.what();
  }
  EngineOptions o;
  o.draft_model = (dir_ / "other.gguf").string();
  o.draft_max = 0;
  EXPECT_THROW(Engine::load((dir_ / "model.gguf").string(), o), Error);
}

}  // namespace
}  // namespace oxi::llm::test
