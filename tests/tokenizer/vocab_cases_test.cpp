// The llama.cpp vocabulary test cases (../shared/data/vocab): every string of each
// ggml-vocab-NAME.gguf.inp must encode to exactly the ids its .out lists (the reference Hugging
// Face tokenizer's output, without BOS/EOS).
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lib/formats/gguf.h"
#include "lib/tokenizer/load.h"
#include "tests/common/test_data.h"

namespace oxi::tokenizer {
namespace {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The .inp strings: each one is followed by "\n__ggml_vocab_test__\n".
std::vector<std::string> read_cases(const std::filesystem::path& path) {
  const std::string all = read_text(path);
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<std::string> cases;
  size_t pos = 0;
  while (pos < all.size()) {
    const size_t next = all.find(separator, pos);
    if (next == std::string::npos) break;
    cases.push_back(all.substr(pos, next - pos));
    pos = next + separator.size();
  }
  return cases;
}

std::vector<std::vector<int32_t>> read_expected(const std::filesystem::path& path) {
  std::vector<std::vector<int32_t>> expected;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::vector<int32_t> ids;
    for (int32_t id; s >> id;) ids.push_back(id);
    expected.push_back(std::move(ids));
  }
  return expected;
}

std::string ids_string(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s.append(" ").append(std::to_string(id));
  return s;
}

class VocabCases : public ::testing::TestWithParam<const char*> {};

TEST_P(VocabCases, EncodesEveryCaseExactly) {
  OXI_REQUIRE_SHARED_DATA(data);
  const auto gguf_path = data / "vocab" / ("ggml-vocab-" + std::string(GetParam()) + ".gguf");
  if (!std::filesystem::exists(gguf_path)) GTEST_SKIP() << gguf_path << " not found";
  const gguf::Reader reader(gguf_path);
  const Tokenizer tok = from_gguf(reader);
  const auto cases = read_cases(gguf_path.string() + ".inp");
  const auto expected = read_expected(gguf_path.string() + ".out");
  ASSERT_EQ(cases.size(), expected.size());
  ASSERT_FALSE(cases.empty());
  int failures = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto ids = tok.encode(cases[i], /*add_bos=*/false);
    EXPECT_EQ(ids, expected[i]) << "case " << i << " '" << cases[i] << "'\n got     "
                                << ids_string(ids) << "\n expected" << ids_string(expected[i]);
    failures += ids != expected[i];
  }
  EXPECT_EQ(failures, 0);
}

