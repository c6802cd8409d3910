// The C API: its header compiles as C (c_api_user.c, built by the C compiler) and as C++; a C
// program's session gives what the C++ Engine gives.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "lib/llm/embeddings.h"
#include "lib/llm/engine.h"
#include "lib/llm/json_schema_grammar.h"
#include "lib/llm/oxinfer_llm.h"
#include "lib/llm/session.h"
#include "lib/tokenizer/tokenizer.h"
#include "tests/common/test_data.h"
#include "tests/llm_engine/engine_fixture.h"

#if OXI_HAVE_C_API_USER
extern "C" int oxi_test_c_api_user(const char* model_path, char* out, size_t out_len);
extern "C" long oxi_test_c_api_long_chat(const char* model_path, int turns);
extern "C" long oxi_test_c_api_context_shift(const char* model_path);
extern "C" long oxi_test_c_api_new_conversation(const char* model_path);
extern "C" int oxi_test_c_api_sampling(const char* model_path, const int32_t* end_ids,
                                       size_t n_ends, char* out, size_t out_len);
#endif

namespace oxi::llm::test {
namespace {

llm::GenerateOptions greedy(int max_tokens) {
  llm::GenerateOptions g;
  g.sampling.temperature = 0;
  g.max_tokens = max_tokens;
  return g;
}

// A tiny model file, and engines on it with two threads.
class CApiModel : public ::testing::Test {
 protected:
  void SetUp() override { write_tiny_llama(model_); }
  std::unique_ptr<Engine> engine(size_t n_ctx = 0) const {
    EngineOptions options;
    options.threads = 2;
    options.n_ctx = n_ctx;
    return Engine::load(model_.string(), options);
  }

