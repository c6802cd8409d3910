// Whisper's tiktoken tokenizer: special-token ids, GPT-2's reference token ids (gpt2.tiktoken
// ranks are GPT-2's ids), agreement with whisper.cpp's vocabulary, and round trips.
#include "lib/whisper/tiktoken_tokenizer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "lib/core/error.h"
#include "lib/formats/utf8.h"
#include "lib/formats/whisper_ggml.h"
#include "tests/common/test_data.h"

namespace oxi::whisper {
namespace {

constexpr std::string_view kJfk =
    " And so my fellow Americans, ask not what your country can do for you, ask what you can do "
    "for your country.";

TEST(WhisperVocab, MultilingualSpecialIds) {
  const WhisperVocab v = standard_whisper_vocab(kMultilingualRankCount, 99);
  EXPECT_EQ(v.eot, 50257);
  EXPECT_EQ(v.sot, 50258);
  EXPECT_EQ(v.language_token("en"), 50259);
  EXPECT_EQ(v.language_token("zh"), 50260);
  EXPECT_EQ(v.language_token("su"), 50357);
  EXPECT_EQ(v.language_token("yue"), std::nullopt);
  EXPECT_EQ(v.translate, 50358);
  EXPECT_EQ(v.transcribe, 50359);
  EXPECT_EQ(v.sot_lm, 50360);
  EXPECT_EQ(v.sot_prev, 50361);
  EXPECT_EQ(v.no_speech, 50362);
  EXPECT_EQ(v.no_timestamps, 50363);
  EXPECT_EQ(v.timestamp_begin, 50364);
  EXPECT_EQ(v.n_vocab, 51865);
  EXPECT_TRUE(v.multilingual);
  EXPECT_EQ(v.special_text(50364), "<|0.00|>");
  EXPECT_EQ(v.special_text(50364 + 1500), "<|30.00|>");
  EXPECT_EQ(v.special_text(50364 + 62), "<|1.24|>");
  EXPECT_EQ(v.special_text(50259), "<|en|>");
  EXPECT_EQ(v.language_of(50261), "de");
  EXPECT_DOUBLE_EQ(v.timestamp_seconds(50364 + 150), 3.0);
}

TEST(WhisperVocab, EnglishAndLargeV3Layouts) {
  const WhisperVocab en = standard_whisper_vocab(kEnglishRankCount, 99);
  EXPECT_EQ(en.eot, 50256);
  EXPECT_EQ(en.sot, 50257);
  EXPECT_EQ(en.language_token("en"), 50258);
  EXPECT_EQ(en.translate, 50357);
  EXPECT_EQ(en.transcribe, 50358);
  EXPECT_EQ(en.sot_lm, 50359);
  EXPECT_EQ(en.sot_prev, 50360);
  EXPECT_EQ(en.no_speech, 50361);
  EXPECT_EQ(en.no_timestamps, 50362);
  EXPECT_EQ(en.timestamp_begin, 50363);
  EXPECT_EQ(en.n_vocab, 51864);
  EXPECT_FALSE(en.multilingual);

  const auto v3 = whisper_vocab_for_size(51866);
  ASSERT_TRUE(v3.has_value());
  EXPECT_EQ(v3->language_token("yue"), 50358);
  EXPECT_EQ(v3->translate, 50359);
  EXPECT_EQ(v3->no_timestamps, 50364);
  EXPECT_EQ(v3->timestamp_begin, 50365);
  EXPECT_EQ(whisper_vocab_for_size(51864)->eot, 50256);
  EXPECT_EQ(whisper_vocab_for_size(51865)->eot, 50257);
  EXPECT_FALSE(whisper_vocab_for_size(32000).has_value());
  EXPECT_EQ(whisper_languages().size(), 100u);
  EXPECT_EQ(whisper_languages()[0].name, "english");
}

TEST(TiktokenTokenizer, LoadsBothVocabularies) {
  OXI_REQUIRE_SHARED_DATA(data);
  const TiktokenTokenizer en(data / "whisper" / "gpt2.tiktoken");
  EXPECT_EQ(en.n_ranks(), 50256);
  EXPECT_EQ(en.n_vocab(), 51864);
  EXPECT_EQ(en.vocab().no_timestamps, 50362);
  const TiktokenTokenizer multi(data / "whisper" / "multilingual.tiktoken");
  EXPECT_EQ(multi.n_ranks(), 50257);
  EXPECT_EQ(multi.n_vocab(), 51865);
  EXPECT_EQ(multi.token_id("<|startoftranscript|>"), 50258);
  EXPECT_EQ(multi.token_id("<|notimestamps|>"), 50363);
  EXPECT_EQ(multi.token_id("<|0.00|>"), 50364);
  EXPECT_EQ(multi.token_text(50259), "<|en|>");
  const TiktokenTokenizer v3(data / "whisper" / "multilingual.tiktoken", 100);
  EXPECT_EQ(v3.n_vocab(), 51866);
  EXPECT_EQ(v3.token_id("<|yue|>"), 50358);
}

// Every case of llama.cpp's GPT-2 tokenizer test (ids from Hugging Face's GPT-2 tokenizer).
TEST(TiktokenTokenizer, Gpt2MatchesReferenceIds) {
  OXI_REQUIRE_SHARED_DATA(data);
  const TiktokenTokenizer tok(data / "whisper" / "gpt2.tiktoken");
  std::ifstream inp(data / "vocab" / "ggml-vocab-gpt-2.gguf.inp", std::ios::binary);
  std::ifstream outp(data / "vocab" / "ggml-vocab-gpt-2.gguf.out", std::ios::binary);
  ASSERT_TRUE(inp && outp);
  std::stringstream all;
  all << inp.rdbuf();
  const std::string text = all.str();
  const std::string separator = "\n__ggml_vocab_test__\n";
  size_t pos = 0, cases = 0;
  std::string expected_line;
  while (pos < text.size()) {
    const size_t end = text.find(separator, pos);
    ASSERT_NE(end, std::string::npos);
    const std::string input = text.substr(pos, end - pos);
    pos = end + separator.size();
    ASSERT_TRUE(std::getline(outp, expected_line));
    std::vector<int32_t> expected;
    std::istringstream ids(expected_line);
    for (int32_t id; ids >> id;) expected.push_back(id);
    EXPECT_EQ(tok.encode(input), expected) << "input: '" << input << "'";
    EXPECT_EQ(tok.decode(tok.encode(input)), input);
    ++cases;
  }
  EXPECT_EQ(cases, 46u);
}

TEST(TiktokenTokenizer, KnownIdsAndJfkRoundTrip) {
  OXI_REQUIRE_SHARED_DATA(data);
  const TiktokenTokenizer en(data / "whisper" / "gpt2.tiktoken");
  EXPECT_EQ(en.encode("Hello world"), (std::vector<int32_t>{15496, 995}));
  EXPECT_EQ(en.encode(" the"), std::vector<int32_t>{262});
  for (const auto* file : {"gpt2.tiktoken", "multilingual.tiktoken"}) {
    const TiktokenTokenizer tok(data / "whisper" / file);
    const auto ids = tok.encode(kJfk);
    EXPECT_EQ(tok.decode(ids), kJfk) << file;
    EXPECT_LT(ids.size(), 30u) << file;  // words, not bytes
    // Special tokens decode to their text, or vanish with skip_special.
    std::vector<int32_t> framed = {tok.vocab().sot, *tok.vocab().language_token("en"),
                                   tok.vocab().transcribe, tok.vocab().timestamp_begin};
    framed.insert(framed.end(), ids.begin(), ids.end());
    framed.push_back(tok.vocab().eot);
    EXPECT_EQ(tok.decode(framed), "<|startoftranscript|><|en|><|transcribe|><|0.00|>" +
                                      std::string(kJfk) + "<|endoftext|>");
    EXPECT_EQ(tok.decode(framed, true), kJfk);
  }
}

TEST(TiktokenTokenizer, RandomTextRoundTrips) {
  OXI_REQUIRE_SHARED_DATA(data);
  const TiktokenTokenizer tok(data / "whisper" / "multilingual.tiktoken");
  const std::vector<std::string> pieces = {
      " ",     "  ",   "\n",       "\t",   "a",    "Z",      "'s", "'ll",    "123",
      "4",     ",",    "!?",       "é",    "ß",    "日本",   "語", "Привет", "мир",
      "مرحبا", "🙂", "\xF0\x9F", "\xFF", "\x80", "<|en|>", "--"};
  std::mt19937 rng(42);
  std::uniform_int_distribution<size_t> pick(0, pieces.size() - 1), length(0, 40);
  for (int trial = 0; trial < 300; ++trial) {
    std::string text;
    for (size_t n = length(rng); n > 0; --n) text += pieces[pick(rng)];
    const auto ids = tok.encode(text);
    for (int32_t id : ids) ASSERT_LT(id, tok.n_ranks());  // "<|en|>" stays ordinary text
    EXPECT_EQ(tok.decode(ids), text);
  }
}

TEST(TiktokenTokenizer, SameTokensAsWhisperCppVocabulary) {
  OXI_REQUIRE_SHARED_DATA(data);
  for (const auto& [tiktoken, ggml] :
       {std::pair{"multilingual.tiktoken", "for-tests-ggml-tiny.bin"},
        std::pair{"gpt2.tiktoken", "for-tests-ggml-tiny.en.bin"}}) {
    const TiktokenTokenizer tok(data / "whisper" / tiktoken);
    const whisper_ggml::Reader model(data / "whisper" / ggml);
    // whisper.cpp's English files also carry "<|endoftext|>" after the ranks.
    ASSERT_GE(static_cast<int32_t>(model.vocab().size()), tok.n_ranks());
    ASSERT_LE(static_cast<int32_t>(model.vocab().size()), tok.n_ranks() + 1);
    if (static_cast<int32_t>(model.vocab().size()) > tok.n_ranks()) {
      EXPECT_EQ(model.vocab().back(), tok.token_text(tok.vocab().eot));
    }
    EXPECT_EQ(model.hparams().n_vocab, tok.n_vocab());
    // whisper.cpp's converter stored tokens that are not valid UTF-8 on their own (partial
    // characters) as U+FFFD, so only the valid ones are comparable byte for byte.
    size_t compared = 0, mismatched = 0;
    for (int32_t id = 0; id < tok.n_ranks(); ++id) {
      const std::string bytes = tok.token_text(id);
      if (!formats::is_valid_utf8(bytes)) continue;
      ++compared;
      if (model.vocab()[id] != bytes) {
        if (++mismatched < 5) ADD_FAILURE() << ggml << " id " << id;
      }
    }
    EXPECT_EQ(mismatched, 0u) << ggml;
    EXPECT_GT(compared, 48000u) << ggml;
  }
}

TEST(TiktokenTokenizer, MalformedFilesThrow) {
  test::TempDir dir;
  const auto write = [&](const std::string& name, const std::string& text) {
    test::write_file_bytes(dir / name, std::vector<uint8_t>(text.begin(), text.end()));
    return dir / name;
  };
  EXPECT_THROW(TiktokenTokenizer(write("empty.tiktoken", "")), Error);
  EXPECT_THROW(TiktokenTokenizer(write("bad64.tiktoken", "Q*== 0\n")), Error);
  EXPECT_THROW(TiktokenTokenizer(write("short64.tiktoken", "QQQQQ 0\n")), Error);
  EXPECT_THROW(TiktokenTokenizer(write("norank.tiktoken", "QQ==\n")), Error);
  EXPECT_THROW(TiktokenTokenizer(write("gap.tiktoken", "QQ== 0\nQg== 2\n")), Error);
  // All 256 bytes but rank 3 twice.
  std::string dup;
  for (int b = 0; b < 256; ++b) {
    static const char* kAlphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    dup += std::string{kAlphabet[b >> 2], kAlphabet[(b & 3) << 4], '=', '='} + " " +
           std::to_string(b == 4 ? 3 : b) + "\n";
  }
  try {
    TiktokenTokenizer tok(write("dup.tiktoken", dup));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dup.tiktoken"), std::string::npos);
  }
}

}  // namespace
}  // namespace oxi::whisper