INSTANTIATE_TEST_SUITE_P(Shared, VocabCases,
                         ::testing::Values("llama-spm", "gpt-2", "mpt", "starcoder", "refact",
                                           "falcon", "deepseek-llm", "bert-bge"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

// Vocabularies without expected ids: they load, and text round-trips.
class VocabLoads : public ::testing::TestWithParam<const char*> {};

TEST_P(VocabLoads, LoadsAndRoundTrips) {
  OXI_REQUIRE_SHARED_DATA(data);
  const auto gguf_path = data / "vocab" / ("ggml-vocab-" + std::string(GetParam()) + ".gguf");
  if (!std::filesystem::exists(gguf_path)) GTEST_SKIP() << gguf_path << " not found";
  const gguf::Reader reader(gguf_path);
  const Tokenizer tok = from_gguf(reader);
  EXPECT_GT(tok.vocab_size(), 1000u);
  const std::string text = "Hello world, this is a test of 1234 tokens.";
  const auto ids = tok.encode(text, false);
  EXPECT_FALSE(ids.empty());
  EXPECT_EQ(tok.decode(ids), text);
}

INSTANTIATE_TEST_SUITE_P(Shared, VocabLoads,
                         ::testing::Values("gpt-neox", "baichuan", "llama-spm", "gpt-2", "mpt",
                                           "starcoder", "refact", "falcon", "deepseek-llm"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

// A BPE vocabulary's BOS default follows its pre-tokenizer name as llama.cpp's does (Llama 3's
// names add BOS, gpt-2's not), and tokenizer.ggml.add_bos_token overrides it either way.
TEST(VocabSpecial, BpeBosDefaultFollowsThePreTokenizerName) {
  const test::TempDir dir;
  const auto load = [&](const std::string& pre, std::optional<bool> add_bos) {
    gguf::Writer w;
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", pre);
    w.set_string_array("tokenizer.ggml.tokens", {"<|begin|>", "a", "b", "ab"});
    w.set_i32_array("tokenizer.ggml.token_type", {3, 1, 1, 1});
    w.set_string_array("tokenizer.ggml.merges", {"a b"});
    w.set_u32("tokenizer.ggml.bos_token_id", 0);
    if (add_bos) w.set_bool("tokenizer.ggml.add_bos_token", *add_bos);
    w.write(dir / "vocab.gguf");
    return from_gguf(gguf::Reader(dir / "vocab.gguf"));
  };
  const Tokenizer llama3 = load("llama-bpe", std::nullopt);
  EXPECT_TRUE(llama3.add_bos());
  EXPECT_EQ(llama3.encode("ab", true), (std::vector<int32_t>{0, 3}));
  EXPECT_TRUE(load("chameleon", std::nullopt).add_bos());
  EXPECT_FALSE(load("gpt-2", std::nullopt).add_bos());
  EXPECT_FALSE(load("llama-bpe", false).add_bos());
  EXPECT_TRUE(load("gpt-2", true).add_bos());
}

// GGUF has no strip flags; llama.cpp's loader gives Phi-3's special tokens rstrip (but <unk>,
// <s> and <|endoftext|>) by general.name, and so does this one.
TEST(VocabSpecial, Phi3SpecialTokensSwallowTheWhitespaceAfterThem) {
  const test::TempDir dir;
  const auto load = [&](const std::string& name) {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "<|user|>", "<|endoftext|>"};
    std::vector<int32_t> types = {2, 3, 3, 3, 3};
    for (int b = 0; b < 256; ++b) {
      char text[8];
      std::snprintf(text, sizeof text, "<0x%02X>", b);
      tokens.emplace_back(text);
      types.push_back(6);
    }
    gguf::Writer w;
    w.set_string("general.name", name);
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_bool("tokenizer.ggml.add_space_prefix", false);
    w.write(dir / "vocab.gguf");
    return from_gguf(gguf::Reader(dir / "vocab.gguf"));
  };
  using Ids = std::vector<int32_t>;
  const auto join = [](Ids a, const Ids& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  const Tokenizer phi3 = load("Phi-3-mini-4k-instruct");
  EXPECT_EQ(phi3.encode("<|user|>\n hi</s>\n", false, true),
            join(join({3}, phi3.encode("hi", false)), {2}));
  EXPECT_EQ(phi3.encode("<|endoftext|>\n", false, true), join({4}, phi3.encode("\n", false)));
  const Tokenizer other = load("Llama-2-7b");
  EXPECT_EQ(other.encode("<|user|>\n", false, true), join({3}, other.encode("\n", false)));
}

TEST(VocabSpecial, BertAddsClsAndSep) {
  OXI_REQUIRE_SHARED_DATA(data);
  const auto path = data / "vocab" / "ggml-vocab-bert-bge.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found";
  const Tokenizer tok = from_gguf(gguf::Reader(path));
  EXPECT_TRUE(tok.add_bos());
  const auto ids = tok.encode("hello world", true);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), 101);
  EXPECT_EQ(ids.back(), 102);
  EXPECT_EQ(tok.decode(ids), "hello world");
}

TEST(VocabSpecial, Gpt2ParsesEndOfTextOnlyWhenAsked) {
  OXI_REQUIRE_SHARED_DATA(data);
  const auto path = data / "vocab" / "ggml-vocab-gpt-2.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found";
  const Tokenizer tok = from_gguf(gguf::Reader(path));
  const auto parsed = tok.encode("Hi<|endoftext|>", false, /*parse_special=*/true);
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[1], 50256);
  EXPECT_TRUE(tok.is_control(50256));
  EXPECT_EQ(tok.eot(), 50256);
  const auto plain = tok.encode("Hi<|endoftext|>", false, /*parse_special=*/false);
  EXPECT_GT(plain.size(), 2u);
  EXPECT_EQ(tok.decode(plain), "Hi<|endoftext|>");
  EXPECT_EQ(tok.decode(parsed), "Hi");
  EXPECT_EQ(tok.token_piece(50256), "<|endoftext|>");
}

TEST(VocabSpecial, LlamaSpmBosAndByteFallback) {
  OXI_REQUIRE_SHARED_DATA(data);
  const auto path = data / "vocab" / "ggml-vocab-llama-spm.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found";
  const Tokenizer tok = from_gguf(gguf::Reader(path));
  EXPECT_TRUE(tok.add_bos());
  const auto ids = tok.encode("Hello", true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 1);
  // 🦙 is not in the vocabulary: four byte tokens whose pieces join to its UTF-8.
  const auto llama = tok.encode("🦙", false);
  std::string joined;
  for (int32_t id : llama) joined += tok.token_piece(id);
  EXPECT_EQ(joined, " 🦙");
  EXPECT_EQ(tok.decode(llama), "🦙");
}

}  // namespace
}  // namespace oxi::tokenizer
