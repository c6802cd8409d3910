// from_hf_json on small tokenizer.json files written here; expected ids worked out by hand.
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lib/core/error.h"
#include "lib/tokenizer/load.h"
#include "tests/common/test_data.h"

namespace oxi::tokenizer {
namespace {

using Ids = std::vector<int32_t>;

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(HfJson, ByteLevelBpeWithAddedTokens) {
  test::TempDir dir;
  write(dir / "tokenizer.json", R"({
    "added_tokens": [{"id": 7, "content": "<|endoftext|>", "special": true}],
    "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "post_processor": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2, "Ġ": 3, "ab": 4, "abc": 5,
                                       "Ġa": 6, "Ġab": 8},
              "merges": ["a b", "ab c", "Ġ a", "Ġa b"]}
  })");
  const Tokenizer tok = load(dir.path());
  EXPECT_EQ(tok.algorithm(), Algorithm::bpe);
  EXPECT_EQ(tok.pre_tokenizer(), PreTokenizer::gpt2);
  EXPECT_EQ(tok.vocab_size(), 9u);
  EXPECT_EQ(tok.encode("abc abc", false), (Ids{5, 3, 5}));
  EXPECT_EQ(tok.encode("ab<|endoftext|>", false, true), (Ids{4, 7}));
  EXPECT_TRUE(tok.is_control(7));
  EXPECT_FALSE(tok.add_bos());
}

TEST(HfJson, SplitPatternSelectsLlama3AndTemplateAddsBos) {
  test::TempDir dir;
  // Llama 3's layout: a Split with its regex, then ByteLevel without a regex; merges as pairs.
  write(dir / "tokenizer.json",
        R"({
    "added_tokens": [{"id": 6, "content": "<|begin_of_text|>", "special": true}],
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|)"
        R"([^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|)"
        R"(\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
       "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]},
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                 {"Sequence": {"id": "A", "type_id": 0}}]},
    "model": {"type": "BPE", "ignore_merges": true,
              "vocab": {"1": 0, "2": 1, "3": 2, "4": 3, "12": 4, "123": 5},
              "merges": [["1", "2"], ["12", "3"]]}
  })");
  const Tokenizer tok = from_hf_json(dir / "tokenizer.json");
  EXPECT_EQ(tok.pre_tokenizer(), PreTokenizer::llama3);
  EXPECT_TRUE(tok.add_bos());
  EXPECT_EQ(tok.bos(), 6);
  // \p{N}{1,3}: "1234" -> "123" + "4".
  EXPECT_EQ(tok.encode("1234", true), (Ids{6, 5, 3}));
}

// Qwen2's tokenizer.json normalizes to NFC first: a decomposed "e" + U+0301 encodes as the
// precomposed "é" does (bytes C3 A9 -> "Ã©" in the byte-level alphabet), not as e + CC 81.
TEST(HfJson, NfcNormalizerComposesFirst) {
  test::TempDir dir;
  write(dir / "tokenizer.json", R"({
    "normalizer": {"type": "NFC"},
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "model": {"type": "BPE", "vocab": {"Ã": 0, "©": 1, "Ã©": 2, "e": 3, "Ì": 4, "ģ": 5, "a": 6},
              "merges": ["Ã ©"]}
  })");
  const Tokenizer tok = load(dir.path());
  EXPECT_EQ(tok.encode("\xC3\xA9", false), (Ids{2}));
  EXPECT_EQ(tok.encode("e\xCC\x81", false), (Ids{2}));
  EXPECT_EQ(tok.encode("ae\xCC\x81", false), (Ids{6, 2}));
  // Without the normalizer the decomposed form stays three byte symbols.
  write(dir / "tokenizer.json", R"({
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "model": {"type": "BPE", "vocab": {"Ã": 0, "©": 1, "Ã©": 2, "e": 3, "Ì": 4, "ģ": 5, "a": 6},
              "merges": ["Ã ©"]}
  })");
  EXPECT_EQ(load(dir.path()).encode("e\xCC\x81", false), (Ids{3, 4, 5}));
}

// An NFKC normalizer: the ligature "ﬁ" (EF AC 81) and a full-width "Ａ" (EF BC A1) encode as
// "fi" and "A" do.
TEST(HfJson, NfkcNormalizerAppliesCompatibilityForms) {
  test::TempDir dir;
  write(dir / "tokenizer.json", R"({
    "normalizer": {"type": "NFKC"},
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "model": {"type": "BPE", "vocab": {"f": 0, "i": 1, "fi": 2, "A": 3, "ï": 4, "¬": 5, "ģ": 6, "¼": 7, "¡": 8},
              "merges": ["f i"]}
  })");
  const Tokenizer tok = load(dir.path());
  EXPECT_EQ(tok.encode("fi", false), (Ids{2}));
  EXPECT_EQ(tok.encode("\xEF\xAC\x81", false), (Ids{2}));
  EXPECT_EQ(tok.encode("\xEF\xBC\xA1", false), (Ids{3}));
}

