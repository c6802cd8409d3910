// Engine end to end on a tiny random llama GGUF: determinism, raw and chat prompts, templates,
// end tokens, stop strings, --choices, KV reuse across turns, state files, cancel, limits.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>

#include "lib/core/error.h"
#include "lib/llm/engine.h"
#include "lib/llm/session.h"
#include "tests/common/test_data.h"
#include "tests/llm_engine/engine_fixture.h"

namespace oxi::llm::test {
namespace {

EngineOptions with_threads(int threads) {
  EngineOptions o;
  o.threads = threads;
  return o;
}
EngineOptions with_ctx(size_t n_ctx) {
  EngineOptions o;
  o.n_ctx = n_ctx;
  return o;
}
EngineOptions with_template(const std::string& name) {
  EngineOptions o;
  o.chat_template = name;
  return o;
}

GenerateOptions greedy(int max_tokens) {
  GenerateOptions g;
  g.sampling.temperature = 0;
  g.max_tokens = max_tokens;
  return g;
}

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_file_ = dir_ / "tiny.gguf";
    write_tiny_llama(model_file_);
  }
  std::unique_ptr<Engine> engine(const std::filesystem::path& file, EngineOptions o = {}) {
    if (o.threads == 0) o.threads = 2;
    return Engine::load(file.string(), o);
  }
  std::unique_ptr<Engine> engine(EngineOptions o = {}) { return engine(model_file_, o); }

  // The greedy reply to "w270" (12 tokens), and a copy of the model whose eot token is the
  // reply's first token at index `from` or later that did not come earlier, so that the reply
  // ends there: its index k (12: none) and the file.
  struct EotModel {
    TurnStats free;
    size_t k;
    std::filesystem::path file;
  };
  EotModel model_ending_at_fresh_token(size_t from) {
    EotModel m{engine()->send({{"user", "w270"}}, greedy(12)), from, dir_ / "eot.gguf"};
    const std::vector<int32_t>& ids = m.free.generated_ids;
    EXPECT_EQ(ids.size(), 12u);
    while (m.k < ids.size() &&
           std::find(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(m.k), ids[m.k]) !=
               ids.begin() + static_cast<std::ptrdiff_t>(m.k))
      ++m.k;
    if (m.k < ids.size())
      rewrite_gguf(model_file_, m.file, {}, [&](gguf::Writer& w) {
        w.set_u32("tokenizer.ggml.eot_token_id", static_cast<uint32_t>(ids[m.k]));
      });
    return m;
  }

  oxi::test::TempDir dir_;
  std::filesystem::path model_file_;
};

TEST_F(EngineTest, GreedyGenerationIsDeterministic) {
  std::string streamed;
  const TurnStats a = engine()->send_raw("w260 w261", greedy(24), [&](std::string_view p) {
    streamed += p;
    return true;
  });
  const TurnStats b = engine(with_threads(1))->send_raw("w260 w261", greedy(24));
  EXPECT_EQ(a.generated_ids, b.generated_ids);
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(a.text, streamed);
  EXPECT_EQ(a.generated_tokens, 24u);
  EXPECT_EQ(a.stop_reason, StopReason::max_tokens);
  EXPECT_GT(a.prompt_tokens, 0u);
  EXPECT_GE(a.prompt_ms, 0.0);
  EXPECT_GT(a.generation_tok_s(), 0.0);
}

