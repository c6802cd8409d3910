// GBNF grammars: the parser's errors; the matcher against std::regex on the same languages
// (every string of up to 5 characters over a small alphabet, and random longer ones); pieces
// that end inside a UTF-8 character; and a greedy reply held to a grammar against a restatement
// that picks, from a bare Session's logits, the best token keeping the text a prefix of the
// (finite) language.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/core/error.h"
#include "lib/llm/engine.h"
#include "lib/llm/gbnf.h"
#include "lib/llm/grammar_constraint.h"
#include "lib/llm/grammar_matcher.h"
#include "lib/llm/session.h"
#include "lib/tokenizer/tokenizer.h"
#include "tests/common/byte_edits.h"
#include "tests/common/test_data.h"
#include "tests/llm_engine/engine_fixture.h"

namespace oxi::llm::test {
namespace {

GrammarMatcher matcher(const std::string& text) {
  return GrammarMatcher(std::make_shared<const gbnf::Grammar>(gbnf::Grammar::parse(text)));
}

// Whether the matcher takes the whole string, one character at a time, and can end there.
bool matches(const std::string& grammar, const std::string& s) {
  GrammarMatcher m = matcher(grammar);
  for (char c : s) {
    if (!m.accepts(std::string(1, c))) return false;
    m.accept(std::string(1, c));
  }
  return m.can_end();
}

std::string parse_error(const std::string& text) {
  try {
    gbnf::Grammar::parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "<parsed>";
}

TEST(Gbnf, ErrorsNameWhereAndWhat) {
  const auto expect_error = [](const std::string& text, const std::string& part) {
    const std::string message = parse_error(text);
    EXPECT_NE(message.find(part), std::string::npos) << text << " -> " << message;
  };
  expect_error("root ::= \"a", "line 1, column 12: unterminated string");
  expect_error("root ::= \"a\"\n  | foo", "line 2, column 5: rule 'foo' is not defined");
  expect_error("a ::= \"x\"", "no root rule");
  expect_error("root ::= root \"a\"", "left-recursive");
  expect_error("root ::= x\nx ::= \"a\"? root", "left-recursive");
  expect_error("root ::= \"a\"{3,2}", "n < m");
  expect_error("root ::= \"a\"{2000}", "more than 1000 repetitions");
  expect_error("root ::= * \"a\"", "nothing before * to repeat");
  expect_error("root ::= [a-", "unterminated character class");
  expect_error("root ::= [z-a]", "end before its start");
  expect_error("root ::= \"\\q\"", "unknown escape \\q");
  expect_error("root ::= \"\\x4\"", "expected 2 hex digits");
  expect_error("root ::= \"a\"\nroot ::= \"b\"", "line 2, column 1: rule 'root' is defined twice");
  expect_error("root ::= (\"a\"", "expected )");
  expect_error("root \"a\"", "expected ::= after 'root'");
  expect_error("root ::= \"a\" )", "unexpected ')'");
  EXPECT_EQ(parse_error("# a comment\nroot ::= x # the start\n\nx ::= \"a\" |\n  \"b\"\n"),
            "<parsed>");
}

// Grammars and the regular expressions of the same languages.
struct Pair {
  const char* grammar;
  const char* regex;
};
const Pair kPairs[] = {
    {"root ::= \"ab\" | \"a\" [bc]* \"1\"", "ab|a[bc]*1"},
    {"root ::= (\"a\" | \"bc\")+ [12]?", "(a|bc)+[12]?"},
    {"root ::= [^a ]{2,4} \"a\"", "[^a ]{2,4}a"},
    {"root ::= x \" \" x\nx ::= [a-c]{1,2} | \"1\"", "([a-c]{1,2}|1) ([a-c]{1,2}|1)"},
    {"root ::= .{0,3} \"2\"", ".{0,3}2"},
    {"root ::= (\"a\" \"b\"?){2,}", "(ab?){2,}"},
    {"root ::= \"a\"{3} | \"b\"{,2} \"c\"", "a{3}|b{0,2}c"},
    {"root ::= \"\\x61\" [\\u0062-c] \"\\\\\"?", "a[b-c]\\\\?"},
    {"root ::= (\n  \"a\" |\n  \"1\" \"2\"*  # ones and twos\n) \" \"? b\nb ::= [^a-c12]*",
     "(a|12*) ?[^a-c12]*"},
    {"root ::= \"\"", ""},
};

TEST(GrammarMatcher, AcceptsWhatTheRegexMatches) {
  std::mt19937 rng(7);
  const std::vector<std::string> strings = oxi::test::strings_over("abc12 \\", 5, 2000, 6, 11, rng);
  for (const Pair& p : kPairs) {
    const std::regex re(p.regex);
    size_t matched = 0;
    for (const std::string& s : strings) {
      const bool want = std::regex_match(s, re);
      matched += want;
      ASSERT_EQ(matches(p.grammar, s), want) << p.grammar << " on '" << s << "'";
    }
    EXPECT_GT(matched, 0u) << p.grammar;  // the comparison saw both answers
  }
}

TEST(GrammarMatcher, EndsWhereTheGrammarDoes) {
  GrammarMatcher m = matcher("root ::= \"a\" \"b\"?");
  EXPECT_FALSE(m.can_end());
  m.accept("a");
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.must_end());
  EXPECT_FALSE(m.accepts("a"));
  EXPECT_THROW(m.accept("c"), Error);
  m.accept("b");
  EXPECT_TRUE(m.must_end());
  EXPECT_FALSE(m.accepts("b"));
  EXPECT_TRUE(m.accepts(""));
}

// A piece may end inside a character: its first bytes wait, if some character they begin can
// come; the rest must complete it to one that can.
TEST(GrammarMatcher, PiecesThatSplitACharacter) {
  const std::string e_acute = "\xC3\xA9", u_umlaut = "\xC3\xBC", euro = "\xE2\x82\xAC";
  GrammarMatcher m = matcher("root ::= [\\u00E9-\\u00EA] \"\\u00FC\" \"\\u20AC\"");
  EXPECT_TRUE(m.accepts("\xC3"));       // é or ê may follow
  EXPECT_FALSE(m.accepts("\xE2"));      // U+2000..U+2FFF: none is in the class
  EXPECT_FALSE(m.accepts("\xC3\xBC"));  // ü is not
  EXPECT_FALSE(m.accepts("\xA9"));      // a continuation byte first: not UTF-8
  m.accept("\xC3");
  EXPECT_FALSE(m.can_end());
  EXPECT_FALSE(m.accepts("\xBC"));  // ü at the class
  EXPECT_FALSE(m.accepts("a"));     // not a continuation byte
  m.accept("\xA9" + u_umlaut + "\xE2\x82");
  EXPECT_FALSE(m.can_end());
  m.accept("\xAC");
  EXPECT_TRUE(m.must_end());

  // Negated classes: a lead byte is possible unless every character it begins is excluded.
  EXPECT_TRUE(matcher("root ::= [^\\u00E9]").accepts("\xC3"));
  EXPECT_FALSE(matcher("root ::= [^\\u00C0-\\u00FF]").accepts("\xC3"));
  EXPECT_TRUE(matcher("root ::= [^\\u00C0-\\u00FE]").accepts("\xC3"));
  EXPECT_TRUE(matches("root ::= .+", e_acute + euro + "x"));
  EXPECT_FALSE(matcher("root ::= .").accepts("\xC0\x80"));  // overlong
}

// String contents: plain, escaped by the dump (quote, backslash, controls) and UTF-8.
const char* const kPieces[] = {"a", "b", "\\", "\"", "\n", "\t", "\x01", "/", "\xC3\xA9", " "};

// examples/grammars/json.gbnf against nlohmann::json's parser: random objects, dumped compact
// and indented, each with a few one-character edits; the grammar takes exactly those the
// parser accepts as an object (whitespace runs kept under the grammar's bound of 20).
TEST(GrammarMatcher, JsonGrammarAgreesWithAJsonParser) {
  const char* root = std::getenv("OXINFER_SOURCE_ROOT");
  if (!root) GTEST_SKIP() << "OXINFER_SOURCE_ROOT not set (run through meson test)";
  const std::vector<uint8_t> bytes =
      oxi::test::read_file_bytes(std::filesystem::path(root) / "examples/grammars/json.gbnf");
  const std::string grammar(bytes.begin(), bytes.end());
  std::mt19937 rng(11);
  const auto random_value = [&](auto&& self, int depth) -> nlohmann::json {
    switch (rng() % (depth > 2 ? 5 : 7)) {
      case 0:
        return static_cast<int>(rng() % 2000) - 1000;
      case 1:
        return std::ldexp(static_cast<double>(rng() % 100000) - 50000,
                          -static_cast<int>(rng() % 20));
      case 2: {
        std::string text;
        for (size_t i = rng() % 6; i > 0; --i) text += kPieces[rng() % std::size(kPieces)];
        return text;
      }
      case 3:
        return rng() % 2 == 0;
      case 4:
        return nullptr;
      case 5: {
        nlohmann::json a = nlohmann::json::array();
        for (size_t i = rng() % 4; i > 0; --i) a.push_back(self(self, depth + 1));
        return a;
      }
      default: {
        nlohmann::json o = nlohmann::json::object();
        for (size_t i = rng() % 4; i > 0; --i)
          o["k" + std::to_string(rng() % 10)] = self(self, depth + 1);
        return o;
      }
    }
  };
  const std::string edits = "{}[],:\"0-.e \n\\tx";
  size_t valid = 0, invalid = 0;
  for (int doc = 0; doc < 150; ++doc) {
    nlohmann::json object = nlohmann::json::object();
    for (size_t i = 1 + rng() % 4; i > 0; --i)
      object["key" + std::to_string(i)] = random_value(random_value, 0);
    std::vector<std::string> texts = {object.dump(), object.dump(2)};
    for (int e = 0; e < 8; ++e) texts.push_back(oxi::test::edit_char(texts[e % 2], edits, rng));
    for (const std::string& t : texts) {
      if (t.find(std::string(21, ' ')) != std::string::npos) continue;
      bool parses = true;
      try {
        [[maybe_unused]] const nlohmann::json parsed = nlohmann::json::parse(t);
      } catch (const nlohmann::json::out_of_range&) {
        continue;  // a number beyond double (an edit made 1e5 1e5625): valid JSON text
      } catch (const nlohmann::json::parse_error&) {
        parses = false;
      }
      const bool want = parses && t.front() == '{' && t.back() == '}';
      (want ? valid : invalid) += 1;
      // The matcher reads the UTF-8 text whole: feed it in pieces of 1-3 bytes.
      GrammarMatcher m = matcher(grammar);
      bool ok = true;
      for (size_t i = 0; i < t.size() && ok;) {
        const std::string piece = t.substr(i, 1 + rng() % 3);
        ok = m.accepts(piece);
        if (ok) m.accept(piece);
        i += piece.size();
      }
      ASSERT_EQ(ok && m.can_end(), want) << t;
    }
  }
  EXPECT_GT(valid, 300u);
  EXPECT_GT(invalid, 300u);
}

// GrammarConstraint's sets (first-byte filter, remembered states, the last character only
// matched) against trying every token on a copy of the matcher with accept(), which steps past
// every character, along random walks through examples/grammars/json.gbnf.
TEST(GrammarConstraint, AllowedSetsEqualTryingEveryToken) {
  const char* root = std::getenv("OXINFER_SOURCE_ROOT");
  if (!root) GTEST_SKIP() << "OXINFER_SOURCE_ROOT not set (run through meson test)";
  const std::vector<uint8_t> bytes =
      oxi::test::read_file_bytes(std::filesystem::path(root) / "examples/grammars/json.gbnf");
  const std::string grammar(bytes.begin(), bytes.end());
  oxi::test::TempDir dir;
  write_tiny_llama(dir / "tiny.gguf");
  EngineOptions o;
  o.threads = 1;
  const auto engine = Engine::load((dir / "tiny.gguf").string(), o);
  const tokenizer::Tokenizer& tok = engine->model().tokenizer();
  const std::vector<int32_t> ends = engine->model().eos_ids();
  const auto parsed = std::make_shared<const gbnf::Grammar>(gbnf::Grammar::parse(grammar));
  std::mt19937 rng(3);
  size_t steps = 0;
  const auto trie = std::make_shared<const TokenTrie>(tok, ends);
  GrammarConstraint constraint(trie, grammar);
  for (int walk = 0; walk < 24; ++walk) {
    // Every fourth walk on a new constraint; the others after restart(), with the sets
    // remembered on the walks before.
    if (walk % 4 == 0)
      constraint = GrammarConstraint(trie, grammar);
    else
      constraint.restart();
    GrammarMatcher reference(parsed);
    for (int step = 0; step < 50; ++step, ++steps) {
      std::vector<int32_t> want;
      for (int32_t id = 0; id < static_cast<int32_t>(tok.vocab_size()); ++id) {
        if (std::find(ends.begin(), ends.end(), id) != ends.end()) {
          if (reference.can_end()) want.push_back(id);
          continue;
        }
        if (tok.is_control(id) || tok.token_piece(id).empty()) continue;
        GrammarMatcher copy = reference;
        try {
          copy.accept(tok.token_piece(id));
          want.push_back(id);
        } catch (const Error&) {
        }
      }
      ASSERT_EQ(constraint.allowed(), want) << "walk " << walk << " step " << step;
      std::vector<int32_t> go_on;
      for (int32_t id : want)
        if (std::find(ends.begin(), ends.end(), id) == ends.end()) go_on.push_back(id);
      if (go_on.empty()) break;
      // Mostly structure (quotes, braces, digits), some bytes of anything.
      int32_t pick = go_on[rng() % go_on.size()];
      for (int tries = 0; tries < 4 && tok.token_piece(pick).size() > 1; ++tries)
        pick = go_on[rng() % go_on.size()];
      constraint.accept(pick);
      reference.accept(tok.token_piece(pick));
    }
  }
  EXPECT_GT(steps, 150u);
}

// The finite language {yes, no} x " " x {0..99}, and its prefixes.
std::set<std::string> answer_language() {
  std::set<std::string> all;
  for (const char* word : {"yes", "no"})
    for (int n = 0; n < 100; ++n) {
      all.insert(std::string(word) + " " + std::to_string(n));
      if (n < 10) all.insert(std::string(word) + " 0" + std::to_string(n));
    }
  return all;
}
const char* kAnswerGrammar = "root ::= (\"yes\" | \"no\") \" \" [0-9]{1,2}";

bool is_prefix_of_some(const std::set<std::string>& language, const std::string& text) {
  const auto it = language.lower_bound(text);
  return it != language.end() && it->starts_with(text);
}

// The tiny model, on two threads.
class GrammarReply : public ::testing::Test {
 protected:
  void SetUp() override {
    write_tiny_llama(dir_ / "tiny.gguf");
    EngineOptions o;
    o.threads = 2;
    engine_ = Engine::load((dir_ / "tiny.gguf").string(), o);
  }
  oxi::test::TempDir dir_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(GrammarReply, GreedyPicksTheBestTokenThatKeepsTheGrammar) {
  Engine* engine = engine_.get();
  GenerateOptions g;
  g.sampling.temperature = 0;
  g.max_tokens = 40;
  g.grammar = kAnswerGrammar;
  const TurnStats s = engine->send_raw("w260 w261", g);
  ASSERT_EQ(s.stop_reason, StopReason::eos) << s.text;
  const std::set<std::string> language = answer_language();
  EXPECT_TRUE(language.count(s.text)) << s.text;

  // The restatement: the tokens whose bytes keep the text a prefix of some answer, the end
  // token once the text is one; the best logit among them (lowest id on ties).
  const tokenizer::Tokenizer& tok = engine->model().tokenizer();
  const std::vector<int32_t> ends = engine->model().eos_ids();
  Session session(engine->model_ptr(), engine->backend(), 64);
  std::span<const float> logits = session.eval(s.prompt_ids);
  std::string text;
  for (size_t step = 0; step < s.generated_ids.size(); ++step) {
    int32_t best = -1;
    for (int32_t id = 0; id < static_cast<int32_t>(tok.vocab_size()); ++id) {
      const bool end = std::find(ends.begin(), ends.end(), id) != ends.end();
      const bool allowed = end ? language.count(text) > 0
                               : !tok.is_control(id) && !tok.token_piece(id).empty() &&
                                     is_prefix_of_some(language, text + tok.token_piece(id));
      if (allowed && (best < 0 || logits[id] > logits[best])) best = id;
    }
    ASSERT_EQ(s.generated_ids[step], best) << "step " << step << " after '" << text << "'";
    if (std::find(ends.begin(), ends.end(), best) != ends.end()) break;
    text += tok.token_piece(best);
    logits = session.eval(std::span<const int32_t>(&best, 1));
  }
  EXPECT_EQ(text, s.text);
}

TEST_F(GrammarReply, SampledRepliesAreAlwaysAnswers) {
  Engine* engine = engine_.get();
  const std::set<std::string> language = answer_language();
  std::set<std::string> seen;
  for (uint64_t seed = 0; seed < 30; ++seed) {
    GenerateOptions g;
    g.sampling.temperature = 1.5f;
    g.sampling.top_k = 0;
    g.sampling.min_p = 0;
    g.sampling.seed = seed;
    g.max_tokens = 40;
    g.grammar = kAnswerGrammar;
    engine->reset();
    const TurnStats s = engine->send_raw("w260", g);
    ASSERT_EQ(s.stop_reason, StopReason::eos) << s.text;
    EXPECT_TRUE(language.count(s.text)) << "seed " << seed << ": '" << s.text << "'";
    seen.insert(s.text);
  }
  EXPECT_GT(seen.size(), 3u);  // sampling, not one fixed answer

  // ignore_eos: the reply stops where the grammar admits nothing but the end.
  GenerateOptions g;
  g.sampling.temperature = 0;
  g.max_tokens = 40;
  g.grammar = "root ::= \"yes\"";
  g.ignore_eos = true;
  engine->reset();
  const TurnStats s = engine->send_raw("w260", g);
  EXPECT_EQ(s.text, "yes");
  EXPECT_EQ(s.stop_reason, StopReason::eos);

  // A grammar with choices, or one that does not parse: errors before anything is evaluated.
  g.ignore_eos = false;
  g.choices = {"yes", "no"};
  engine->reset();
  EXPECT_THROW(engine->send_raw("w260", g), Error);
  g.choices.clear();
  g.grammar = "root ::= (";
  EXPECT_THROW(engine->send_raw("w260", g), Error);
  EXPECT_EQ(engine->session().n_past(), 0u);
}

// A top-k draw under a grammar (where the engine checks the likeliest tokens one by one in a
// state it has not met instead of walking the vocabulary): each pick is the one a sampler with
// the same options and seed makes from every allowed token, restated here by trying each. Two
// grammars: the answers (few tokens allowed: the vocabulary is walked) and words of [a-z0-9 ]
// (most allowed: the likeliest tokens hold the k).
TEST_F(GrammarReply, SampledTopKPicksAsFromEveryAllowedToken) {
  Engine* engine = engine_.get();
  const tokenizer::Tokenizer& tok = engine->model().tokenizer();
  const std::vector<int32_t> ends = engine->model().eos_ids();
  const std::set<std::string> answers = answer_language();
  struct Case {
    std::string grammar;
    std::function<bool(const std::string&)> prefix, complete;
  };
  const auto words = [](const std::string& t) {
    return t.size() <= 30 && std::all_of(t.begin(), t.end(), [](char c) {
             return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == ' ';
           });
  };
  const Case cases[] = {
      {kAnswerGrammar, [&](const std::string& t) { return is_prefix_of_some(answers, t); },
       [&](const std::string& t) { return answers.count(t) > 0; }},
      {"root ::= [a-z0-9 ]{1,30}", words,
       [&](const std::string& t) { return !t.empty() && words(t); }},
  };
  for (const Case& c : cases) {
    std::set<std::string> seen;
    for (uint64_t seed = 0; seed < 12; ++seed) {
      GenerateOptions g;
      g.sampling.temperature = 1.5f;
      g.sampling.top_k = 3 + static_cast<int>(seed % 3);
      g.sampling.top_p = 0.9f;
      g.sampling.min_p = 0.01f;
      g.sampling.repeat_penalty = 1.3f;
      g.sampling.seed = seed;
      g.max_tokens = 40;
      g.grammar = c.grammar;
      engine->reset();
      const TurnStats s = engine->send_raw("w260 w270", g);
      seen.insert(s.text);

      Sampler reference(g.sampling);
      Session session(engine->model_ptr(), engine->backend(), 64);
      std::vector<int32_t> context = s.prompt_ids;
      std::span<const float> logits = session.eval(s.prompt_ids);
      std::string text;
      for (size_t step = 0; step < s.generated_ids.size(); ++step) {
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < static_cast<int32_t>(tok.vocab_size()); ++id) {
          const bool end = std::find(ends.begin(), ends.end(), id) != ends.end();
          if (end ? c.complete(text)
                  : !tok.is_control(id) && !tok.token_piece(id).empty() &&
                        c.prefix(text + tok.token_piece(id)))
            allowed.push_back(id);
        }
        const int32_t want = reference.sample(logits, context, &allowed);
        ASSERT_EQ(s.generated_ids[step], want) << c.grammar << " seed " << seed << " step " << step;
        if (std::find(ends.begin(), ends.end(), want) != ends.end()) break;
        text += tok.token_piece(want);
        context.push_back(want);
        logits = session.eval(std::span<const int32_t>(&want, 1));
      }
      EXPECT_EQ(text, s.text);
    }
    EXPECT_GT(seen.size(), 3u) << c.grammar;
  }
}

// The engine keeps a grammar's constraint (and the vocabulary's trie) from one turn to the next:
// replies held to grammars A, B, A, A on one engine equal those of a new engine for each.
TEST_F(GrammarReply, KeptConstraintsAnswerAsNewOnes) {
  const std::string json =
      std::string("root ::= \"{\" ws \"\\\"k\\\"\" ws \":\" ws [0-9]+ ws \"}\"\n") +
      "ws ::= [ \\n]{0,2}";
  const std::vector<std::pair<std::string, uint64_t>> turns = {
      {kAnswerGrammar, 1}, {json, 2}, {kAnswerGrammar, 3}, {kAnswerGrammar, 4}};
  const auto options = [](const std::string& grammar, uint64_t seed) {
    GenerateOptions g;
    g.sampling.temperature = 1.2f;
    g.sampling.top_k = 0;
    g.sampling.seed = seed;
    g.max_tokens = 24;
    g.grammar = grammar;
    return g;
  };
  std::set<std::string> texts;
  for (const auto& [grammar, seed] : turns) {
    engine_->reset();
    const TurnStats kept = engine_->send_raw("w260", options(grammar, seed));
    EngineOptions o;
    o.threads = 2;
    const TurnStats fresh =
        Engine::load((dir_ / "tiny.gguf").string(), o)->send_raw("w260", options(grammar, seed));
    EXPECT_EQ(kept.generated_ids, fresh.generated_ids) << "seed " << seed;
    texts.insert(kept.text);
  }
  EXPECT_EQ(texts.size(), turns.size());  // the turns differ: each one tells
}

// A lazy grammar (grammar_triggers): the reply is the free greedy one until a trigger's text
// appears in it, then held to the grammar from the trigger's start on: the trigger's text and
// the rest of its token first, then only what the grammar allows. A trigger that is a whole
// token's text and one across two tokens; a trigger whose text cannot start the grammar leaves
// the reply free; a trigger that must open the reply holds there and not later.
TEST_F(GrammarReply, LazyGrammarHoldsFromItsTrigger) {
  GenerateOptions free;
  free.sampling.temperature = 0;
  free.max_tokens = 12;
  for (int32_t id = 259; id < 300; ++id) free.sampling.logit_bias.push_back({id, 8.0f});  // words
  const TurnStats plain = engine_->send_raw("w260 w261", free);
  const tokenizer::Tokenizer& tok = engine_->model().tokenizer();
  std::vector<std::string> pieces;
  for (int32_t id : plain.generated_ids) pieces.push_back(tok.token_piece(id));
  const auto printable = [](const std::string& text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == ' ';
    });
  };
  size_t k = 1;  // the token whose text completes the trigger
  while (k + 1 < pieces.size() && !(printable(pieces[k - 1]) && printable(pieces[k]))) ++k;
  ASSERT_LT(k + 1, pieces.size()) << "no two plain words in the greedy reply";
  std::string before;
  for (size_t i = 0; i < k; ++i) before += pieces[i];
  for (const bool across : {false, true}) {
    const std::string trigger =
        across ? pieces[k - 1].substr(pieces[k - 1].size() - 1) + pieces[k].substr(0, 1)
               : pieces[k];
    const size_t at = across ? before.size() - 1 : before.size();
    if ((before + pieces[k]).find(trigger) != at) continue;  // it came earlier: not this case
    const std::string held = (before + pieces[k]).substr(at);
    GenerateOptions lazy = free;
    lazy.max_tokens = 40;
    lazy.grammar = "root ::= \"" + held + "\" \"x\"{5}";
    lazy.grammar_triggers = {"no such text", trigger};
    engine_->reset();
    const TurnStats s = engine_->send_raw("w260 w261", lazy);
    ASSERT_EQ(s.stop_reason, StopReason::eos) << s.text;
    ASSERT_GT(s.generated_ids.size(), k + 1);
    EXPECT_TRUE(std::equal(s.generated_ids.begin(), s.generated_ids.begin() + k + 1,
                           plain.generated_ids.begin()))
        << "trigger '" << trigger << "'";
    EXPECT_EQ(s.text, before + pieces[k] + "xxxxx") << "trigger '" << trigger << "'";
  }
  GenerateOptions stray = free;
  stray.grammar = "root ::= \"zzz\"";
  stray.grammar_triggers = {pieces[k]};
  engine_->reset();
  EXPECT_EQ(engine_->send_raw("w260 w261", stray).generated_ids, plain.generated_ids);

  // At the start only (grammar_triggers_at_start): the reply's first word, not a later one.
  GenerateOptions at_start = free;
  at_start.max_tokens = 40;
  at_start.grammar_triggers_at_start = true;
  at_start.grammar = "root ::= \"" + pieces[0] + "\" \"x\"{5}";
  at_start.grammar_triggers = {pieces[0]};
  if (printable(pieces[0])) {
    engine_->reset();
    const TurnStats first = engine_->send_raw("w260 w261", at_start);
    EXPECT_EQ(first.text, pieces[0] + "xxxxx");
    EXPECT_EQ(first.generated_ids.front(), plain.generated_ids.front());
  }
  at_start.grammar = "root ::= \"" + pieces[k] + "\" \"x\"{5}";
  at_start.grammar_triggers = {pieces[k]};
  if ((before + pieces[k]).find(pieces[k]) == before.size() && k > 0) {
    engine_->reset();
    at_start.max_tokens = free.max_tokens;
    EXPECT_EQ(engine_->send_raw("w260 w261", at_start).generated_ids, plain.generated_ids);
  }
}

}  // namespace
}  // namespace oxi::llm::test
