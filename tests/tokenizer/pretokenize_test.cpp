#include "lib/tokenizer/pretokenize.h"

#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lib/tokenizer/unicode.h"
#include "lib/tokenizer/unicode_tables.h"

namespace oxi::tokenizer {
namespace {

std::vector<std::string> words(PreTokenizer kind, std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view w : pretokenize(kind, text)) out.emplace_back(w);
  return out;
}

using Words = std::vector<std::string>;

TEST(Pretokenize, Gpt2) {
  EXPECT_EQ(words(PreTokenizer::gpt2, "Hello world"), (Words{"Hello", " world"}));
  EXPECT_EQ(words(PreTokenizer::gpt2, "I've  been\n\nthere 123!!"),
            (Words{"I", "'ve", " ", " been", "\n", "\n", "there", " 123", "!!"}));
  // Contractions are case-sensitive in GPT-2's pattern.
  EXPECT_EQ(words(PreTokenizer::gpt2, "I'VE"), (Words{"I", "'", "VE"}));
  EXPECT_EQ(words(PreTokenizer::gpt2, "a  "), (Words{"a", "  "}));
  EXPECT_EQ(words(PreTokenizer::gpt2, "\tHi"), (Words{"\t", "Hi"}));
  EXPECT_EQ(words(PreTokenizer::gpt2, " Führer 🦙."), (Words{" Führer", " 🦙."}));
  EXPECT_TRUE(pretokenize(PreTokenizer::gpt2, "").empty());
}

TEST(Pretokenize, Llama3) {
  EXPECT_EQ(words(PreTokenizer::llama3, "I've  been\n\nthere 123!!"),
            (Words{"I", "'ve", " ", " been", "\n\n", "there", " ", "123", "!!"}));
  EXPECT_EQ(words(PreTokenizer::llama3, "I'VE 12345"), (Words{"I", "'VE", " ", "123", "45"}));
  EXPECT_EQ(words(PreTokenizer::llama3, "(hello) \n x"), (Words{"(hello", ")", " \n", " x"}));
  EXPECT_EQ(words(PreTokenizer::llama3, "!!\n\nok"), (Words{"!!\n\n", "ok"}));
}

TEST(Pretokenize, Qwen2SplitsDigits) {
  EXPECT_EQ(words(PreTokenizer::qwen2, "a 123"), (Words{"a", " ", "1", "2", "3"}));
}

TEST(Pretokenize, StarcoderSplitsDigitsFirst) {
  EXPECT_EQ(words(PreTokenizer::starcoder, "x 42"), (Words{"x", " ", "4", "2"}));
}

TEST(Pretokenize, DeepseekLlm) {
  EXPECT_EQ(words(PreTokenizer::deepseek_llm, "Hello, 世界 42\n"),
            (Words{"Hello", ",", " ", "世界", " ", "42", "\n"}));
}

TEST(Pretokenize, FalconPunctuationRuns) {
  EXPECT_EQ(words(PreTokenizer::falcon, "a+=b 12345"), (Words{"a", "+=", "b", " ", "123", "45"}));
}

TEST(Pretokenize, InvalidUtf8StaysInPlace) {
  const std::string text =
      "ab\xFF"
      "cd \xE2\x82";
  std::string joined;
  for (std::string_view w : pretokenize(PreTokenizer::gpt2, text)) joined += w;
  EXPECT_EQ(joined, text);
}

TEST(Pretokenize, GgufNames) {
  EXPECT_EQ(pre_tokenizer_from_gguf_name("gpt-2"), PreTokenizer::gpt2);
  EXPECT_EQ(pre_tokenizer_from_gguf_name("llama-bpe"), PreTokenizer::llama3);
  EXPECT_EQ(pre_tokenizer_from_gguf_name("refact"), PreTokenizer::starcoder);
  EXPECT_EQ(pre_tokenizer_from_gguf_name("tekken"), PreTokenizer::tekken);
  EXPECT_EQ(pre_tokenizer_from_gguf_name("llama4"), PreTokenizer::gpt4o);
  EXPECT_EQ(pre_tokenizer_from_gguf_name("grok-2"), PreTokenizer::qwen2);
  EXPECT_EQ(pre_tokenizer_from_gguf_name("bailingmoe"), PreTokenizer::qwen2);
  EXPECT_EQ(pre_tokenizer_from_gguf_name("deepseek-v3"), PreTokenizer::deepseek_v3);
  EXPECT_EQ(pre_tokenizer_from_gguf_name("hunyuan-dense"), PreTokenizer::deepseek_v3);
  EXPECT_EQ(pre_tokenizer_from_gguf_name("afmoe"), PreTokenizer::afmoe);
  EXPECT_EQ(pre_tokenizer_from_gguf_name("qwen35"), PreTokenizer::qwen35);
  EXPECT_EQ(pre_tokenizer_from_gguf_name("no-such-thing"), std::nullopt);
  // llama.cpp keeps whole-token words for Llama 3's and Tekken's names only.
  EXPECT_TRUE(gguf_pre_tokenizer_ignores_merges("llama-bpe"));
  EXPECT_TRUE(gguf_pre_tokenizer_ignores_merges("tekken"));
  EXPECT_FALSE(gguf_pre_tokenizer_ignores_merges("dbrx"));
  EXPECT_FALSE(gguf_pre_tokenizer_ignores_merges("gpt-4o"));
  // Its BOS default: those names and chameleon.
  EXPECT_TRUE(gguf_pre_tokenizer_adds_bos("llama-bpe"));
  EXPECT_TRUE(gguf_pre_tokenizer_adds_bos("tekken"));
  EXPECT_TRUE(gguf_pre_tokenizer_adds_bos("chameleon"));
  EXPECT_FALSE(gguf_pre_tokenizer_adds_bos("gpt-2"));
  EXPECT_FALSE(gguf_pre_tokenizer_adds_bos("qwen2"));
  EXPECT_EQ(pre_tokenizer_from_gguf_name("chameleon"), PreTokenizer::chameleon);
  EXPECT_EQ(pre_tokenizer_from_gguf_name("superbpe"), PreTokenizer::superbpe);
  // Newer llama.cpp names for patterns already here.
  EXPECT_EQ(pre_tokenizer_from_gguf_name("solar-open"), PreTokenizer::qwen2);
  EXPECT_EQ(pre_tokenizer_from_gguf_name("kanana2"), PreTokenizer::gpt4o);
  EXPECT_EQ(pre_tokenizer_from_gguf_name("modern-bert"), PreTokenizer::gpt2);
  EXPECT_EQ(pre_tokenizer_from_gguf_name("jina-v5-nano"), PreTokenizer::llama3);
  EXPECT_TRUE(gguf_pre_tokenizer_ignores_merges("jina-v5-nano"));
}

// Tekken's and o200k's cased words: a word may start upper case and run on lower, not back.
TEST(Pretokenize, CasedWords) {
  EXPECT_EQ(words(PreTokenizer::tekken, "camelCase XMLHttp 2024"),
            (Words{"camel", "Case", " XMLHttp", " ", "2", "0", "2", "4"}));
  EXPECT_EQ(words(PreTokenizer::gpt4o, "HELLO'S don't 12345"),
            (Words{"HELLO'S", " don't", " ", "123", "45"}));
}

// Every pre-tokenizer against its regexes run by Perl's regex engine on 300 strings of mixed
// scripts, digits, punctuation, symbols, contractions and whitespace
// (tests/reference/gen_pretokenize_cases.py; the same Unicode version as unicode_tables.h).
TEST(Pretokenize, MatchesItsRegexesRunByPerl) {
  std::ifstream in(std::string(OXI_TEST_SOURCE_DIR) + "/pretokenize_cases.json");
  ASSERT_TRUE(in.good());
  const nlohmann::json cases = nlohmann::json::parse(in);
  EXPECT_EQ(cases["unicode_version"].get<std::string>(), unicode_tables::kUnicodeVersion);
  const auto texts = cases["texts"].get<std::vector<std::string>>();
  ASSERT_GE(texts.size(), 300u);
  const std::pair<const char*, PreTokenizer> kinds[] = {
      {"gpt2", PreTokenizer::gpt2},
      {"llama3", PreTokenizer::llama3},
      {"qwen2", PreTokenizer::qwen2},
      {"qwen35", PreTokenizer::qwen35},
      {"tekken", PreTokenizer::tekken},
      {"gpt4o", PreTokenizer::gpt4o},
      {"seed_coder", PreTokenizer::seed_coder},
      {"viking", PreTokenizer::viking},
      {"deepseek_llm", PreTokenizer::deepseek_llm},
      {"deepseek_coder", PreTokenizer::deepseek_coder},
      {"deepseek_v3", PreTokenizer::deepseek_v3},
      {"afmoe", PreTokenizer::afmoe},
      {"falcon", PreTokenizer::falcon},
      {"starcoder", PreTokenizer::starcoder},
      {"chameleon", PreTokenizer::chameleon},
      {"superbpe", PreTokenizer::superbpe},
      {"bloom", PreTokenizer::bloom},
      {"bpe_default", PreTokenizer::bpe_default},
  };
  for (const auto& [name, kind] : kinds) {
    // The one-regex kinds whose pattern Perl ran as written (not with \x{..} escapes): it is
    // the one a tokenizer.json must name.
    const auto regexes = cases["kinds"][name]["regexes"].get<std::vector<std::string>>();
    const auto steps = pre_tokenizer_steps(kind);
    if (steps.size() == 1 && regexes.size() == 1 && regexes[0].find("\\x{") == std::string::npos) {
      EXPECT_EQ(steps[0], regexes[0]) << name;
    }
    const auto& lengths = cases["kinds"][name]["lengths"];
    ASSERT_EQ(lengths.size(), texts.size()) << name;
    for (size_t i = 0; i < texts.size(); ++i) {
      std::vector<size_t> got;  // each word's length in code points
      for (std::string_view w : pretokenize(kind, texts[i])) got.push_back(decode_utf8(w).size());
      EXPECT_EQ(got, lengths[i].get<std::vector<size_t>>()) << name << ": \"" << texts[i] << '"';
    }
  }
}

// The passes that depend on where a run ends (digit groups counted from a run's end, trailing
// whitespace) and chameleon's space pairs on runs of 100 000: the same cuts as on short ones,
// each piece scanned once (matchers that rescanned the run at every position took seconds).
TEST(Pretokenize, LongRunsAreCutFromTheirEnd) {
  const std::string digits(100001, '7');
  const Words afmoe = words(PreTokenizer::afmoe, "x" + digits + "y");
  ASSERT_EQ(afmoe.size(), 2 + 1 + 100001 / 3);
  EXPECT_EQ(afmoe[1], "77");  // 100001 = 2 + 3 x 33333
  for (size_t i = 2; i + 1 < afmoe.size(); ++i) ASSERT_EQ(afmoe[i], "777") << i;
  const Words superbpe = words(PreTokenizer::superbpe, "x" + digits);
  ASSERT_EQ(superbpe.size(), 2 + 100001 / 3);
  EXPECT_EQ(superbpe[1], "77");
  EXPECT_EQ(superbpe.back(), "777");
  const std::string spaces(100000, ' ');
  EXPECT_EQ(words(PreTokenizer::deepseek_llm, "a" + spaces), (Words{"a", spaces}));
  EXPECT_EQ(words(PreTokenizer::chameleon, spaces), Words(25000, "    "));
}

// Every kind cuts any byte string, invalid UTF-8 included, into non-empty pieces that are the
// text itself, in order: random bytes, and random mixes of ASCII and multi-byte characters.
TEST(Pretokenize, EveryKindTilesAnyBytes) {
  const PreTokenizer kinds[] = {
      PreTokenizer::none,           PreTokenizer::gpt2,        PreTokenizer::llama3,
      PreTokenizer::qwen2,          PreTokenizer::qwen35,      PreTokenizer::seed_coder,
      PreTokenizer::tekken,         PreTokenizer::gpt4o,       PreTokenizer::deepseek_llm,
      PreTokenizer::deepseek_coder, PreTokenizer::deepseek_v3, PreTokenizer::afmoe,
      PreTokenizer::falcon,         PreTokenizer::starcoder,   PreTokenizer::bloom,
      PreTokenizer::viking,         PreTokenizer::bpe_default, PreTokenizer::chameleon,
      PreTokenizer::superbpe};
  const std::string alphabet[] = {"a",
                                  "Z",
                                  "7",
                                  " ",
                                  "\n",
                                  "\r",
                                  "\t",
                                  "'",
                                  "s",
                                  "!",
                                  "\xC3\xA9",
                                  "\xE4\xB8\xAD",
                                  "\xF0\x9F\xA6\x99",
                                  "\xCC\x81",
                                  "\xD9\xA3",
                                  "\xE3\x80\x80",
                                  "\xFF",
                                  "\xC3",
                                  "\x80",
                                  "\xE4\xB8"};
  uint32_t state = 12345;
  const auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return state >> 8;
  };
  for (int round = 0; round < 400; ++round) {
    std::string text;
    const size_t length = next() % 40;
    for (size_t i = 0; i < length; ++i) {
      if (round % 2 == 0)
        text += static_cast<char>(next() & 0xFF);
      else
        text += alphabet[next() % std::size(alphabet)];
    }
    for (PreTokenizer kind : kinds) {
      std::string joined;
      for (std::string_view w : pretokenize(kind, text)) {
        EXPECT_FALSE(w.empty()) << pre_tokenizer_name(kind);
        EXPECT_EQ(w.data(), text.data() + joined.size()) << pre_tokenizer_name(kind);
        joined += w;
      }
      EXPECT_EQ(joined, text) << pre_tokenizer_name(kind);
    }
  }
}