// Gemma 2 / 3's tokenizer.json: spaces become "▁" in the normalizer, then a Split at " "
// (MergedWithPrevious) finds none; the text stays one word, merged across the "▁".
TEST(HfJson, GemmaSplitAfterSpaceReplaceIsANoOp) {
  test::TempDir dir;
  const std::string model = R"(
    "model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>",
              "vocab": {"<pad>": 0, "<unk>": 1, "<bos>": 2, "a": 3, "b": 4, "▁": 5, "▁a": 6,
                        "ab": 7, "▁ab": 8},
              "merges": [["▁", "a"], ["a", "b"], ["▁a", "b"]]})";
  write(dir / "tokenizer.json", R"({
    "added_tokens": [{"id": 2, "content": "<bos>", "special": true}],
    "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
    "pre_tokenizer": {"type": "Split", "pattern": {"String": " "},
                      "behavior": "MergedWithPrevious", "invert": false},)" +
                                    model + "}");
  const Tokenizer tok = load(dir.path());
  EXPECT_EQ(tok.pre_tokenizer(), PreTokenizer::none);
  EXPECT_EQ(tok.encode("ab ab", false), (Ids{7, 8}));
  EXPECT_EQ(tok.encode("ab  a", false), (Ids{7, 5, 6}));
  // Without the normalizer the split would cut the text at spaces: not supported, and said so.
  write(dir / "tokenizer.json", R"({
    "pre_tokenizer": {"type": "Split", "pattern": {"String": " "},
                      "behavior": "MergedWithPrevious", "invert": false},)" +
                                    model + "}");
  try {
    load(dir.path());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Isolated"), std::string::npos) << e.what();
  }
}

// Llama 3.x's tokenizer.json wraps its TemplateProcessing in a Sequence after a ByteLevel
// post-processor: BOS is still added (as transformers adds it to every encode).
TEST(HfJson, SequencePostProcessorAddsBos) {
  test::TempDir dir;
  write(dir / "tokenizer.json", R"({
    "added_tokens": [{"id": 3, "content": "<|begin_of_text|>", "special": true}],
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "post_processor": {"type": "Sequence", "processors": [
      {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
      {"type": "TemplateProcessing",
       "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                  {"Sequence": {"id": "A", "type_id": 0}}],
       "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [3]}}}]},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}
  })");
  const Tokenizer tok = load(dir.path());
  EXPECT_TRUE(tok.add_bos());
  EXPECT_EQ(tok.bos(), 3);
  EXPECT_EQ(tok.encode("ab", true), (Ids{3, 2}));
}

TEST(HfJson, WordPieceWithBertNormalizer) {
  test::TempDir dir;
  write(dir / "tokenizer.json", R"({
    "added_tokens": [{"id": 0, "content": "[PAD]", "special": true},
                     {"id": 1, "content": "[UNK]", "special": true},
                     {"id": 2, "content": "[CLS]", "special": true},
                     {"id": 3, "content": "[SEP]", "special": true}],
    "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                   "strip_accents": null, "lowercase": true},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                 {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "[SEP]", "type_id": 0}}]},
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "max_input_chars_per_word": 100,
              "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "play": 4, "##ing": 5,
                        "naive": 6, ".": 7}}
  })");
  const Tokenizer tok = load(dir / "tokenizer.json");
  EXPECT_EQ(tok.algorithm(), Algorithm::wordpiece);
  // Accents stripped (strip_accents null follows lowercase); "zzz" is unknown.
  EXPECT_EQ(tok.encode("Playing NAÏVE zzz.", true), (Ids{2, 4, 5, 6, 1, 7, 3}));
  EXPECT_EQ(tok.decode(Ids{2, 4, 5, 6, 3}), "playing naive");
}

TEST(HfJson, SentencePieceAsBpeWithByteFallback) {
  test::TempDir dir;
  // Llama 2's layout: "▁"-prefix and space-replace normalizers, no pre-tokenizer, byte fallback.
  write(dir / "tokenizer.json", R"({
    "added_tokens": [{"id": 0, "content": "<unk>", "special": true},
                     {"id": 1, "content": "<s>", "special": true},
                     {"id": 2, "content": "</s>", "special": true}],
    "normalizer": {"type": "Sequence", "normalizers": [
      {"type": "Prepend", "prepend": "▁"},
      {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    "pre_tokenizer": null,
    "model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>",
              "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "<0x21>": 3, "▁": 4, "h": 5, "i": 6,
                        "▁h": 7, "▁hi": 8},
              "merges": ["▁ h", "▁h i"]}
  })");
  write(dir / "tokenizer_config.json",
        R"({"add_bos_token": true, "add_eos_token": false, "bos_token": "<s>",
            "eos_token": {"content": "</s>"}})");
  const Tokenizer tok = load(dir.path());
  EXPECT_TRUE(tok.add_bos());
  EXPECT_EQ(tok.bos(), 1);
  EXPECT_EQ(tok.eos(), 2);
  EXPECT_EQ(tok.encode("hi hi!", true), (Ids{1, 8, 8, 3}));
  EXPECT_EQ(tok.decode(Ids{1, 8, 8, 3}), "hi hi!");
}

TEST(HfJson, UnknownPatternIsAnError) {
  test::TempDir dir;
  write(dir / "tokenizer.json", R"({
    "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "[a-z]+"}, "behavior": "Isolated"},
    "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}
  })");
  EXPECT_THROW(load(dir.path()), Error);
  EXPECT_THROW(load(dir / "missing"), Error);
}

}  // namespace
}  // namespace oxi::tokenizer
