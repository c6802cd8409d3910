// The oxinfer binary's LLM commands on a tiny model: generate (--raw, --show-tokens,
// --dump-logits, --save-kv / --load-kv, --choices, --print-prompt), chat, tokenize, bench llm.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/formats/quant.h"
#include "lib/formats/gguf.h"
#include "lib/llm/embeddings.h"
#include "lib/llm/engine.h"
#include "lib/llm/hellaswag.h"
#include "lib/llm/imatrix.h"
#include "lib/llm/json_schema_grammar.h"
#include "lib/llm/kl_divergence.h"
#include "lib/llm/log_prob_file.h"
#include "lib/llm/multiple_choice.h"
#include "lib/llm/perplexity.h"
#include "lib/llm/session.h"
#include "lib/llm/winogrande.h"
#include "tests/common/test_data.h"
#include "tests/llm/multiple_choice_file.h"
#include "tests/llm/tiny_model.h"
#include "tests/llm_engine/engine_fixture.h"

namespace oxi::llm::test {
namespace {

std::string line_starting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(prefix)) return line.substr(prefix.size());
  return "<none>";
}

std::string ids_text(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) s += ' ';
    s += std::to_string(ids[i]);
  }
  return s;
}

class CliLlm : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = (dir_ / "tiny.gguf").string();
    write_tiny_llama(model_);
  }
  // generate -m MODEL --threads 2 ARGS...
  CommandResult generate(std::vector<std::string> args) {
    std::vector<std::string> all = {"generate", "-m", model_, "--threads", "2"};
    all.insert(all.end(), args.begin(), args.end());
    return run_oxinfer(all);
  }
  std::unique_ptr<Engine> engine() {
    EngineOptions o;
    o.threads = 2;
    return Engine::load(model_, o);
  }
  static GenerateOptions greedy(int max_tokens) {
    GenerateOptions g;
    g.sampling.temperature = 0;
    g.max_tokens = max_tokens;
    return g;
  }

  oxi::test::TempDir dir_;
  std::string model_;
};