  oxi::test::TempDir dir_;
  std::filesystem::path model_ = dir_ / "tiny.gguf";
};

TEST(CApi, DefaultsMatchTheEngine) {
  const oxi_llm_params p = oxi_llm_default_params();
  const SamplerOptions s;
  EXPECT_EQ(p.temperature, s.temperature);
  EXPECT_EQ(p.top_k, s.top_k);
  EXPECT_EQ(p.top_p, s.top_p);
  EXPECT_EQ(p.min_p, s.min_p);
  EXPECT_EQ(p.repeat_penalty, s.repeat_penalty);
  EXPECT_EQ(p.threads, 0);
  EXPECT_EQ(p.stop, nullptr);
  EXPECT_EQ(p.cache_type, nullptr);  // the engine's default for the weights
  const GenerateOptions g;
  EXPECT_EQ(p.context_shift != 0, g.context_shift);
  EXPECT_EQ(p.keep, g.keep);
  EXPECT_EQ(p.frequency_penalty, s.frequency_penalty);
  EXPECT_EQ(p.presence_penalty, s.presence_penalty);
  EXPECT_EQ(p.typical_p, s.typical_p);
  EXPECT_EQ(p.n_bias, 0u);
  EXPECT_EQ(p.ignore_eos != 0, g.ignore_eos);
  EXPECT_EQ(p.top_n_sigma, s.top_n_sigma);
  EXPECT_EQ(p.xtc_probability, s.xtc_probability);
  EXPECT_EQ(p.xtc_threshold, s.xtc_threshold);
  EXPECT_EQ(p.mirostat, s.mirostat);
  EXPECT_EQ(p.mirostat_tau, s.mirostat_tau);
  EXPECT_EQ(p.mirostat_eta, s.mirostat_eta);
  const EngineOptions e;
  EXPECT_EQ(p.draft_model, nullptr);
  EXPECT_EQ(p.draft_max, e.draft_max);
  EXPECT_EQ(p.draft_min, e.draft_min);
  EXPECT_EQ(p.draft_p_min, e.draft_p_min);
}

TEST(CApi, ErrorsAreCodesAndMessages) {
  char err[256] = "x";
  EXPECT_EQ(oxi_llm_load("/nonexistent/model.gguf", nullptr, err, sizeof err), nullptr);
  EXPECT_NE(std::string(err).find("nonexistent"), std::string::npos) << err;
  EXPECT_EQ(oxi_llm_load(nullptr, nullptr, nullptr, 0), nullptr);
  oxi_llm_params bad = oxi_llm_default_params();
  bad.quant = "q3";
  oxi::test::TempDir dir;
  write_tiny_llama(dir / "tiny.gguf");
  EXPECT_EQ(oxi_llm_load((dir / "tiny.gguf").c_str(), &bad, err, sizeof err), nullptr);
  EXPECT_NE(std::string(err).find("q3"), std::string::npos) << err;
  oxi_llm_params bad_cache = oxi_llm_default_params();
  bad_cache.cache_type = "q8_0";
  EXPECT_EQ(oxi_llm_load((dir / "tiny.gguf").c_str(), &bad_cache, err, sizeof err), nullptr);
  EXPECT_NE(std::string(err).find("cache type 'q8_0'"), std::string::npos) << err;
  EXPECT_EQ(oxi_llm_send(nullptr, "user", "hi", nullptr, nullptr, nullptr),
            OXI_LLM_INVALID_ARGUMENT);
  oxi_llm_cancel(nullptr);
  oxi_llm_reset(nullptr);
  oxi_llm_new_conversation(nullptr);
  oxi_llm_free(nullptr);
}

// The grammar reaches the engine: the reply the Engine gives under the same grammar, and a
// grammar that does not parse is an error code with the parser's message.
// draft_model reaches the engine: the reply without a draft, and the draft's counts (the model
// itself as its draft: every proposal taken).
TEST_F(CApiModel, DraftModelGivesTheSameReply) {
  const TurnStats expected = engine()->send_raw("w260 w261", greedy(30));
  oxi_llm_params p = oxi_llm_default_params();
  p.threads = 2;
  p.temperature = 0;
  p.max_tokens = 30;
  p.draft_model = model_.c_str();
  p.draft_max = 4;
  p.draft_p_min = 0;
  char err[256];
  oxi_llm_engine* e = oxi_llm_load(model_.c_str(), &p, err, sizeof err);
  ASSERT_NE(e, nullptr) << err;
  std::string reply;
  oxi_llm_stats stats;
  ASSERT_EQ(oxi_llm_send(
                e, nullptr, "w260 w261",
                [](const char* piece, size_t len, void* user) {
                  static_cast<std::string*>(user)->append(piece, len);
                  return 1;
                },
                &reply, &stats),
            OXI_LLM_OK)
      << oxi_llm_last_error(e);
  EXPECT_EQ(reply, expected.text);
  EXPECT_GT(stats.draft_tokens, 0u);
  EXPECT_EQ(stats.draft_accepted, stats.draft_tokens);
  oxi_llm_free(e);
  p.draft_max = 0;
  EXPECT_EQ(oxi_llm_load(model_.c_str(), &p, err, sizeof err), nullptr);
  EXPECT_NE(std::string(err).find("draft_max"), std::string::npos) << err;
}

TEST_F(CApiModel, GrammarAsTheEngineHoldsIt) {
  const char* grammar = "root ::= (\"yes\" | \"no\") \" \" [0-9]{1,2}";
  GenerateOptions g = greedy(40);
  g.grammar = grammar;
  const TurnStats expected = engine()->send_raw("w260 w261", g);
  ASSERT_EQ(expected.stop_reason, StopReason::eos);

  oxi_llm_params p = oxi_llm_default_params();
  EXPECT_EQ(p.grammar, nullptr);
  p.threads = 2;
  p.temperature = 0;
  p.max_tokens = 40;
  p.grammar = grammar;
  char err[256];
  oxi_llm_engine* e = oxi_llm_load(model_.c_str(), &p, err, sizeof err);
  ASSERT_NE(e, nullptr) << err;
  std::string reply;
  const auto collect = [](const char* piece, size_t len, void* user) {
    static_cast<std::string*>(user)->append(piece, len);
    return 1;
  };
  oxi_llm_stats stats;
  ASSERT_EQ(oxi_llm_send(e, nullptr, "w260 w261", collect, &reply, &stats), OXI_LLM_OK)
      << oxi_llm_last_error(e);
  EXPECT_EQ(reply, expected.text);
  EXPECT_EQ(stats.stop_reason, OXI_LLM_STOP_EOS);

  // A JSON Schema: the grammar json_schema_to_gbnf makes of it.
  const char* schema = R"({"type": "array", "items": {"type": "integer"}, "maxItems": 3})";
  g.grammar = json_schema_to_gbnf(schema);
  const TurnStats json_reply = engine()->send_raw("w260 w261", g);
  p.grammar = nullptr;
  p.json_schema = schema;
  ASSERT_EQ(oxi_llm_set_params(e, &p), OXI_LLM_OK);
  oxi_llm_reset(e);
  reply.clear();
  ASSERT_EQ(oxi_llm_send(e, nullptr, "w260 w261", collect, &reply, &stats), OXI_LLM_OK)
      << oxi_llm_last_error(e);
  EXPECT_EQ(reply, json_reply.text);
  EXPECT_TRUE(reply.starts_with("[")) << reply;
  p.grammar = grammar;
  EXPECT_EQ(oxi_llm_set_params(e, &p), OXI_LLM_ERROR);
  EXPECT_NE(std::string(oxi_llm_last_error(e)).find("cannot both be set"), std::string::npos);
  p.json_schema = R"({"type": "number", "minimum": 1})";
  p.grammar = nullptr;
  EXPECT_EQ(oxi_llm_set_params(e, &p), OXI_LLM_ERROR);
  EXPECT_NE(std::string(oxi_llm_last_error(e)).find("minimum / maximum are supported on integers"),
            std::string::npos);
  p.json_schema = nullptr;

  // A grammar that does not parse: refused when set (the parameters before it kept).
  p.grammar = "root ::= [a-";
  EXPECT_EQ(oxi_llm_set_params(e, &p), OXI_LLM_ERROR);
  EXPECT_NE(std::string(oxi_llm_last_error(e)).find("unterminated character class"),
            std::string::npos)
      << oxi_llm_last_error(e);
  oxi_llm_reset(e);
  reply.clear();
  ASSERT_EQ(oxi_llm_send(e, nullptr, "w260 w261", collect, &reply, &stats), OXI_LLM_OK);
  EXPECT_EQ(reply, json_reply.text);
  oxi_llm_free(e);
}

// top_n_sigma, XTC and mirostat reach the sampler: the Engine's replies with the same options.
TEST_F(CApiModel, TopNSigmaXtcAndMirostatAsTheEngineSamples) {
  const auto reply = [&](const oxi_llm_params& p) {
    char err[256];
    oxi_llm_engine* e = oxi_llm_load(model_.c_str(), &p, err, sizeof err);
    EXPECT_NE(e, nullptr) << err;
    std::string text;
    const auto collect = [](const char* piece, size_t len, void* user) {
      static_cast<std::string*>(user)->append(piece, len);
      return 1;
    };
    EXPECT_EQ(oxi_llm_send(e, nullptr, "w260 w261", collect, &text, nullptr), OXI_LLM_OK);
    oxi_llm_free(e);
    return text;
  };
  oxi_llm_params p = oxi_llm_default_params();
  p.threads = 2;
  p.temperature = 0.9f;
  p.seed = 5;
  p.max_tokens = 20;
  GenerateOptions g;
  g.sampling.temperature = 0.9f;
  g.sampling.seed = 5;
  g.max_tokens = 20;
  const std::string plain = engine()->send_raw("w260 w261", g).text;

  p.top_n_sigma = g.sampling.top_n_sigma = 1.5f;
  p.xtc_probability = g.sampling.xtc_probability = 0.7f;
  p.xtc_threshold = g.sampling.xtc_threshold = 0.05f;
  const std::string filtered = engine()->send_raw("w260 w261", g).text;
  EXPECT_EQ(reply(p), filtered);
  EXPECT_NE(filtered, plain);

  p.mirostat = g.sampling.mirostat = 1;
  p.mirostat_tau = g.sampling.mirostat_tau = 3.0f;
  p.mirostat_eta = g.sampling.mirostat_eta = 0.3f;
  const std::string mirostat = engine()->send_raw("w260 w261", g).text;
  EXPECT_EQ(reply(p), mirostat);
  EXPECT_NE(mirostat, filtered);
}

#if OXI_HAVE_C_API_USER
TEST_F(CApiModel, CProgramGetsWhatTheEngineGives) {
  char out[8192] = {};
  ASSERT_EQ(oxi_test_c_api_user(model_.c_str(), out, sizeof out), 0) << out;

  auto engine = this->engine();
  const TurnStats first = engine->send({{"user", "w260"}}, greedy(6));
  const TurnStats second = engine->send_raw(" w261", greedy(6));
  // The third turn: cancelled from the callback after its first piece.
  engine->reset();
  GenerateOptions unlimited = greedy(-1);
  unlimited.stop = {"\x01\x02"};
  int pieces = 0;
  engine->send({{"user", "w262"}}, unlimited, [&](std::string_view) {
    if (++pieces == 1) engine->cancel();
    return true;
  });
  const std::string expected =
      first.text + "|" + second.text + "|" + std::to_string(OXI_LLM_STOP_MAX_TOKENS) + " " +
      std::to_string(OXI_LLM_STOP_MAX_TOKENS) + " " + std::to_string(OXI_LLM_STOP_CANCELLED) +
      "|6 6|" + std::to_string(pieces);
  EXPECT_EQ(std::string(out), expected);
}

// A C program's chat that outgrows its context loses messages as the engine's does.
TEST_F(CApiModel, LongChatDropsWhatTheEngineDrops) {
  auto e = engine(160);
  long dropped = 0;
  for (int turn = 0; turn < 8; ++turn)
    dropped += static_cast<long>(
        e->send({{"user", "w26" + std::to_string(turn) + " w263"}}, greedy(8)).dropped_messages);
  ASSERT_GT(dropped, 0) << "the conversation never outgrew the context";
  EXPECT_EQ(oxi_test_c_api_long_chat(model_.c_str(), 8), dropped);
}

// oxi_llm_new_conversation keeps the cache as Engine::new_conversation does.
TEST_F(CApiModel, NewConversationKeepsTheCache) {
  auto e = engine();
  e->send({{"user", "w260 w261 w262 w263"}}, greedy(4));
  e->new_conversation();
  const size_t cached = e->send({{"user", "w260 w261 w262 w264"}}, greedy(4)).cached_tokens;
  ASSERT_GT(cached, 0u);
  EXPECT_EQ(oxi_test_c_api_new_conversation(model_.c_str()), static_cast<long>(cached));
}

// oxi_llm_embed: the embedding embeddings.h gives the same tokens (pooling and norm passed
// on), the length asked with no buffer, errors as codes and messages; the conversation's cache
// is left as it was.
TEST_F(CApiModel, EmbedAsTheLibraryEmbeds) {
  auto e = engine();
  const tokenizer::Tokenizer& tok = e->model().tokenizer();
  const std::vector<int32_t> ids = tok.encode("w264 w265", tok.add_bos(), true);
  Session session(e->model_ptr(), e->backend(), ids.size());
  const std::vector<float> want = embed(session, ids, Pooling::last, 1);
  oxi_llm_params p = oxi_llm_default_params();
  p.threads = 2;
  char err[256];
  oxi_llm_engine* c = oxi_llm_load(model_.c_str(), &p, err, sizeof err);
  ASSERT_NE(c, nullptr) << err;
  size_t dim = 0;
  EXPECT_EQ(oxi_llm_embed(c, "w264 w265", "last", 1, nullptr, 0, &dim), OXI_LLM_INVALID_ARGUMENT);
  ASSERT_EQ(dim, want.size());
  std::vector<float> got(dim);
  ASSERT_EQ(oxi_llm_embed(c, "w264 w265", "last", 1, got.data(), got.size(), &dim), OXI_LLM_OK);
  EXPECT_EQ(got, want);
  ASSERT_EQ(oxi_llm_embed(c, "w264 w265", nullptr, 2, got.data(), got.size(), &dim), OXI_LLM_OK);
  EXPECT_EQ(got, embed(session, ids, Pooling::mean, 2));  // the model's: mean
  EXPECT_EQ(oxi_llm_embed(c, "x", "max", 2, got.data(), got.size(), &dim), OXI_LLM_ERROR);
  EXPECT_NE(std::string(oxi_llm_last_error(c)).find("unknown pooling 'max'"), std::string::npos);
  EXPECT_EQ(oxi_llm_embed(c, "x", "mean", -2, got.data(), got.size(), &dim),
            OXI_LLM_INVALID_ARGUMENT);
  oxi_llm_free(c);
}

// context_shift / keep reach the engine, and the shifts come back in the stats.
TEST_F(CApiModel, ContextShiftAsTheEngineShifts) {
  GenerateOptions g = greedy(60);
  g.context_shift = true;
  g.keep = 2;
  const TurnStats s = engine(32)->send_raw("w260 w261", g);
  ASSERT_GT(s.context_shifts, 0u);
  ASSERT_EQ(s.generated_tokens, 60u);
  EXPECT_EQ(oxi_test_c_api_context_shift(model_.c_str()),
            static_cast<long>(60 * 1000 + s.context_shifts));
}

// The penalties, typical sampling, logit biases and ignore_eos reach the engine: a C program's
// replies equal the Engine's with the same options.
TEST_F(CApiModel, SamplingOptionsAsTheEngineSamples) {
  GenerateOptions g;
  g.sampling.temperature = 0.9f;
  g.sampling.seed = 5;
  g.sampling.frequency_penalty = 0.5f;
  g.sampling.presence_penalty = 0.25f;
  g.sampling.typical_p = 0.9f;
  g.sampling.logit_bias = {{270, 2.0f}, {5, -std::numeric_limits<float>::infinity()}};
  g.max_tokens = 24;
  const TurnStats sampled = engine()->send_raw("w260 w261", g);

  const std::vector<int32_t> ends = engine()->model().eos_ids();
  ASSERT_FALSE(ends.empty());
  GenerateOptions ignoring = greedy(20);
  for (int32_t id : ends) ignoring.sampling.logit_bias.push_back({id, 100.0f});
  ignoring.ignore_eos = true;
  const TurnStats ignored = engine()->send_raw("w260 w261", ignoring);
  ASSERT_EQ(ignored.generated_tokens, 20u);

  char out[8192];
  ASSERT_EQ(oxi_test_c_api_sampling(model_.c_str(), ends.data(), ends.size(), out, sizeof out), 0);
  const int sampled_stop =
      sampled.stop_reason == StopReason::eos ? OXI_LLM_STOP_EOS : OXI_LLM_STOP_MAX_TOKENS;
  const auto hex = [](const std::string& text) {
    std::string h;
    char byte[3];
    for (unsigned char c : text) {
      std::snprintf(byte, sizeof byte, "%02x", c);
      h += byte;
    }
    return h;
  };
  EXPECT_EQ(std::string(out), hex(sampled.text) + "|" + std::to_string(sampled.generated_tokens) +
                                  "|" + std::to_string(sampled_stop) + "\n" + hex(ignored.text) +
                                  "|20|" + std::to_string(OXI_LLM_STOP_MAX_TOKENS));
  GenerateOptions plain = g;
  plain.sampling.frequency_penalty = 0;
  plain.sampling.presence_penalty = 0;
  plain.sampling.typical_p = 1;
  plain.sampling.logit_bias.clear();
  EXPECT_NE(engine()->send_raw("w260 w261", plain).text, sampled.text);  // the options matter
}
#endif

}  // namespace
}  // namespace oxi::llm::test