// GenerateOptions::logprobs: each generated token's log-probability under the model and the
// likeliest alternatives', restated from a session's logits (double-precision log-softmax);
// the same reply as without them.
TEST_F(EngineTest, LogprobsAreTheModelsLogSoftmax) {
  GenerateOptions g = greedy(6);
  g.sampling.temperature = 1.0f;
  g.sampling.seed = 5;
  const TurnStats plain = engine()->send_raw("w260 w261", g);
  g.logprobs = 4;
  const auto e = engine();
  const TurnStats s = e->send_raw("w260 w261", g);
  EXPECT_EQ(s.generated_ids, plain.generated_ids);
  ASSERT_EQ(s.logprobs.size(), s.generated_ids.size());
  Session session(e->model_ptr(), e->backend(), 64);
  std::span<const float> logits = session.eval(s.prompt_ids);
  for (size_t i = 0; i < s.generated_ids.size(); ++i) {
    const double top = *std::max_element(logits.begin(), logits.end());
    double z = 0;
    for (float l : logits) z += std::exp(l - top);
    const auto log_p = [&](int32_t id) {
      return logits[static_cast<size_t>(id)] - top - std::log(z);
    };
    const TokenLogprob& t = s.logprobs[i];
    EXPECT_EQ(t.id, s.generated_ids[i]);
    EXPECT_NEAR(t.logprob, log_p(t.id), 1e-4) << i;
    ASSERT_EQ(t.top.size(), 4u);
    const int32_t best =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    EXPECT_EQ(t.top[0].first, best);
    for (size_t j = 0; j < 4; ++j) {
      EXPECT_NEAR(t.top[j].second, log_p(t.top[j].first), 1e-4);
      if (j > 0) {
        EXPECT_GE(t.top[j - 1].second, t.top[j].second);
      }
    }
    logits = session.eval(std::span<const int32_t>(&s.generated_ids[i], 1));
  }
  EXPECT_TRUE(plain.logprobs.empty());
}

TEST_F(EngineTest, RawPromptIsTheTextWithTheModelsBos) {
  auto e = engine();
  const TurnStats s = e->send_raw("w260 w261", greedy(0));
  const auto expected = e->model().tokenizer().encode("w260 w261", true);
  EXPECT_EQ(s.prompt_ids, expected);
  EXPECT_EQ(s.prompt_ids.front(), 1);  // <s>: add_bos is true in the tiny model
  EXPECT_EQ(s.generated_tokens, 0u);
  ASSERT_EQ(e->prompt_logits().size(), 300u);
  // The logits are those of a plain Session over the same tokens.
  Session session(e->model_ptr(), e->backend(), 64);
  const auto direct = session.eval(expected);
  EXPECT_EQ(std::memcmp(direct.data(), e->prompt_logits().data(), 300 * sizeof(float)), 0);
}

TEST_F(EngineTest, ChatUsesTheModelsTemplate) {
  auto e = engine();
  EXPECT_EQ(e->template_name(), "model");
  EXPECT_EQ(e->render({{"system", "be brief"}, {"user", "w260"}}),
            "<|system|>be brief<|user|>w260");
  const TurnStats s = e->send({{"user", "w260"}}, greedy(5));
  EXPECT_EQ(s.prompt_ids, e->model().tokenizer().encode("<|user|>w260", true, true));
  ASSERT_EQ(e->history().size(), 2u);
  EXPECT_EQ(e->history()[1].role, "assistant");
  EXPECT_EQ(e->history()[1].content, s.text);
}