TEST(Unicode, Categories) {
  EXPECT_EQ(category(U'A'), Category::Lu);
  EXPECT_TRUE(is_letter(U'é'));
  EXPECT_TRUE(is_letter(U'中'));
  EXPECT_TRUE(is_number(U'٣'));
  EXPECT_TRUE(is_punctuation(U'。'));
  EXPECT_TRUE(is_symbol(U'$'));
  EXPECT_TRUE(is_whitespace(0x3000));
  EXPECT_FALSE(is_whitespace(U'x'));
  EXPECT_EQ(category(0x10FFFF), Category::Cn);
}

TEST(Unicode, NfdAndLowercase) {
  std::u32string out;
  append_nfd(out, U'é');
  EXPECT_EQ(out, U"e\u0301");
  out.clear();
  append_nfd(out, U'한');
  EXPECT_EQ(out, U"\u1112\u1161\u11AB");
  out.clear();
  append_lowercase(out, U'İ');
  EXPECT_EQ(out, U"i\u0307");
  out.clear();
  append_lowercase(out, U'Ä');
  EXPECT_EQ(out, U"ä");
}

// NFC and NFKC against Python's unicodedata (tests/reference/gen_nfc_cases.py; the same Unicode
// version as lib/tokenizer/unicode_tables.h).
TEST(Unicode, NfcMatchesPythonUnicodedata) {
  std::ifstream in(std::string(OXI_TEST_SOURCE_DIR) + "/nfc_cases.json");
  ASSERT_TRUE(in.good());
  const nlohmann::json cases = nlohmann::json::parse(in);
  EXPECT_EQ(cases["unicode_version"].get<std::string>(), unicode_tables::kUnicodeVersion);
  ASSERT_GE(cases["cases"].size(), 400u);
  size_t changed = 0, changed_k = 0;
  for (const auto& c : cases["cases"]) {
    const std::string text = c["text"].get<std::string>(), expected = c["nfc"].get<std::string>();
    const std::string expected_k = c["nfkc"].get<std::string>();
    EXPECT_EQ(encode_utf8(nfc(decode_utf8(text))), expected) << text;
    EXPECT_EQ(encode_utf8(nfkc(decode_utf8(text))), expected_k) << text;
    changed += text != expected;
    changed_k += text != expected_k;
  }
  EXPECT_GT(changed, 100u);  // most cases compose, reorder or decompose something
  EXPECT_GT(changed_k, 300u);
  EXPECT_EQ(combining_class(U'a'), 0);
  EXPECT_EQ(combining_class(0x0301), 230);
  EXPECT_EQ(combining_class(0x0323), 220);
}

TEST(Unicode, Utf8RoundTrip) {
  const std::string text = "aé中🦙";
  EXPECT_EQ(decode_utf8(text), U"aé中🦙");
  EXPECT_EQ(encode_utf8(decode_utf8(text)), text);
  EXPECT_EQ(decode_utf8("\xC3"), U"\uFFFD");
}

}  // namespace
}  // namespace oxi::tokenizer