TEST_F(CliLlm, GenerateRawShowsTokensAndStreamsTheReply) {
  const CommandResult r =
      generate({"--raw", "-p", "w260 w261", "--temp", "0", "--max-tokens", "8", "--show-tokens"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const CommandResult tok = run_oxinfer({"tokenize", "-m", model_, "w260 w261"});
  ASSERT_EQ(tok.exit_code, 0) << tok.err;
  EXPECT_EQ(line_starting(r.err, "prompt tokens: ") + "\n", tok.out);

  const TurnStats expected = engine()->send_raw("w260 w261", greedy(8));
  EXPECT_EQ(line_starting(r.err, "generated tokens: "), ids_text(expected.generated_ids));
  EXPECT_EQ(r.out, expected.text);  // not a terminal: exactly the reply
}

// --context-shift / --keep reach the engine: the same tokens as the Engine's shifted turn, the
// shifts reported on stderr; without --context-shift the reply stops at the full context.
TEST_F(CliLlm, GenerateContextShift) {
  const std::vector<std::string> args = {"--raw", "-p", "w260 w261",    "--temp", "0",
                                         "--ctx", "32", "--max-tokens", "60",     "--show-tokens"};
  std::vector<std::string> shifted = args;
  shifted.insert(shifted.end(), {"--context-shift", "--keep", "2"});
  const CommandResult r = generate(shifted);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EngineOptions o;
  o.threads = 2;
  o.n_ctx = 32;
  GenerateOptions g = greedy(60);
  g.context_shift = true;
  g.keep = 2;
  const TurnStats expected = Engine::load(model_, o)->send_raw("w260 w261", g);
  ASSERT_GT(expected.context_shifts, 0u);
  EXPECT_EQ(line_starting(r.err, "generated tokens: "), ids_text(expected.generated_ids));
  EXPECT_NE(r.err.find("context shifts: " + std::to_string(expected.context_shifts)),
            std::string::npos)
      << r.err;

  const CommandResult plain = generate(args);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.err.find("stop: context full"), std::string::npos) << plain.err;
  EXPECT_EQ(plain.err.find("context shifts"), std::string::npos) << plain.err;

  const CommandResult keep_alone = generate({"-p", "w260", "--keep", "2"});
  EXPECT_EQ(keep_alone.exit_code, 2);
  EXPECT_NE(keep_alone.err.find("--keep needs --context-shift"), std::string::npos)
      << keep_alone.err;
}

// llama.cpp's short options: -c for --ctx, -s for --seed (as -m, -p, -f, -n, -t).
TEST_F(CliLlm, LlamaCppShortOptions) {
  const auto run = [&](std::vector<std::string> args) {
    std::vector<std::string> all = {"--raw", "-p",           "w260 w261", "--temp",
                                    "0.9",   "--max-tokens", "-1",        "--show-tokens"};
    all.insert(all.end(), args.begin(), args.end());
    const CommandResult r = generate(all);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return line_starting(r.err, "generated tokens: ");
  };
  const std::string long_form = run({"--ctx", "24", "--seed", "5"});
  EXPECT_EQ(run({"-c", "24", "-s", "5"}), long_form);
  EXPECT_NE(run({"-c", "24", "-s", "6"}), long_form);  // the seed reaches the sampler
  EXPECT_NE(run({"-c", "28", "-s", "5"}), long_form);  // the context bounds the reply
}

// llama.cpp's other sampling options reach the sampler: the CLI's tokens equal the engine's
// with the same options, and each option alone changes them.
TEST_F(CliLlm, FrequencyPresenceTypicalAndLogitBias) {
  const auto run = [&](std::vector<std::string> args) {
    std::vector<std::string> all = {"--raw",  "-p", "w260 w261",    "--temp", "0.9",
                                    "--seed", "5",  "--max-tokens", "24",     "--show-tokens"};
    all.insert(all.end(), args.begin(), args.end());
    const CommandResult r = generate(all);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return line_starting(r.err, "generated tokens: ");
  };
  const auto sampled = [] {  // what run() asks for
    GenerateOptions g;
    g.sampling.temperature = 0.9f;
    g.sampling.seed = 5;
    g.max_tokens = 24;
    return g;
  };
  GenerateOptions g = sampled();
  const std::string plain = run({});
  EXPECT_EQ(plain, ids_text(engine()->send_raw("w260 w261", g).generated_ids));

  g.sampling.frequency_penalty = 0.5f;
  g.sampling.presence_penalty = 0.25f;
  g.sampling.typical_p = 0.9f;
  g.sampling.logit_bias = {{270, 2.0f}, {5, -std::numeric_limits<float>::infinity()}};
  const std::string all =
      run({"--frequency-penalty", "0.5", "--presence-penalty", "0.25", "--typical", "0.9",
           "--logit-bias", "270+2", "--logit-bias", "5-inf"});
  EXPECT_EQ(all, ids_text(engine()->send_raw("w260 w261", g).generated_ids));
  g = sampled();
  g.sampling.top_n_sigma = 1.5f;
  g.sampling.xtc_probability = 0.5f;
  g.sampling.xtc_threshold = 0.05f;
  EXPECT_EQ(run({"--top-nsigma", "1.5", "--xtc-probability", "0.5", "--xtc-threshold", "0.05"}),
            ids_text(engine()->send_raw("w260 w261", g).generated_ids));
  g = sampled();
  g.sampling.mirostat = 2;
  g.sampling.mirostat_tau = 3.0f;
  g.sampling.mirostat_eta = 0.3f;
  EXPECT_EQ(run({"--mirostat", "2", "--mirostat-ent", "3", "--mirostat-lr", "0.3"}),
            ids_text(engine()->send_raw("w260 w261", g).generated_ids));
  for (const std::vector<std::string>& one :
       {std::vector<std::string>{"--top-nsigma", "1"},
        std::vector<std::string>{"--xtc-probability", "1", "--xtc-threshold", "0.02"},
        std::vector<std::string>{"--mirostat", "1"},
        std::vector<std::string>{"--mirostat", "2", "--mirostat-ent", "2"},
        std::vector<std::string>{"--frequency-penalty", "0.5"},
        std::vector<std::string>{"--presence-penalty", "1"},
        std::vector<std::string>{"--typical", "0.5"},
        std::vector<std::string>{"--logit-bias", "270+2"}})
    EXPECT_NE(run(one), plain) << one[0];

  const auto usage_error = [&](std::vector<std::string> args, const std::string& message) {
    args.insert(args.end(), {"-p", "w260"});
    const CommandResult r = generate(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  };
  for (const char* bad : {"5", "x+1", "+1", "5+", "5+x", "5+1x", "5++1", "5+nan"})
    usage_error({"--logit-bias", bad}, "expected TOKEN_ID(+|-)BIAS");
  usage_error({"--logit-bias", "5+inf"}, "-inf, not +inf");
  usage_error({"--typical", "0"}, "--typical must be above 0");
  usage_error({"--mirostat", "3"}, "--mirostat must be 0, 1 or 2");
  usage_error({"--xtc-probability", "1.5"}, "--xtc-probability must be in 0..1");
  usage_error({"--ignore-eos", "--choices", "a,b"}, "--ignore-eos cannot go with --choices");
  const CommandResult off_vocab = generate({"-p", "w260", "--logit-bias", "300+1"});
  EXPECT_EQ(off_vocab.exit_code, 1);
  EXPECT_NE(off_vocab.err.find("logit bias token 300 is not in the vocabulary (300 tokens)"),
            std::string::npos)
      << off_vocab.err;
}

// --ignore-eos: an end token biased to be the greedy pick ends the reply at once; with
// --ignore-eos no end token is ever picked and the reply runs to --max-tokens.
TEST_F(CliLlm, IgnoreEosRunsToMaxTokens) {
  const std::vector<int32_t> ends = engine()->model().eos_ids();
  ASSERT_FALSE(ends.empty());
  std::vector<std::string> args = {"--raw", "-p",           "w260 w261", "--temp",
                                   "0",     "--max-tokens", "20",        "--show-tokens"};
  for (int32_t id : ends) args.insert(args.end(), {"--logit-bias", std::to_string(id) + "+100"});
  const CommandResult ended = generate(args);
  ASSERT_EQ(ended.exit_code, 0) << ended.err;
  EXPECT_EQ(line_starting(ended.err, "generated tokens: "), std::to_string(ends.front()));
  EXPECT_NE(ended.err.find("stop: eos"), std::string::npos) << ended.err;

  args.push_back("--ignore-eos");
  const CommandResult r = generate(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream ids(line_starting(r.err, "generated tokens: "));
  size_t n = 0;
  for (int32_t id; ids >> id; ++n)
    EXPECT_EQ(std::find(ends.begin(), ends.end(), id), ends.end()) << id;
  EXPECT_EQ(n, 20u);
  EXPECT_NE(r.err.find("stop: max tokens"), std::string::npos) << r.err;
}

// --grammar and --grammar-file hold the reply to a GBNF grammar as the engine does; a grammar
// that does not parse fails before the model loads, naming where it came from.
TEST_F(CliLlm, GrammarFromTextOrFile) {
  const std::string grammar = "root ::= (\"yes\" | \"no\") \" \" [0-9]{1,2}";
  const auto file = dir_ / "answer.gbnf";
  oxi::test::write_file_bytes(file, std::vector<uint8_t>(grammar.begin(), grammar.end()));
  GenerateOptions g = greedy(40);
  g.grammar = grammar;
  const TurnStats expected = engine()->send_raw("w260 w261", g);
  ASSERT_EQ(expected.stop_reason, StopReason::eos);
  for (const std::vector<std::string>& source :
       {std::vector<std::string>{"--grammar", grammar},
        std::vector<std::string>{"--grammar-file", file.string()}}) {
    std::vector<std::string> args = {"--raw", "-p",           "w260 w261", "--temp",
                                     "0",     "--max-tokens", "40",        "--show-tokens"};
    args.insert(args.end(), source.begin(), source.end());
    const CommandResult r = generate(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, expected.text);
    EXPECT_EQ(line_starting(r.err, "generated tokens: "), ids_text(expected.generated_ids));
  }

  const auto bad = dir_ / "bad.gbnf";
  const std::string broken = "root ::= \"a\"\nitem ::= (\"b\"";
  oxi::test::write_file_bytes(bad, std::vector<uint8_t>(broken.begin(), broken.end()));
  const CommandResult parse_error = run_oxinfer({"generate", "-m", (dir_ / "missing.gguf").string(),
                                                 "-p", "x", "--grammar-file", bad.string()});
  EXPECT_EQ(parse_error.exit_code, 1);
  EXPECT_NE(parse_error.err.find(bad.string() + ": grammar: line 2, column 14: expected )"),
            std::string::npos)
      << parse_error.err;
  const CommandResult missing =
      generate({"-p", "x", "--grammar-file", (dir_ / "none.gbnf").string()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("none.gbnf: cannot read"), std::string::npos) << missing.err;
  const CommandResult both = generate({"-p", "x", "--grammar", grammar, "--choices", "a,b"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("--grammar and --json-schema cannot go with --choices"),
            std::string::npos)
      << both.err;
  const CommandResult two = generate({"-p", "x", "--grammar", grammar, "-j", "{}"});
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.err.find("--grammar and --json-schema cannot go together"), std::string::npos)
      << two.err;
}

// --json-schema (-j) and --json-schema-file: the grammar json_schema_to_gbnf makes of the
// schema, as the engine holds it; a schema it cannot convert fails before the model loads.
TEST_F(CliLlm, JsonSchemaFromTextOrFile) {
  const std::string schema =
      R"({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})";
  const auto file = dir_ / "schema.json";
  oxi::test::write_file_bytes(file, std::vector<uint8_t>(schema.begin(), schema.end()));
  GenerateOptions g = greedy(40);
  g.grammar = json_schema_to_gbnf(schema);
  const TurnStats expected = engine()->send_raw("w260 w261", g);
  ASSERT_EQ(expected.stop_reason, StopReason::eos);
  EXPECT_TRUE(expected.text.starts_with("{")) << expected.text;
  for (const std::vector<std::string>& source :
       {std::vector<std::string>{"-j", schema}, std::vector<std::string>{"--json-schema", schema},
        std::vector<std::string>{"--json-schema-file", file.string()}}) {
    std::vector<std::string> args = {"--raw", "-p",           "w260 w261", "--temp",
                                     "0",     "--max-tokens", "40"};
    args.insert(args.end(), source.begin(), source.end());
    const CommandResult r = generate(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, expected.text);
  }
  const auto bad = dir_ / "bad.json";
  const std::string pattern = R"({"type": "string", "pattern": "a+"})";
  oxi::test::write_file_bytes(bad, std::vector<uint8_t>(pattern.begin(), pattern.end()));
  const CommandResult r = run_oxinfer({"generate", "-m", (dir_ / "missing.gguf").string(), "-p",
                                       "x", "--json-schema-file", bad.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(bad.string() + ": json schema: root: pattern: 'a+' must be anchored"),
            std::string::npos)
      << r.err;
}

TEST_F(CliLlm, DumpLogitsWritesTheLastPromptTokensLogits) {
  const auto file = dir_ / "logits.bin";
  const CommandResult r =
      generate({"--raw", "-p", "w270", "--max-tokens", "0", "--dump-logits", file.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<uint8_t> bytes = oxi::test::read_file_bytes(file);
  auto e = engine();
  e->send_raw("w270", greedy(0));
  ASSERT_EQ(bytes.size(), 300 * sizeof(float));
  EXPECT_EQ(std::memcmp(bytes.data(), e->prompt_logits().data(), bytes.size()), 0);

  // Chat mode: the logits after the templated prompt.
  const CommandResult c = generate(
      {"-p", "w270", "--max-tokens", "0", "--dump-logits", file.string(), "--print-prompt"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.out, "<|user|>w270\n");
  auto chat = engine();
  chat->send({{"user", "w270"}}, greedy(0));
  EXPECT_EQ(std::memcmp(oxi::test::read_file_bytes(file).data(), chat->prompt_logits().data(),
                        bytes.size()),
            0);
}

// --save-kv in one process, --load-kv + more text in another: the logits are bytewise those
// of evaluating the whole prompt at once.
TEST_F(CliLlm, LoadKvContinuesBitIdentically) {
  const std::string state = (dir_ / "state.kv").string();
  const std::string split = (dir_ / "split.bin").string(), whole = (dir_ / "whole.bin").string();
  // The model's default cache (f32: float weights) and an f16 one.
  for (const std::vector<std::string>& cache :
       {std::vector<std::string>{}, std::vector<std::string>{"--cache-type", "f16"}}) {
    SCOPED_TRACE(cache.empty() ? "default cache" : "f16 cache");
    const auto with_cache = [&](std::vector<std::string> args) {
      args.insert(args.end(), cache.begin(), cache.end());
      return generate(args);
    };
    ASSERT_EQ(with_cache({"--raw", "-p", "w260 w261 w262", "--max-tokens", "0", "--save-kv", state})
                  .exit_code,
              0);
    const CommandResult more =
        with_cache({"--raw", "--load-kv", state, "-p", " w263 w264", "--max-tokens", "0",
                    "--dump-logits", split, "--show-tokens"});
    ASSERT_EQ(more.exit_code, 0) << more.err;
    const CommandResult all = with_cache({"--raw", "-p", "w260 w261 w262 w263 w264", "--max-tokens",
                                          "0", "--dump-logits", whole, "--show-tokens"});
    ASSERT_EQ(all.exit_code, 0) << all.err;
    EXPECT_EQ(line_starting(more.err, "prompt tokens: "),
              line_starting(all.err, "prompt tokens: "));
    const auto a = oxi::test::read_file_bytes(split), b = oxi::test::read_file_bytes(whole);
    ASSERT_EQ(a.size(), 300 * sizeof(float));
    EXPECT_EQ(a, b);
  }
  // The f16 state does not load into the default (f32) cache: an error saying why.
  const CommandResult mismatch =
      generate({"--raw", "--load-kv", state, "-p", " w263", "--max-tokens", "0"});
  EXPECT_EQ(mismatch.exit_code, 1);
  EXPECT_NE(mismatch.err.find("f16 elements; this session's cache is f32"), std::string::npos)
      << mismatch.err;

  // After a generated reply: continuing in another process equals continuing in this one.
  ASSERT_EQ(
      generate({"--raw", "-p", "w260", "--temp", "0", "--max-tokens", "5", "--save-kv", state})
          .exit_code,
      0);
  const CommandResult next = generate({"--raw", "--load-kv", state, "-p", " w280", "--temp", "0",
                                       "--max-tokens", "5", "--dump-logits", split});
  ASSERT_EQ(next.exit_code, 0) << next.err;
  auto e = engine();
  e->send_raw("w260", greedy(5));
  const TurnStats s = e->send_raw(" w280", greedy(5));
  EXPECT_EQ(next.out, s.text);
  const auto logits = oxi::test::read_file_bytes(split);
  ASSERT_EQ(logits.size(), 300 * sizeof(float));
  EXPECT_EQ(std::memcmp(logits.data(), e->prompt_logits().data(), logits.size()), 0);

  // Chat mode keeps the conversation in the state file.
  ASSERT_EQ(
      generate({"-p", "w260", "--temp", "0", "--max-tokens", "3", "--save-kv", state}).exit_code,
      0);
  const CommandResult turn2 = generate(
      {"--load-kv", state, "-p", "w261", "--temp", "0", "--max-tokens", "3", "--print-prompt"});
  ASSERT_EQ(turn2.exit_code, 0) << turn2.err;
  auto chat = engine();
  const TurnStats t1 = chat->send({{"user", "w260"}}, greedy(3));
  EXPECT_TRUE(turn2.out.starts_with("<|user|>w260<|assistant|>" + t1.text + "<|user|>w261\n"))
      << turn2.out;
}

TEST_F(CliLlm, ChoicesPrintExactlyOneChoice) {
  const std::vector<std::string> choices = {"w260", "w261 w262", "yes"};
  for (const char* seed : {"1", "2", "3", "4", "5"}) {
    const CommandResult r =
        generate({"-p", "pick", "--choices", "w260,w261 w262,yes", "--temp", "2", "--seed", seed});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(std::find(choices.begin(), choices.end(), r.out), choices.end()) << r.out;
  }
}

TEST_F(CliLlm, SameSeedSameText) {
  const std::vector<std::string> args = {"--raw",  "-p", "w260",         "--temp", "1",
                                         "--seed", "9",  "--max-tokens", "10"};
  const CommandResult a = generate(args), b = generate(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST_F(CliLlm, ChatOneShotAndInteractive) {
  const CommandResult one = run_oxinfer({"chat", "-m", model_, "--prompt", "w260", "--temp", "0",
                                         "--max-tokens", "4", "--system", "be brief"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  auto e = engine();
  const TurnStats t = e->send({{"system", "be brief"}, {"user", "w260"}}, greedy(4));
  EXPECT_EQ(one.out, t.text + "\n");

  const CommandResult chat = run_oxinfer(
      {"chat", "-m", model_, "--temp", "0", "--max-tokens", "4", "--system", "be brief"},
      "w260\nw261\n/reset\nw260\n/exit\nnever read\n");
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  const TurnStats t2 = e->send({{"user", "w261"}}, greedy(4));
  EXPECT_EQ(chat.out, t.text + "\n" + t2.text + "\n" + t.text + "\n");
}

// An interactive chat longer than --ctx goes on: the oldest exchanges leave the conversation
// (a note on stderr), the replies are the engine's for the same turns.
TEST_F(CliLlm, ChatOutgrowsTheContext) {
  EngineOptions o;
  o.threads = 2;
  o.n_ctx = 160;
  auto e = Engine::load(model_, o);
  std::string input, expected;
  size_t dropped = 0;
  for (int turn = 0; turn < 8; ++turn) {
    const std::string line = "w26" + std::to_string(turn) + " w263";
    std::vector<ChatMessage> messages;
    if (turn == 0) messages.push_back({"system", "be brief"});
    messages.push_back({"user", line});
    const TurnStats t = e->send(messages, greedy(8));
    dropped += t.dropped_messages;
    input += line + "\n";
    expected += t.text + "\n";
  }
  ASSERT_GT(dropped, 0u) << "the conversation never outgrew the context";
  const CommandResult chat =
      run_oxinfer({"chat", "-m", model_, "--threads", "2", "--temp", "0", "--max-tokens", "8",
                   "--ctx", "160", "--system", "be brief"},
                  input);
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  EXPECT_EQ(chat.out, expected);
  EXPECT_NE(chat.err.find("oldest messages of the conversation left it"), std::string::npos)
      << chat.err;
}

// A line ending in a backslash continues the message on the next line (the line break kept):
// the reply is the engine's to that one message.
TEST_F(CliLlm, ChatContinuesLinesEndingInABackslash) {
  const CommandResult chat =
      run_oxinfer({"chat", "-m", model_, "--threads", "2", "--temp", "0", "--max-tokens", "6"},
                  "w260 w261\\\nw262\\\nw263\nw264\n");
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  auto e = engine();
  const TurnStats first = e->send({{"user", "w260 w261\nw262\nw263"}}, greedy(6));
  const TurnStats second = e->send({{"user", "w264"}}, greedy(6));
  EXPECT_EQ(chat.out, first.text + "\n" + second.text + "\n");
}

// chat's --print-prompt / --show-tokens: each turn's rendered conversation before its reply,
// and the context's and reply's ids, the same as the Engine's and as generate prints them.
TEST_F(CliLlm, ChatPrintsPromptAndTokens) {
  const std::vector<std::string> args = {
      "-m",       model_,           "--temp",       "0", "--max-tokens", "4", "--system",
      "be brief", "--print-prompt", "--show-tokens"};
  std::vector<std::string> chat_args = {"chat", "--prompt", "w260"};
  chat_args.insert(chat_args.end(), args.begin(), args.end());
  const CommandResult chat = run_oxinfer(chat_args);
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  auto e = engine();
  const std::vector<oxi::ChatMessage> messages = {{"system", "be brief"}, {"user", "w260"}};
  const std::string rendered = e->render(messages);
  const TurnStats t = e->send(messages, greedy(4));
  EXPECT_EQ(chat.out, rendered + "\n" + t.text + "\n");
  EXPECT_EQ(line_starting(chat.err, "prompt tokens: "), ids_text(t.prompt_ids));
  EXPECT_EQ(line_starting(chat.err, "generated tokens: "), ids_text(t.generated_ids));
  std::vector<std::string> gen_args = {"generate", "-p", "w260"};
  gen_args.insert(gen_args.end(), args.begin(), args.end());
  const CommandResult gen = run_oxinfer(gen_args);
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  EXPECT_EQ(line_starting(gen.err, "prompt tokens: "), line_starting(chat.err, "prompt tokens: "));
  EXPECT_EQ(line_starting(gen.err, "generated tokens: "),
            line_starting(chat.err, "generated tokens: "));
}

// -f FILE feeds the file's bytes as -p would (newlines and all), -f - reads stdin; a missing
// file is an error naming it, -p with -f a usage error.
TEST_F(CliLlm, PromptFromFileOrStdin) {
  const std::string text = "w260 w261\nw262\n";
  const auto file = dir_ / "prompt.txt";
  oxi::test::write_file_bytes(file, std::vector<uint8_t>(text.begin(), text.end()));
  const std::vector<std::string> rest = {"--raw",        "--temp", "0",
                                         "--max-tokens", "6",      "--show-tokens"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), rest.begin(), rest.end());
    return args;
  };
  const CommandResult p = generate(with({"-p", text}));
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const CommandResult f = generate(with({"-f", file.string()}));
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_EQ(f.out, p.out);
  EXPECT_EQ(line_starting(f.err, "prompt tokens: "), line_starting(p.err, "prompt tokens: "));
  // the newlines reached the tokenizer: the prompt differs from the text without them
  const CommandResult flat = generate(with({"-p", "w260 w261 w262"}));
  ASSERT_EQ(flat.exit_code, 0) << flat.err;
  EXPECT_NE(line_starting(flat.err, "prompt tokens: "), line_starting(p.err, "prompt tokens: "));

  std::vector<std::string> from_stdin = {"generate", "-m", model_, "--threads", "2", "-f", "-"};
  from_stdin = with(from_stdin);
  const CommandResult s = run_oxinfer(from_stdin, text);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(s.out, p.out);

  const std::string missing = (dir_ / "no-such-prompt.txt").string();
  const CommandResult m = generate({"-f", missing});
  EXPECT_EQ(m.exit_code, 1);
  EXPECT_NE(m.err.find(missing), std::string::npos) << m.err;
  EXPECT_EQ(generate({"-p", "x", "-f", file.string()}).exit_code, 2);
}

// `oxinfer embed`: each text's embedding as lib/llm/embeddings.h gives it for the same tokens
// (the model's pooling, euclidean), in JSON and as lines of numbers; --pooling and
// --embd-normalize; the pooling a file names in {arch}.pooling_type; a reranker refused.
TEST_F(CliLlm, EmbedPrintsEachTextsEmbedding) {
  const auto e = engine();
  const tokenizer::Tokenizer& tok = e->model().tokenizer();
  const std::vector<std::string> texts = {"w264 w265 w270", "w280"};
  const auto want = [&](const std::string& text, Pooling pooling, int norm) {
    const std::vector<int32_t> ids = tok.encode(text, tok.add_bos(), true);
    Session session(e->model_ptr(), e->backend(), ids.size());
    return embed(session, ids, pooling, norm);
  };
  const auto close_to = [](const std::vector<double>& got, const std::vector<float>& expected,
                           double tol) {
    if (got.size() != expected.size()) return false;
    for (size_t i = 0; i < got.size(); ++i)
      if (std::abs(got[i] - expected[i]) > tol) return false;
    return true;
  };
  const CommandResult json =
      run_oxinfer({"embed", "-m", model_, "--threads", "2", "--json", texts[0], texts[1]});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j["data"].size(), 2u);
  size_t tokens = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(j["data"][i]["index"], i);
    EXPECT_TRUE(close_to(j["data"][i]["embedding"].get<std::vector<double>>(),
                         want(texts[i], Pooling::mean, 2), 1e-6))
        << texts[i];
    tokens += tok.encode(texts[i], tok.add_bos(), true).size();
  }
  EXPECT_EQ(j["usage"]["prompt_tokens"], tokens);
  // Lines of numbers (6 decimals), other pooling and norms.
  const CommandResult lines = run_oxinfer({"embed", "-m", model_, "--threads", "2", "--pooling",
                                           "last", "--embd-normalize", "-1", texts[0]});
  ASSERT_EQ(lines.exit_code, 0) << lines.err;
  std::istringstream numbers(lines.out);
  std::vector<double> values;
  for (double v; numbers >> v;) values.push_back(v);
  EXPECT_TRUE(close_to(values, want(texts[0], Pooling::last, -1), 5e-6));
  EXPECT_NE(run_oxinfer({"embed", "-m", model_, "--pooling", "max", "x"}).exit_code, 0);
  EXPECT_NE(run_oxinfer({"embed", "-m", model_}).exit_code, 0);

  // A file that names its pooling: last (3) is used; rank (4) is refused.
  const std::string last = (dir_ / "last.gguf").string(), rank = (dir_ / "rank.gguf").string();
  rewrite_gguf(model_, last, {}, [](gguf::Writer& w) { w.set_u32("llama.pooling_type", 3); });
  rewrite_gguf(model_, rank, {}, [](gguf::Writer& w) { w.set_u32("llama.pooling_type", 4); });
  const CommandResult by_file =
      run_oxinfer({"embed", "-m", last, "--threads", "2", "--json", texts[0]});
  ASSERT_EQ(by_file.exit_code, 0) << by_file.err;
  EXPECT_TRUE(close_to(
      nlohmann::json::parse(by_file.out)["data"][0]["embedding"].get<std::vector<double>>(),
      want(texts[0], Pooling::last, 2), 1e-6));
  const CommandResult reranker = run_oxinfer({"embed", "-m", rank, texts[0]});
  EXPECT_NE(reranker.exit_code, 0);
  EXPECT_NE(reranker.err.find("reranker"), std::string::npos) << reranker.err;
}

TEST_F(CliLlm, UsageErrors) {
  EXPECT_EQ(generate({"--raw"}).exit_code, 2);                   // no -p
  EXPECT_EQ(run_oxinfer({"generate", "-p", "x"}).exit_code, 2);  // no -m
  EXPECT_EQ(generate({"-p", "x", "--raw", "--system", "s"}).exit_code, 2);
  EXPECT_EQ(generate({"-p", "x", "--quant", "q3"}).exit_code, 2);
  EXPECT_EQ(generate({"-p", "x", "--cache-type", "q8_0"}).exit_code, 2);
  EXPECT_EQ(generate({"-p", "x", "--load-kv", (dir_ / "missing").string()}).exit_code, 1);
  EXPECT_EQ(run_oxinfer({"generate", "--help"}).exit_code, 0);
  EXPECT_EQ(run_oxinfer({"chat", "--help"}).exit_code, 0);
  // Numbers: NaN and infinities are refused (a NaN temperature sampled from NaN logits); a
  // context too large for memory or for size_t is an error naming it, not a bad_alloc.
  EXPECT_EQ(generate({"-p", "x", "--temp", "nan"}).exit_code, 2);
  EXPECT_EQ(generate({"-p", "x", "--top-p", "inf"}).exit_code, 2);
  for (const char* ctx : {"999999999999", "99999999999999999"}) {
    const CommandResult r = generate({"-p", "x", "--ctx", ctx});
    EXPECT_EQ(r.exit_code, 1) << ctx;
    EXPECT_NE(r.err.find("context of " + std::string(ctx) + " positions"), std::string::npos)
        << r.err;
  }
  // top-k beyond int is all tokens, as any top-k beyond the vocabulary (it wrapped to 1).
  const CommandResult big_k =
      generate({"-p", "x", "--raw", "--top-k", "4294967297", "--max-tokens", "1", "--seed", "1"});
  EXPECT_EQ(big_k.exit_code, 0) << big_k.err;
}

TEST_F(CliLlm, BenchLlmJson) {
  const CommandResult r = run_oxinfer({"bench", "llm", "-m", model_, "--threads", "2", "--json",
                                       "--pp", "32", "--tg", "8", "--reps", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_GT(j.at("pp32_tok_s").get<double>(), 0);
  EXPECT_GT(j.at("tg8_tok_s").get<double>(), 0);
  EXPECT_GT(j.at("decode_bandwidth_pct").get<double>(), 0);
  EXPECT_EQ(j.at("threads").get<int>(), 2);
  // Float weights: an f32 cache of 2 layers x (32 + 8 + 1) positions x kv_dim 32, K and V.
  EXPECT_EQ(j.at("kv_cache_type").get<std::string>(), "f32");
  EXPECT_EQ(j.at("kv_cache_bytes").get<double>(), 2 * 2 * 33 * 32 * 4.0);
  // The limit decode is compared with (read passes between its tokens) and the best pass.
  EXPECT_GT(j.at("read_bandwidth_gbs").get<double>(), 0);
  EXPECT_GT(j.at("read_bandwidth_peak_gbs").get<double>(), 0);
  // A model this small fits the caches: the passes read a buffer of their own, not the weights,
  // and there is no second buffer to compare with.
  EXPECT_EQ(j.at("read_bandwidth_memory").get<std::string>(), "buffer");
  EXPECT_EQ(j.at("buffer_read_bandwidth_gbs").get<double>(), 0);
  EXPECT_NEAR(
      j.at("decode_pct_of_peak_read").get<double>(),
      100 * j.at("decode_gbs").get<double>() / j.at("read_bandwidth_peak_gbs").get<double>(),
      1e-6 * j.at("decode_pct_of_peak_read").get<double>());
  // The weights read alone after every token, in the same seconds (one rep: the run's figures).
  const double weights_gbs = j.at("weights_read_gbs").get<double>();
  EXPECT_GT(weights_gbs, 0);
  EXPECT_NEAR(j.at("weights_read_pct_of_read").get<double>(),
              100 * weights_gbs / j.at("read_bandwidth_gbs").get<double>(),
              1e-6 * j.at("weights_read_pct_of_read").get<double>());
  EXPECT_NEAR(j.at("decode_pct_of_weights_read").get<double>(),
              100 * j.at("decode_gbs").get<double>() / weights_gbs,
              1e-6 * j.at("decode_pct_of_weights_read").get<double>());
  // The tiny model's matrices: 2 layers x (q 64x64, k/v 32x64, o 64x64, 3 x 128x64) + output
  // 300x64 + one embedding row, all f32.
  const double per_layer = (64 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 128 * 64) * 4.0;
  EXPECT_DOUBLE_EQ(j.at("weight_bytes_per_token").get<double>(),
                   2 * per_layer + 300 * 64 * 4.0 + 64 * 4.0);
  // Where the extra timed tokens went: shares of their time that add up to all of it, and the
  // products' weight bytes over the products' own seconds (faster than over the whole step).
  const double products = j.at("decode_products_pct").get<double>();
  const double attention = j.at("decode_attention_pct").get<double>();
  const double other = j.at("decode_other_pct").get<double>();
  EXPECT_GT(products, 0);
  EXPECT_GT(attention, 0);
  EXPECT_GE(other, 0);
  EXPECT_NEAR(products + attention + other, 100.0, 1e-9);
  const double step_ms = j.at("decode_split_ms_per_token").get<double>();
  EXPECT_GT(step_ms, 0);
  EXPECT_NEAR(
      j.at("decode_products_gbs").get<double>(),
      j.at("weight_bytes_per_token").get<double>() / (step_ms * 1e-3 * products / 100) / 1e9,
      1e-6 * j.at("decode_products_gbs").get<double>());
  // The products by kind: per layer q/k/v (one shared-input call), o, gate/up (one call), down,
  // then the output; their shares add up to the products' share.
  std::map<std::string, double> calls;
  double kinds_pct = 0;
  for (const nlohmann::json& k : j.at("decode_products_by_kind")) {
    calls[k.at("kind").get<std::string>()] = k.at("calls_per_token").get<double>();
    kinds_pct += k.at("pct").get<double>();
    EXPECT_GT(k.at("gbs").get<double>(), 0);
    EXPECT_GT(k.at("ms_per_token").get<double>(), 0);
  }
  const std::map<std::string, double> want = {
      {"f32 [64 x 64] + f32 [32 x 64] + f32 [32 x 64]", 2.0},
      {"f32 [64 x 64]", 2.0},
      {"f32 [128 x 64] + f32 [128 x 64]", 2.0},
      {"f32 [64 x 128]", 2.0},
      {"f32 [300 x 64]", 1.0}};
  EXPECT_EQ(calls, want);
  EXPECT_NEAR(kinds_pct, products, 1e-6 * products);
}

TEST_F(CliLlm, BenchLlmF16Cache) {
  const CommandResult r =
      run_oxinfer({"bench", "llm", "-m", model_, "--threads", "2", "--json", "--pp", "16", "--tg",
                   "4", "--reps", "1", "--cache-type", "f16"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("kv_cache_type").get<std::string>(), "f16");
  EXPECT_EQ(j.at("kv_cache_bytes").get<double>(), 2 * 2 * 17 * 32 * 2.0);
  // float weights: no one-token pass has a stream mode to choose
  EXPECT_TRUE(j.at("matvec_stream_by_layout").empty());
  EXPECT_EQ(j.at("matvec_stream_choice").get<std::string>(), "fixed");
}

// --depth N: pp and tg after N tokens of context (llama-bench's -d); the cache holds them too.
TEST_F(CliLlm, BenchLlmDepth) {
  const CommandResult r = run_oxinfer({"bench", "llm", "-m", model_, "--threads", "2", "--json",
                                       "--pp", "8", "--tg", "4", "--reps", "1", "--depth", "40"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("depth").get<int>(), 40);
  EXPECT_GT(j.at("pp8_tok_s").get<double>(), 0);
  EXPECT_GT(j.at("tg4_tok_s").get<double>(), 0);
  // an f32 cache of 2 layers x (40 + 8 + 1) positions x kv_dim 32, K and V
  EXPECT_EQ(j.at("kv_cache_bytes").get<double>(), 2 * 2 * 49 * 32 * 4.0);
  EXPECT_GT(j.at("decode_attention_pct").get<double>(), 0);
  // the decode split runs after the same context
  EXPECT_EQ(j.at("decode_split_context").get<int>(), 40);

  // llama-bench's short names: -p, -n, -r, -d.
  const CommandResult text = run_oxinfer(
      {"bench", "llm", "-m", model_, "-t", "2", "-p", "8", "-n", "4", "-r", "1", "-d", "16"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("pp8 @ d16"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("tg4 @ d16"), std::string::npos) << text.out;

  // -o md: llama-bench's table, a row per test (the tiny model's file type is guessed: f32).
  const CommandResult md = run_oxinfer(
      {"bench", "llm", "-m", model_, "-t", "2", "-p", "8", "-n", "4", "-r", "1", "-o", "md"});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_EQ(md.out.rfind("| model                          |       size |     params | backend    |"
                         " threads |            test |                  t/s |\n",
                         0),
            0u)
      << md.out;
  EXPECT_NE(md.out.find("| llama 0.0B all F32 (guessed)"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("| CPU        |       2 |             pp8 |"), std::string::npos);
  EXPECT_NE(md.out.find("|             tg4 |"), std::string::npos);
  EXPECT_EQ(run_oxinfer({"bench", "llm", "-m", model_, "-o", "csv"}).exit_code, 2);

  const CommandResult bad = run_oxinfer({"bench", "llm", "-m", model_, "--depth", "-1"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--depth"), std::string::npos) << bad.err;
}

// A quantized model: the stream mode of its repacked layouts (where the kernels have the
// choice), the same in matvec_stream_lines / _choice (the layout with most of decode's bytes).
TEST_F(CliLlm, BenchLlmStreamModeByLayout) {
  const auto file = dir_ / "tiny_q4k.gguf";
  write_gguf(
      make_tiny_model(tiny_spec("llama", true), kernels::DType::Q4_K, kernels::DType::F32, 7),
      file);
  const CommandResult r = run_oxinfer({"bench", "llm", "-m", file.string(), "--threads", "2",
                                       "--json", "--pp", "0", "--tg", "16", "--reps", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& by_layout = j.at("matvec_stream_by_layout");
  const kernels::DType held = kernels::format_kernels().preferred_layout(kernels::DType::Q4_K);
  if (!kernels::format_kernels().stream_layout(held)) {
    EXPECT_TRUE(by_layout.empty()) << by_layout.dump();
    EXPECT_EQ(j.at("matvec_stream_choice").get<std::string>(), "fixed");
    return;
  }
  // q4_K_r8, and q4_K_r8s for the rows that end in a short group (ffn_down: 9 super-blocks),
  // which stream in q4_K_r8's mode
  ASSERT_LE(by_layout.size(), 2u) << by_layout.dump();
  const nlohmann::json& mode = by_layout.at(std::string(kernels::name(held)));
  for (const auto& [name, other] : by_layout.items()) {
    EXPECT_TRUE(name == kernels::name(held) || name == kernels::name(kernels::DType::Q4_K_R8S))
        << name;
    EXPECT_EQ(other, mode) << name;
  }
  EXPECT_EQ(j.at("matvec_stream_lines").get<bool>(), mode.at("lines").get<bool>());
  EXPECT_EQ(j.at("matvec_stream_choice").get<std::string>(), mode.at("choice").get<std::string>());
  EXPECT_NE(mode.at("choice").get<std::string>(), "fixed");
}

// --model-draft: the same tokens as without it, and the draft's count on the stats line.
TEST_F(CliLlm, ModelDraftGivesTheSameReply) {
  const std::vector<std::string> args = {"--raw", "-p",           "w260 w261", "--temp",
                                         "0",     "--max-tokens", "24",        "--show-tokens"};
  const CommandResult plain = generate(args);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  std::vector<std::string> with = args;
  with.insert(with.end(), {"-md", model_, "--draft-max", "5", "--draft-p-min", "0"});
  const CommandResult fast = generate(with);
  ASSERT_EQ(fast.exit_code, 0) << fast.err;
  EXPECT_EQ(fast.out, plain.out);
  EXPECT_EQ(line_starting(fast.err, "generated tokens: "),
            line_starting(plain.err, "generated tokens: "));
  const std::string draft = line_starting(fast.err, "draft: ");
  EXPECT_NE(draft.find("tokens proposed"), std::string::npos) << fast.err;
  EXPECT_EQ(generate({"-p", "x", "--draft-max", "4"}).exit_code, 2);
  EXPECT_EQ(generate({"-p", "x", "-md", model_, "--draft-max", "0"}).exit_code, 2);
}

// 60 of the tiny model's words, every `step`-th of its 40 in turn: a text for perplexity.
std::string word_text(int step) {
  std::string text;
  for (int i = 0; i < 60; ++i)
    text.append("w").append(std::to_string(260 + (i * step) % 40)).append(" ");
  return text;
}

// perplexity: the text tokenized as the model says (BOS first), the running PPL after each chunk
// and the final estimate as perplexity() computes them on the same tokens; --json; a text too
// short for two chunks is an error naming the file.
TEST_F(CliLlm, PerplexityPrintsTheRunningAndFinalEstimate) {
  const std::string text = word_text(7);
  const std::string file = (dir_ / "text.txt").string();
  oxi::test::write_file_bytes(file, std::vector<uint8_t>(text.begin(), text.end()));
  const CommandResult r = run_oxinfer(
      {"perplexity", "-m", model_, "-f", file, "--ctx", "16", "--chunks", "3", "--threads", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const auto e = engine();
  const tokenizer::Tokenizer& tok = e->model().tokenizer();
  const std::vector<int32_t> tokens = tok.encode(text, tok.add_bos());
  ASSERT_GE(tokens.size(), 64u);
  Session session(e->model_ptr(), e->backend(), 16);
  const PerplexityResult want = perplexity(session, tokens, {.n_ctx = 16, .max_chunks = 3});
  char expected[256];
  std::snprintf(expected, sizeof expected,
                "[1]%.4f,[2]%.4f,[3]%.4f,\nFinal estimate: PPL = %.4f +/- %.5f\n", want.running[0],
                want.running[1], want.running[2], want.ppl, want.ppl_error);
  EXPECT_EQ(r.out, expected);

  const CommandResult j =
      run_oxinfer({"perplexity", "-m", model_, "-f", file, "-c", "16", "--json", "--threads", "2"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const nlohmann::json out = nlohmann::json::parse(j.out);
  EXPECT_EQ(out["chunks"], tokens.size() / 16);
  EXPECT_EQ(out["tokens"], tokens.size());
  EXPECT_EQ(out["tokens_scored"], (tokens.size() / 16) * 7);
  EXPECT_EQ(out["ctx"], 16);
  EXPECT_NEAR(out["chunk_ppl"][2].get<double>() / want.running[2], 1.0, 1e-6);
  for (const char* key : {"ppl", "ppl_error", "mean_nll", "seconds"})
    EXPECT_TRUE(out[key].is_number()) << key;

  // --ppl-stride: windows of ctx + S/2 (the session holds them), the same running values.
  const CommandResult strided = run_oxinfer({"perplexity", "-m", model_, "-f", file, "--ctx", "16",
                                             "--ppl-stride", "8", "--json", "--threads", "2"});
  ASSERT_EQ(strided.exit_code, 0) << strided.err;
  Session wide(e->model_ptr(), e->backend(), 20);
  const PerplexityResult windows = perplexity(wide, tokens, {.n_ctx = 16, .stride = 8});
  const nlohmann::json s = nlohmann::json::parse(strided.out);
  EXPECT_EQ(s["stride"], 8);
  EXPECT_EQ(s["chunks"], windows.chunks);
  EXPECT_EQ(s["tokens_scored"], windows.chunks * 8);
  EXPECT_NEAR(s["ppl"].get<double>() / windows.ppl, 1.0, 1e-9);
  EXPECT_NE(windows.ppl, want.ppl);
  EXPECT_EQ(run_oxinfer({"perplexity", "-m", model_, "-f", file, "--ctx", "4", "--ppl-stride", "8"})
                .exit_code,
            2);  // the stride is not below its window (4 + 8/2)
  EXPECT_EQ(
      run_oxinfer({"perplexity", "-m", model_, "-f", file, "--ppl-stride", "8", "--hellaswag"})
          .exit_code,
      2);

  const CommandResult small = run_oxinfer({"perplexity", "-m", model_, "-f", file, "--ctx", "512"});
  EXPECT_EQ(small.exit_code, 1);
  EXPECT_NE(small.err.find(file + ": perplexity: the text has"), std::string::npos) << small.err;
  EXPECT_EQ(run_oxinfer({"perplexity", "-m", model_}).exit_code, 2);
}

// --hellaswag: llama.cpp's table (task, acc_norm, 95 % interval) with the values
// score_hellaswag gives on the tasks drawn as select_hellaswag_tasks draws them; --json.
TEST_F(CliLlm, HellaswagPrintsTheRunningAccuracy) {
  std::string text;
  for (int t = 0; t < 5; ++t) {
    text.append(word_text(3 + t).substr(0, 20)).append("\n").append(std::to_string(t % 4));
    for (int e = 0; e < 4; ++e) text.append("\n").append(word_text(5 + e + t).substr(0, 9 + 3 * e));
    text.append("\n");
  }
  text.pop_back();
  const std::string file = (dir_ / "hs.txt").string();
  oxi::test::write_file_bytes(file, std::vector<uint8_t>(text.begin(), text.end()));
  const CommandResult r = run_oxinfer({"perplexity", "-m", model_, "-f", file, "--hellaswag",
                                       "--hellaswag-tasks", "4", "--threads", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto e = engine();
  Session session(e->model_ptr(), e->backend(), 512);
  const std::vector<HellaswagTask> tasks = select_hellaswag_tasks(parse_hellaswag(text), 4);
  std::string want = "\ntask\tacc_norm\t95% confidence interval\n";
  score_hellaswag(session, tasks, [&](size_t i, const HellaswagResult& so_far) {
    const auto [lo, hi] = wilson_interval(so_far.accuracy(), i + 1);
    char line[128];
    std::snprintf(line, sizeof line, "%zu\t%3.8f%%\t[%3.4f%%, %3.4f%%]\n", i + 1,
                  100 * so_far.accuracy(), 100 * lo, 100 * hi);
    want += line;
    return true;
  });
  EXPECT_EQ(r.out, want);
  const CommandResult j =
      run_oxinfer({"perplexity", "-m", model_, "-f", file, "--hellaswag", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const nlohmann::json out = nlohmann::json::parse(j.out);
  EXPECT_EQ(out["tasks"], 5);
  EXPECT_EQ(out["picks"].size(), 5u);
  const CommandResult bad = run_oxinfer({"perplexity", "-m", model_, "-f", file + ".x"});
  EXPECT_NE(bad.exit_code, 0);
  oxi::test::write_file_bytes(dir_ / "bad.txt", {'a', '\n', '9'});
  const CommandResult odd =
      run_oxinfer({"perplexity", "-m", model_, "-f", (dir_ / "bad.txt").string(), "--hellaswag"});
  EXPECT_EQ(odd.exit_code, 1);
  EXPECT_NE(odd.err.find("bad.txt: hellaswag: 2 lines"), std::string::npos) << odd.err;
}

// --winogrande: a row per task (index, accuracy, both scores, the pick, the answer) and the
// final score, as score_winogrande gives them; --json.
TEST_F(CliLlm, WinograndePrintsEachTaskAndTheScore) {
  std::string csv;
  for (int t = 0; t < 4; ++t)
    csv.append(std::to_string(t))
        .append(",")
        .append(word_text(3 + t).substr(0, 10))
        .append(" _ ")
        .append(word_text(5 + t).substr(0, 15))
        .append(",")
        .append(word_text(7 + t).substr(0, 4))
        .append(",")
        .append(word_text(9 + t).substr(0, 9))
        .append(",")
        .append(std::to_string(1 + t % 2))
        .append("\n");
  const std::string file = (dir_ / "wg.csv").string();
  oxi::test::write_file_bytes(file, std::vector<uint8_t>(csv.begin(), csv.end()));
  const CommandResult r =
      run_oxinfer({"perplexity", "-m", model_, "-f", file, "--winogrande", "--threads", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto e = engine();
  Session session(e->model_ptr(), e->backend(), 512);
  const std::vector<WinograndeTask> tasks = parse_winogrande(csv);
  const WinograndeResult want = score_winogrande(session, tasks);
  std::string expected;
  size_t correct = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    correct += want.picks[i] == tasks[i].answer;
    char line[160];
    std::snprintf(line, sizeof line, "%zu\t%.4f\t%10.6f  %10.6f  %d  %d\n", i + 1,
                  100.0 * correct / (i + 1), want.scores[i][0], want.scores[i][1], want.picks[i],
                  tasks[i].answer);
    expected += line;
  }
  EXPECT_EQ(r.out.substr(0, expected.size()), expected);
  EXPECT_NE(r.out.find("Final Winogrande score(4 tasks): "), std::string::npos) << r.out;
  const CommandResult j = run_oxinfer({"perplexity", "-m", model_, "-f", file, "--winogrande",
                                       "--winogrande-tasks", "2", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_EQ(nlohmann::json::parse(j.out)["tasks"], 2);
  EXPECT_EQ(run_oxinfer({"perplexity", "-m", model_, "-f", file, "--winogrande", "--hellaswag"})
                .exit_code,
            2);
}

// --multiple-choice: llama.cpp's table (task, accuracy so far) with score_multiple_choice's
// values, its final result and random chance (all tasks taken); --json; a cut file is an error
// naming it.
TEST_F(CliLlm, MultipleChoicePrintsTheRunningAccuracy) {
  std::vector<MultipleChoiceTask> tasks(5);
  for (size_t t = 0; t < tasks.size(); ++t) {
    tasks[t].question = word_text(3 + t).substr(0, 15);
    for (size_t a = 0; a < 2 + t % 3; ++a) {
      tasks[t].answers.push_back(word_text(5 + a + t).substr(0, 4 + 5 * (a % 2)));
      tasks[t].labels.push_back(a == t % 2 ? 1 : 0);
    }
  }
  const std::string bytes = multiple_choice_file(tasks);
  const std::string file = (dir_ / "mc.bin").string();
  oxi::test::write_file_bytes(file, std::vector<uint8_t>(bytes.begin(), bytes.end()));
  const CommandResult r =
      run_oxinfer({"perplexity", "-m", model_, "-f", file, "--multiple-choice", "--threads", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto e = engine();
  Session session(e->model_ptr(), e->backend(), 512);
  const MultipleChoiceResult want = score_multiple_choice(session, tasks);
  std::string expected = "\ntask\tacc_norm\n";
  size_t correct = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    correct += tasks[i].labels[want.picks[i]] == 1;
    char line[64];
    std::snprintf(line, sizeof line, "%zu\t%.8f\n", i + 1, 100.0 * correct / (i + 1));
    expected += line;
  }
  const float p = static_cast<float>(correct) / 5, chance = 5.f / static_cast<float>(want.answers);
  char final_lines[160];
  std::snprintf(final_lines, sizeof final_lines,
                "\nFinal result: %.4f +/- %.4f\nRandom chance: %.4f +/- %.4f\n", 100 * p,
                100 * std::sqrt(p * (1 - p) / 4), 100 * chance,
                100 * std::sqrt(chance * (1 - chance) / 4));
  EXPECT_EQ(r.out, expected + final_lines);
  const CommandResult j = run_oxinfer({"perplexity", "-m", model_, "-f", file, "--multiple-choice",
                                       "--multiple-choice-tasks", "2", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const nlohmann::json out = nlohmann::json::parse(j.out);
  EXPECT_EQ(out["tasks"], 2);
  EXPECT_EQ(out["picks"].size(), 2u);
  // Two drawn from five, fewer than 100: no final lines (llama.cpp's rule).
  const CommandResult drawn = run_oxinfer({"perplexity", "-m", model_, "-f", file,
                                           "--multiple-choice", "--multiple-choice-tasks", "2"});
  ASSERT_EQ(drawn.exit_code, 0) << drawn.err;
  EXPECT_EQ(drawn.out.find("Final result"), std::string::npos) << drawn.out;
  oxi::test::write_file_bytes(dir_ / "cut.bin",
                              std::vector<uint8_t>(bytes.begin(), bytes.end() - 3));
  const CommandResult cut = run_oxinfer(
      {"perplexity", "-m", model_, "-f", (dir_ / "cut.bin").string(), "--multiple-choice"});
  EXPECT_EQ(cut.exit_code, 1);
  EXPECT_NE(cut.err.find("cut.bin: multiple choice: task 5 of 5: the file ends inside"),
            std::string::npos)
      << cut.err;
  EXPECT_EQ(
      run_oxinfer({"perplexity", "-m", model_, "-f", file, "--multiple-choice", "--winogrande"})
          .exit_code,
      2);
}

// quantize: llama-quantize's arguments (IN [OUT] TYPE [THREADS]); a line per tensor, the
// sizes; the file the plan describes, which generate then runs; --dry-run writes nothing; OUT
// defaults to ggml-model-TYPE.gguf beside IN; an unknown type is an error listing the types.
// `oxinfer imatrix` then `oxinfer quantize --imatrix`: the importance matrix of every layer
// matrix over a text (the perplexity it prints is `oxinfer perplexity`'s for the same chunks),
// and a quantization that follows it (the blocks of the matrices it covers differ from plain
// Q4_0's, the rest are the same; the file records the imatrix as llama-quantize does; it runs);
// an imatrix whose rows do not fit a tensor is refused, naming the file.
TEST_F(CliLlm, ImatrixThenQuantizeWithIt) {
  std::string text;
  for (int i = 0; i < 160; ++i) text += " w" + std::to_string(260 + (i * 7) % 40);
  const std::string text_file = (dir_ / "calib.txt").string();
  std::ofstream(text_file) << text;
  const std::string im_file = (dir_ / "im.gguf").string();
  const CommandResult made = run_oxinfer(
      {"imatrix", "-m", model_, "-f", text_file, "--ctx", "32", "-o", im_file, "--threads", "2"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const CommandResult ppl =
      run_oxinfer({"perplexity", "-m", model_, "-f", text_file, "--ctx", "32", "--threads", "2"});
  ASSERT_EQ(ppl.exit_code, 0) << ppl.err;
  const auto final_line = [](const std::string& out) {
    const size_t at = out.find("Final estimate");
    return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
  };
  EXPECT_FALSE(final_line(made.out).empty()) << made.out;
  EXPECT_EQ(final_line(made.out), final_line(ppl.out));
  const ImportanceMatrix im = ImportanceMatrix::load(im_file);
  EXPECT_EQ(im.entries.size(), 14u);  // 2 layers x q, k, v, o, gate, up, down
  EXPECT_EQ(im.chunk_size, 32u);
  EXPECT_GE(im.chunk_count, 2u);
  EXPECT_EQ(im.datasets, std::vector<std::string>{text_file});

  const std::string weighted = (dir_ / "weighted.gguf").string(),
                    plain = (dir_ / "plain.gguf").string();
  const CommandResult q = run_oxinfer({"quantize", "--imatrix", im_file, model_, weighted, "Q4_0"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  ASSERT_EQ(run_oxinfer({"quantize", model_, plain, "Q4_0"}).exit_code, 0);
  const gguf::Reader w(weighted), p(plain);
  EXPECT_EQ(w.get_string("quantize.imatrix.file"), im_file);
  EXPECT_EQ(w.get_string("quantize.imatrix.dataset"), text_file);
  EXPECT_EQ(w.get_u32("quantize.imatrix.entries_count"), 14u);
  const auto same_bytes = [&](const std::string& name) {
    const auto a = w.tensor(name).data, b = p.tensor(name).data;
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
  };
  EXPECT_FALSE(same_bytes("blk.0.ffn_down.weight"));
  EXPECT_FALSE(same_bytes("blk.1.attn_q.weight"));
  EXPECT_TRUE(same_bytes("output.weight"));  // not in the imatrix
  EXPECT_EQ(run_oxinfer({"generate", "-m", weighted, "--raw", "-p", "w260", "--temp", "0", "-n",
                         "4", "--threads", "2"})
                .exit_code,
            0);

  ImportanceMatrix wrong;
  wrong.entries["blk.0.attn_q.weight"] = {std::vector<double>(10, 1.0), 1};
  const std::string wrong_file = (dir_ / "wrong.gguf").string();
  wrong.save(wrong_file);
  const CommandResult refused = run_oxinfer(
      {"quantize", "--imatrix", wrong_file, model_, (dir_ / "x.gguf").string(), "Q4_0"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find(wrong_file), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("10 columns in the imatrix, 64 in the model"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "x.gguf"));
}

TEST_F(CliLlm, QuantizeWritesTheFileTypeAndItRuns) {
  const std::string out = (dir_ / "q8.gguf").string();
  const CommandResult r = run_oxinfer({"quantize", model_, out, "Q8_0", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const gguf::Reader q(out);
  EXPECT_EQ(q.get_u32("general.file_type"), 7u);
  EXPECT_EQ(q.tensor("blk.0.attn_q.weight").dtype, kernels::DType::Q8_0);
  EXPECT_EQ(q.tensor("blk.0.attn_norm.weight").dtype, kernels::DType::F32);
  size_t lines = 0;
  for (size_t at = 0; (at = r.out.find("\n[", at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, q.tensors().size()) << r.out;
  EXPECT_NE(r.out.find("blk.0.attn_q.weight - [64, 64], type =    f32, converting to q8_0"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("quant size  = "), std::string::npos);
  const CommandResult g = run_oxinfer(
      {"generate", "-m", out, "--raw", "-p", "w260", "--temp", "0", "-n", "4", "--threads", "2"});
  EXPECT_EQ(g.exit_code, 0) << g.err;

  const CommandResult dry = run_oxinfer({"quantize", "--dry-run", model_, "Q4_0"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find("converting to q4_0"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "ggml-model-Q4_0.gguf"));
  ASSERT_EQ(run_oxinfer({"quantize", model_, "q4_0"}).exit_code, 0);
  EXPECT_EQ(gguf::Reader(dir_ / "ggml-model-Q4_0.gguf").get_u32("general.file_type"), 2u);

  // --tensor-type PATTERN=TYPE (repeatable).
  const CommandResult manual = run_oxinfer({"quantize", "--dry-run", "--tensor-type",
                                            "attn_q=f16", "--tensor-type", "ffn_up=q4_0", model_,
                                            "Q8_0"});
  ASSERT_EQ(manual.exit_code, 0) << manual.err;
  EXPECT_NE(manual.out.find("blk.1.attn_q.weight - [64, 64], type =    f32, converting to f16"),
            std::string::npos)
      << manual.out;
  EXPECT_NE(manual.out.find("blk.1.ffn_up.weight - [64, 128], type =    f32, converting to q4_0"),
            std::string::npos);
  EXPECT_EQ(run_oxinfer({"quantize", "--tensor-type", "attn_q", model_, "Q8_0"}).exit_code, 2);

  // A type by its id after OUT, without THREADS (llama-quantize's reading).
  const std::string by_id = (dir_ / "by_id.gguf").string();
  ASSERT_EQ(run_oxinfer({"quantize", model_, by_id, "7"}).exit_code, 0);
  EXPECT_EQ(gguf::Reader(by_id).get_u32("general.file_type"), 7u);
  EXPECT_EQ(run_oxinfer({"quantize", model_, "q8_0", "two"}).exit_code, 2);

  const CommandResult bad = run_oxinfer({"quantize", model_, out, "Q9"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("unknown type 'Q9'; supported: Q4_0, Q4_1"), std::string::npos) << bad.err;
  EXPECT_EQ(run_oxinfer({"quantize", model_}).exit_code, 2);
}

// --kl-divergence-base saves llama.cpp's log-probability file while measuring perplexity (the
// same bytes as the library's writer on the same logits); --kl-divergence then compares
// another model with it: llama.cpp's statistics, the values kl_divergence() gives.
TEST_F(CliLlm, KlDivergenceAgainstASavedBase) {
  const std::string text = word_text(11);
  const std::string file = (dir_ / "text.txt").string();
  oxi::test::write_file_bytes(file, std::vector<uint8_t>(text.begin(), text.end()));
  const std::string base = (dir_ / "base.kld").string();
  const CommandResult saved = run_oxinfer({"perplexity", "-m", model_, "-f", file, "--ctx", "16",
                                           "--threads", "2", "--kl-divergence-base", base});
  ASSERT_EQ(saved.exit_code, 0) << saved.err;

  const auto e = engine();
  const tokenizer::Tokenizer& tok = e->model().tokenizer();
  const std::vector<int32_t> tokens = tok.encode(text, tok.add_bos());
  const size_t chunks = tokens.size() / 16;
  {
    Session session(e->model_ptr(), e->backend(), 16);
    LogProbWriter w(dir_ / "mine.kld", 16, tok.vocab_size(), chunks,
                    std::span<const int32_t>(tokens).first(chunks * 16));
    perplexity(session, tokens, {.n_ctx = 16}, {},
               [&](size_t, std::span<const float> logits, int32_t) { w.add(logits); });
    w.finish();
  }
  EXPECT_EQ(oxi::test::read_file_bytes(base), oxi::test::read_file_bytes(dir_ / "mine.kld"));

  const std::string other = (dir_ / "other.gguf").string();
  write_tiny_llama(other, 99);
  const CommandResult r = run_oxinfer({"perplexity", "-m", other, "--kl-divergence-base", base,
                                       "--kl-divergence", "--threads", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  LogProbReader reader(base);
  EngineOptions two_threads;
  two_threads.threads = 2;
  const auto o = Engine::load(other, two_threads);
  Session session(o->model_ptr(), o->backend(), 16);
  const KlDivergence k = kl_divergence(session, reader);
  char line[128];
  std::snprintf(line, sizeof line, "Mean    KLD: %10.6f \u00b1 %10.6f\n", k.mean_kld().value,
                k.mean_kld().error);
  EXPECT_NE(r.out.find(line), std::string::npos) << r.out;
  std::snprintf(line, sizeof line, "Mean PPL(Q)                   : %10.6f \u00b1 %10.6f\n",
                k.ppl().value, k.ppl().error);
  EXPECT_NE(r.out.find(line), std::string::npos) << r.out;
  std::snprintf(line, sizeof line, "Same top p: %6.3f \u00b1 %5.3f %%\n", 100 * k.same_top().value,
                100 * k.same_top().error);
  EXPECT_NE(r.out.find(line), std::string::npos) << r.out;
  std::snprintf(line, sizeof line, "\n%4zu    ", chunks);  // the last chunk's row
  EXPECT_NE(r.out.find(line), std::string::npos) << r.out;

  const CommandResult j = run_oxinfer({"perplexity", "-m", other, "--kl-divergence-base", base,
                                       "--kl-divergence", "--json", "--chunks", "2"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const nlohmann::json out = nlohmann::json::parse(j.out);
  EXPECT_EQ(out["chunks"], 2);
  EXPECT_EQ(out["tokens_scored"], 2 * 7);
  for (const char* key : {"ppl", "base_ppl", "kld_mean", "kld_mean_error", "kld_max", "kld_median",
                          "p_diff_rms", "same_top", "ppl_ratio"})
    EXPECT_TRUE(out[key].is_number()) << key;

  EXPECT_EQ(run_oxinfer({"perplexity", "-m", other, "--kl-divergence"}).exit_code, 2);
  EXPECT_EQ(run_oxinfer({"perplexity", "-m", other, "--kl-divergence", "--kl-divergence-base", base,
                         "-f", file})
                .exit_code,
            2);
  const CommandResult not_base =
      run_oxinfer({"perplexity", "-m", other, "--kl-divergence", "--kl-divergence-base", file});
  EXPECT_EQ(not_base.exit_code, 1);
  EXPECT_NE(not_base.err.find(file + ": not a log-probability file"), std::string::npos)
      << not_base.err;
}

}  // namespace
}  // namespace oxi::llm::test