TEST_F(EngineTest, FallbackTemplatesWithoutTheModelsOwn) {
  const auto bare = dir_ / "bare.gguf";
  rewrite_gguf(model_file_, bare, {"tokenizer.chat_template"}, {});
  auto e = engine(bare);
  EXPECT_EQ(e->template_name(), "llama2");
  EXPECT_EQ(e->render({{"user", "hi"}}), "<s>[INST] hi [/INST]");
  // The template writes <s> itself: the prompt has exactly one BOS.
  const TurnStats s = e->send({{"user", "hi"}}, greedy(0));
  EXPECT_EQ(std::count(s.prompt_ids.begin(), s.prompt_ids.end(), 1), 1);
  EXPECT_EQ(s.prompt_ids.front(), 1);

  auto chatml = engine(bare, with_template("chatml"));
  EXPECT_EQ(chatml->render({{"user", "hi"}}),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_THROW(engine(bare, with_template("no-such-template")), Error);
}

// ignore_eos: every end token (eos and eot here) gets -inf, so the greedy reply takes the best
// other token where it would have ended and runs to max_tokens. Refused with choices and for
// bias tokens off the vocabulary, before anything is evaluated.
TEST_F(EngineTest, IgnoreEosNeverPicksAnEndToken) {
  const EotModel m = model_ending_at_fresh_token(2);
  const TurnStats& free = m.free;
  const size_t k = m.k;
  ASSERT_LT(k, 12u) << "no fresh token in the greedy reply";
  const int32_t end = free.generated_ids[k];
  auto e = engine(m.file);
  const std::vector<int32_t> ends = e->model().eos_ids();
  ASSERT_GE(ends.size(), 2u);
  ASSERT_NE(std::find(ends.begin(), ends.end(), end), ends.end());
  const TurnStats ended = e->send({{"user", "w270"}}, greedy(12));
  EXPECT_EQ(ended.stop_reason, StopReason::eos);
  EXPECT_EQ(ended.generated_ids.size(), k + 1);

  GenerateOptions g = greedy(12);
  g.ignore_eos = true;
  e->reset();
  const TurnStats s = e->send({{"user", "w270"}}, g);
  EXPECT_EQ(s.stop_reason, StopReason::max_tokens);
  ASSERT_EQ(s.generated_ids.size(), 12u);
  EXPECT_TRUE(
      std::equal(s.generated_ids.begin(), s.generated_ids.begin() + k, free.generated_ids.begin()));
  for (int32_t id : s.generated_ids) EXPECT_EQ(std::find(ends.begin(), ends.end(), id), ends.end());

  e->reset();
  GenerateOptions with_choices = g;
  with_choices.choices = {"w260", "w261"};
  EXPECT_THROW(e->send({{"user", "w270"}}, with_choices), Error);
  GenerateOptions off_vocab = greedy(4);
  off_vocab.sampling.logit_bias = {{300, 1.0f}};
  EXPECT_THROW(e->send({{"user", "w270"}}, off_vocab), Error);
  EXPECT_EQ(e->session().n_past(), 0u);  // nothing evaluated
  EXPECT_TRUE(e->history().empty());
}

// The tiny model's greedy reply, then the same model with that reply's 4th token declared the
// end of turn: generation stops there, the end token is reported and produces no text.
TEST_F(EngineTest, StopsAtTheEndToken) {
  const EotModel m = model_ending_at_fresh_token(3);
  const TurnStats& free = m.free;
  const size_t k = m.k;
  ASSERT_LT(k, 12u) << "no fresh token in the greedy reply";
  auto e = engine(m.file);
  std::string streamed;
  const TurnStats s = e->send({{"user", "w270"}}, greedy(12), [&](std::string_view p) {
    streamed += p;
    return true;
  });
  EXPECT_EQ(s.stop_reason, StopReason::eos);
  ASSERT_EQ(s.generated_ids.size(), k + 1);
  EXPECT_TRUE(
      std::equal(s.generated_ids.begin(), s.generated_ids.end(), free.generated_ids.begin()));
  std::vector<int32_t> before_end(s.generated_ids.begin(), s.generated_ids.end() - 1);
  EXPECT_EQ(streamed, e->model().tokenizer().decode(before_end));
  EXPECT_EQ(s.text, streamed);
}

TEST_F(EngineTest, StopStringCutsTheReply) {
  const TurnStats free = engine()->send_raw("w280", greedy(16));
  ASSERT_GT(free.text.size(), 6u);
  const std::string stop = free.text.substr(free.text.size() / 2, 3);
  GenerateOptions g = greedy(16);
  g.stop = {"\x01never", stop};
  std::string streamed;
  const TurnStats s = engine()->send_raw("w280", g, [&](std::string_view p) {
    streamed += p;
    return true;
  });
  EXPECT_EQ(s.stop_reason, StopReason::stop_string);
  EXPECT_EQ(s.stop_string, stop);  // which of them
  EXPECT_TRUE(free.stop_string.empty());
  EXPECT_EQ(streamed, free.text.substr(0, free.text.find(stop)));
  EXPECT_EQ(s.text, streamed);
}

TEST_F(EngineTest, ChoicesAlwaysAnswerOneOfThem) {
  auto e = engine();
  const std::vector<std::string> choices = {"w260", "w261 w262", "w27", "yes", "no"};
  std::set<std::string> seen;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    GenerateOptions g;
    g.sampling.temperature = 3.0f;  // nearly uniform: every branch gets taken
    g.sampling.top_k = 0;
    g.sampling.min_p = 0;
    g.sampling.seed = seed;
    g.max_tokens = 1;  // ignored: a choice is always finished
    g.choices = choices;
    std::string streamed;
    const TurnStats s = e->send({{"user", "pick one"}}, g, [&](std::string_view p) {
      streamed += p;
      return true;
    });
    ASSERT_TRUE(s.choice.has_value());
    EXPECT_EQ(s.stop_reason, StopReason::choice);
    EXPECT_EQ(s.text, choices[*s.choice]);
    EXPECT_EQ(streamed, s.text);
    seen.insert(s.text);
    e->reset();
  }
  EXPECT_GE(seen.size(), 3u);
  // Raw mode too, and greedy.
  GenerateOptions g = greedy(-1);
  g.choices = choices;
  const TurnStats s = e->send_raw("w290", g);
  ASSERT_TRUE(s.choice.has_value());
  EXPECT_EQ(s.text, choices[*s.choice]);
}

TEST_F(EngineTest, LaterTurnsReuseTheCache) {
  auto e = engine();
  const TurnStats first = e->send({{"user", "w260 w261 w262"}}, greedy(6));
  const TurnStats second = e->send({{"user", "w263"}}, greedy(6));
  // The second prompt repeats the first one and the reply; only the new part is evaluated.
  ASSERT_GE(second.prompt_ids.size(), first.prompt_ids.size());
  EXPECT_TRUE(
      std::equal(first.prompt_ids.begin(), first.prompt_ids.end(), second.prompt_ids.begin()));
  EXPECT_GE(second.cached_tokens, first.prompt_ids.size());
  EXPECT_EQ(second.cached_tokens + second.prompt_tokens, second.prompt_ids.size());
  EXPECT_LT(second.prompt_tokens, second.prompt_ids.size() - first.prompt_ids.size() + 1);
  EXPECT_EQ(e->history().size(), 4u);

  e->reset();
  EXPECT_TRUE(e->history().empty());
  EXPECT_EQ(e->session().n_past(), 0u);
  const TurnStats again = e->send({{"user", "w260 w261 w262"}}, greedy(6));
  EXPECT_EQ(again.cached_tokens, 0u);
  EXPECT_EQ(again.generated_ids, first.generated_ids);
}

// A state saved after one turn and loaded by another engine continues exactly as the engine
// that saved it does: same prompt logits bit for bit, same tokens.
TEST_F(EngineTest, SavedStateContinuesBitIdentically) {
  for (const bool raw : {true, false}) {
    auto original = engine();
    const auto state = dir_ / (raw ? "raw.state" : "chat.state");
    if (raw)
      original->send_raw("w260 w261 w262", greedy(5));
    else
      original->send({{"user", "w260 w261 w262"}}, greedy(5));
    original->save_state(state);

    auto restored = engine();
    restored->load_state(state);
    EXPECT_EQ(restored->session().tokens(), original->session().tokens());
    EXPECT_EQ(restored->history().size(), original->history().size());

    const TurnStats a = raw ? original->send_raw(" w270 w271", greedy(8))
                            : original->send({{"user", "w270 w271"}}, greedy(8));
    const TurnStats b = raw ? restored->send_raw(" w270 w271", greedy(8))
                            : restored->send({{"user", "w270 w271"}}, greedy(8));
    EXPECT_EQ(a.prompt_ids, b.prompt_ids);
    EXPECT_EQ(a.cached_tokens, b.cached_tokens);
    EXPECT_GT(b.cached_tokens, 0u);
    EXPECT_EQ(a.generated_ids, b.generated_ids);
    ASSERT_EQ(a.generated_ids.size(), 8u);
    ASSERT_EQ(original->prompt_logits().size(), restored->prompt_logits().size());
    EXPECT_EQ(std::memcmp(original->prompt_logits().data(), restored->prompt_logits().data(),
                          original->prompt_logits().size() * sizeof(float)),
              0)
        << (raw ? "raw" : "chat");
  }
  auto e = engine();
  std::ofstream(dir_ / "junk.state") << "not a state";
  EXPECT_THROW(e->load_state(dir_ / "junk.state"), Error);
}

// A refused state file (here one cut inside its cache rows, the engine's trailer intact) leaves
// the conversation as it was: its history, tokens and the next turn.
TEST_F(EngineTest, RefusedStateKeepsTheConversation) {
  auto source = engine();
  source->send({{"user", "w260 w261 w262"}}, greedy(5));
  source->save_state(dir_ / "whole.state");
  // The header and tokens only, then the trailer (GCC 12 misreads insert() into a vector built
  // from a prefix as an out-of-bounds copy, so the bytes are erased from the middle instead).
  std::vector<uint8_t> cut = oxi::test::read_file_bytes(dir_ / "whole.state");
  ASSERT_GT(cut.size(), 260u);
  cut.erase(cut.begin() + 60, cut.end() - 200);
  oxi::test::write_file_bytes(dir_ / "cut.state", cut);

  auto e = engine();
  e->send({{"user", "w270"}}, greedy(3));
  const auto tokens = e->session().tokens();
  const auto history = e->history();
  EXPECT_THROW(e->load_state(dir_ / "cut.state"), Error);
  EXPECT_EQ(e->session().tokens(), tokens);
  ASSERT_EQ(e->history().size(), history.size());
  EXPECT_EQ(e->history().back().content, history.back().content);
  const TurnStats next = e->send({{"user", "w271"}}, greedy(3));
  EXPECT_GT(next.cached_tokens, 0u);
}

// Continuing a loaded state gives the same logits as evaluating the whole prompt at once, at
// every split point (each letter is one byte token here), also past Session::kMaxBatch.
TEST_F(EngineTest, LoadedStatePlusMoreEqualsTheWholePrompt) {
  std::string long_text;
  for (int i = 0; i < 254; ++i) long_text += static_cast<char>('a' + i % 26);  // 258 tokens
  struct Case {
    std::string text;
    std::vector<size_t> splits;
  };
  std::vector<Case> cases = {{"abcdefghijkl", {}}, {long_text, {1, 100, 250, 251, 252, 254}}};
  for (size_t k = 0; k <= 12; ++k) cases[0].splits.push_back(k);
  for (const Case& c : cases) {
    auto whole = engine();
    const TurnStats all = whole->send_raw(c.text, greedy(0));
    for (size_t k : c.splits) {
      auto first = engine();
      first->send_raw(c.text.substr(0, k), greedy(0));
      first->save_state(dir_ / "p1.state");
      auto continued = engine();
      continued->load_state(dir_ / "p1.state");
      const TurnStats more = continued->send_raw(c.text.substr(k), greedy(0));
      EXPECT_EQ(more.prompt_ids, all.prompt_ids);
      ASSERT_EQ(continued->prompt_logits().size(), whole->prompt_logits().size());
      EXPECT_EQ(std::memcmp(continued->prompt_logits().data(), whole->prompt_logits().data(),
                            whole->prompt_logits().size() * sizeof(float)),
                0)
          << c.text.size() << " characters split at " << k;
    }
  }
}

TEST_F(EngineTest, CancelFromAnotherThreadStopsGeneration) {
  auto e = engine();
  std::atomic<bool> started{false};
  TurnStats stats;
  std::thread worker([&] {
    stats = e->send_raw("w260", greedy(-1), [&](std::string_view) {
      started = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a slow consumer
      return true;
    });
  });
  while (!started) std::this_thread::yield();
  e->cancel();
  worker.join();
  EXPECT_EQ(stats.stop_reason, StopReason::cancelled);
  EXPECT_LT(stats.generated_tokens, 500u);

  // Deterministically: cancel() from a helper thread inside the first piece's callback.
  e->reset();
  size_t pieces = 0;
  const TurnStats s = e->send_raw("w260", greedy(-1), [&](std::string_view) {
    if (++pieces == 1) std::thread([&] { e->cancel(); }).join();
    return true;
  });
  EXPECT_EQ(s.stop_reason, StopReason::cancelled);
  EXPECT_EQ(pieces, 1u);
  // The callback returning false stops too.
  e->reset();
  const TurnStats t = e->send_raw("w260", greedy(-1), [](std::string_view) { return false; });
  EXPECT_EQ(t.stop_reason, StopReason::cancelled);
}

// A conversation that outgrows the context loses its oldest exchanges (the system message
// stays) instead of failing, and the turn is what a new engine gives for the kept conversation.
TEST_F(EngineTest, LongConversationsDropTheirOldestExchanges) {
  // The tiny vocabulary spells the template's markers out (~40 tokens for the system and one
  // user message), and a reply of 8 tokens of random text takes ~30 when rendered again.
  constexpr size_t kCtx = 160;
  auto e = engine(with_ctx(kCtx));
  const ChatMessage system{"system", "be brief"};
  TurnStats stats = e->send({system, {"user", "w260 w261 w262"}}, greedy(8));
  EXPECT_EQ(stats.dropped_messages, 0u);
  std::vector<ChatMessage> before;
  for (int turn = 0; turn < 20 && stats.dropped_messages == 0; ++turn) {
    before = e->history();
    stats = e->send({{"user", "w26" + std::to_string(turn % 10) + " w263"}}, greedy(8));
    if (stats.dropped_messages == 0) {
      EXPECT_EQ(e->history().size(), before.size() + 2);
      EXPECT_LE(stats.prompt_ids.size() + 8, kCtx);
    }
  }
  ASSERT_GT(stats.dropped_messages, 0u) << "the conversation never outgrew the context";
  const std::vector<ChatMessage>& kept = e->history();
  // Whole exchanges left: the system message first, then a user turn; the rest as it was.
  ASSERT_GE(kept.size(), 3u);
  EXPECT_EQ(kept[0].role, "system");
  EXPECT_EQ(kept[0].content, "be brief");
  EXPECT_EQ(kept[1].role, "user");
  EXPECT_EQ(kept.size(), before.size() - stats.dropped_messages + 2);
  EXPECT_EQ(stats.dropped_messages % 2, 0u);
  for (size_t i = 1; i + 2 < kept.size(); ++i) {
    EXPECT_EQ(kept[i].role, before[i + stats.dropped_messages].role);
    EXPECT_EQ(kept[i].content, before[i + stats.dropped_messages].content);
  }
  EXPECT_LE(stats.prompt_ids.size(), kCtx / 2);
  // A new engine sent the kept conversation at once renders and answers the same.
  const std::vector<ChatMessage> asked(kept.begin(), kept.end() - 1);
  auto fresh = engine(with_ctx(kCtx));
  const TurnStats again = fresh->send(asked, greedy(8));
  EXPECT_EQ(again.dropped_messages, 0u);
  EXPECT_EQ(again.prompt_ids, stats.prompt_ids);
  EXPECT_EQ(again.generated_ids, stats.generated_ids);
  ASSERT_EQ(fresh->prompt_logits().size(), e->prompt_logits().size());
  EXPECT_EQ(std::memcmp(fresh->prompt_logits().data(), e->prompt_logits().data(),
                        e->prompt_logits().size_bytes()),
            0);
  // A message longer than the whole context still fails, and the conversation stays.
  std::string long_message;
  for (int i = 0; i < 200; ++i) long_message += "w26" + std::to_string(i % 10) + " ";
  const size_t turns = e->history().size();
  EXPECT_THROW(e->send({{"user", long_message}}, greedy(1)), Error);
  EXPECT_EQ(e->history().size(), turns);
}

// llama.cpp's context shift (tools/main), restated on a bare Session: generate greedily; when
// the next token would take the context's last position, keep BOS + `keep` tokens, drop half of
// the cached tokens after them, evaluate what stays and the token from an empty cache (as a new
// session would) and go on.
std::vector<int32_t> shifted_generation(Session& session, const std::vector<int32_t>& prompt,
                                        size_t keep, size_t n_tokens, size_t* shifts) {
  const auto argmax = [](std::span<const float> logits) {
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  };
  session.truncate(0);
  std::vector<float> logits;
  const auto take = [&](std::span<const float> l) { logits.assign(l.begin(), l.end()); };
  take(session.eval(prompt));
  std::vector<int32_t> generated;
  *shifts = 0;
  while (true) {
    generated.push_back(argmax(logits));
    if (generated.size() == n_tokens) return generated;
    if (session.n_past() + 1 < session.n_ctx()) {
      take(session.eval(std::span<const int32_t>(&generated.back(), 1)));
      continue;
    }
    std::vector<int32_t> context = session.tokens();
    const size_t discard = (context.size() - keep) / 2;
    context.erase(context.begin() + static_cast<std::ptrdiff_t>(keep),
                  context.begin() + static_cast<std::ptrdiff_t>(keep + discard));
    context.push_back(generated.back());
    session.truncate(0);
    take(session.eval(context));
    ++*shifts;
  }
}

TEST_F(EngineTest, ContextShiftGoesOnAsANewSessionWould) {
  const size_t n_ctx = 32;
  for (const int keep : {0, 2, -1}) {
    SCOPED_TRACE("keep " + std::to_string(keep));
    auto e = engine(with_ctx(n_ctx));
    GenerateOptions g = greedy(70);
    g.context_shift = true;
    g.keep = keep;
    const TurnStats s = e->send_raw("w260 w261", g);
    ASSERT_EQ(s.prompt_ids.front(), *e->model().tokenizer().bos());
    const size_t kept = keep < 0 ? s.prompt_ids.size() : 1 + static_cast<size_t>(keep);
    EXPECT_EQ(s.stop_reason, StopReason::max_tokens);
    EXPECT_EQ(s.generated_tokens, 70u);

    auto reference = engine(with_ctx(n_ctx));
    size_t shifts = 0;
    const std::vector<int32_t> expected =
        shifted_generation(reference->session(), s.prompt_ids, kept, 70, &shifts);
    EXPECT_GE(shifts, 2u);
    EXPECT_EQ(s.context_shifts, shifts);
    EXPECT_EQ(s.generated_ids, expected);
    // The kept tokens are still the context's first.
    const std::vector<int32_t>& held = e->session().tokens();
    ASSERT_GE(held.size(), kept);
    EXPECT_TRUE(std::equal(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(kept),
                           s.prompt_ids.begin()));
  }
}

TEST_F(EngineTest, ContextShiftWithNothingToDropStops) {
  // The whole prompt kept and it fills the context: nothing can leave, so the reply stops.
  const size_t prompt_size = engine()->model().tokenizer().encode("w260 w261", true).size();
  auto e = engine(with_ctx(prompt_size));
  GenerateOptions g = greedy(20);
  g.context_shift = true;
  g.keep = -1;
  const TurnStats s = e->send_raw("w260 w261", g);
  EXPECT_EQ(s.stop_reason, StopReason::context_full);
  EXPECT_EQ(s.context_shifts, 0u);
}

// new_conversation keeps the cache: a conversation that starts as the last one did evaluates
// only what differs, and answers exactly as a new engine does.
TEST_F(EngineTest, NewConversationReusesTheSharedStart) {
  auto e = engine();
  const std::vector<ChatMessage> first = {{"system", "w260 w261 w262 w263"}, {"user", "w264"}};
  const std::vector<ChatMessage> second = {{"system", "w260 w261 w262 w263"}, {"user", "w265"}};
  e->send(first, greedy(6));
  e->new_conversation();
  EXPECT_TRUE(e->history().empty());
  const TurnStats s = e->send(second, greedy(6));
  auto fresh = engine();
  const TurnStats expected = fresh->send(second, greedy(6));
  EXPECT_EQ(s.prompt_ids, expected.prompt_ids);
  EXPECT_GT(s.cached_tokens, 0u);
  EXPECT_EQ(s.cached_tokens + s.prompt_tokens, expected.prompt_tokens);
  EXPECT_EQ(s.generated_ids, expected.generated_ids);
  ASSERT_EQ(e->prompt_logits().size(), fresh->prompt_logits().size());
  EXPECT_EQ(std::memcmp(e->prompt_logits().data(), fresh->prompt_logits().data(),
                        e->prompt_logits().size() * sizeof(float)),
            0);
  EXPECT_EQ(e->history().size(), 3u);  // the second conversation only
  // reset() empties the cache too.
  e->reset();
  EXPECT_EQ(e->send(second, greedy(1)).cached_tokens, 0u);
}

TEST_F(EngineTest, ContextLimits) {
  auto e = engine(with_ctx(16));
  const TurnStats s = e->send_raw("w260 w261", greedy(-1));
  EXPECT_EQ(s.stop_reason, StopReason::context_full);
  EXPECT_EQ(e->session().n_past(), 16u);
  e->reset();
  std::string long_prompt;
  for (int i = 0; i < 20; ++i) long_prompt += "w26" + std::to_string(i % 10) + " ";
  EXPECT_THROW(e->send_raw(long_prompt, greedy(1)), Error);
}

}  // namespace
}  // namespace oxi::llm::test
