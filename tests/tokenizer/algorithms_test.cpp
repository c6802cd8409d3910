// The three algorithms on hand-made vocabularies whose expected ids are worked out by hand.
#include <cstdio>
#include <vector>

#include <gtest/gtest.h>

#include "lib/core/error.h"
#include "lib/tokenizer/tokenizer.h"

namespace oxi::tokenizer {
namespace {

using Ids = std::vector<int32_t>;

Tokenizer tiny_sentencepiece() {
  TokenizerSpec spec;
  spec.algorithm = Algorithm::sentencepiece;
  spec.tokens = {"<unk>", "<s>", "</s>", "▁",   "h",   "e",      "l",
                 "o",     "▁h",  "ll",   "▁he", "llo", "<0x21>", "▁hello"};
  spec.scores = {0, 0, 0, -1, -2, -2, -2, -2, -3, -1, -4, -5, 0, -10};
  spec.types.assign(spec.tokens.size(), TokenType::normal);
  spec.types[0] = TokenType::unknown;
  spec.types[1] = spec.types[2] = TokenType::control;
  spec.types[12] = TokenType::byte;
  spec.escape_spaces = spec.add_space_prefix = spec.byte_fallback = true;
  spec.bos = 1;
  spec.eos = 2;
  spec.unk = 0;
  spec.add_bos = true;
  return Tokenizer(spec);
}

TEST(SentencePiece, MergesByScoreWithByteFallback) {
  const Tokenizer tok = tiny_sentencepiece();
  // ▁ h e l l o !: "ll" (-1), then "▁h" (-3), "▁he" (-4), "llo" (-5), "▁hello"; "!" -> <0x21>.
  EXPECT_EQ(tok.encode("hello!", false), (Ids{13, 12}));
  EXPECT_EQ(tok.encode("hello!", true), (Ids{1, 13, 12}));
  EXPECT_EQ(tok.decode(Ids{1, 13, 12}), "hello!");
  EXPECT_EQ(tok.token_piece(13), " hello");
  EXPECT_EQ(tok.token_piece(12), "!");
  EXPECT_TRUE(tok.encode("", false).empty());
  // A control token parsed from text restarts the space prefix.
  EXPECT_EQ(tok.encode("hello</s>hello", false, true), (Ids{13, 2, 13}));
  // "?" has no byte token: the unknown token.
  EXPECT_EQ(tok.encode("o?", false), (Ids{3, 7, 0}));
}

// A vocabulary of byte tokens with a user-defined <mask> that swallows the whitespace before it
// (lstrip) and a control <|user|> that swallows the whitespace after it (rstrip).
Tokenizer stripping_tokens() {
  TokenizerSpec spec;
  spec.algorithm = Algorithm::sentencepiece;
  spec.tokens = {"<unk>", "<s>", "<mask>", "<|user|>"};
  spec.types = {TokenType::unknown, TokenType::control, TokenType::user_defined,
                TokenType::control};
  for (int b = 0; b < 256; ++b) {
    char text[8];
    std::snprintf(text, sizeof text, "<0x%02X>", b);
    spec.tokens.emplace_back(text);
    spec.types.push_back(TokenType::byte);
  }
  spec.escape_spaces = spec.byte_fallback = true;
  spec.unk = 0;
  spec.bos = 1;
  spec.lstrip_tokens = {2};
  spec.rstrip_tokens = {3};
  return Tokenizer(spec);
}

Ids concat(Ids a, const Ids& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// lstrip / rstrip take whole whitespace code points (White_Space, as Hugging Face's do), never a
// byte of another character: "à" ends in 0xA0 and U+2005 in 0x85, bytes that are NBSP's and
// NEL's code points.
TEST(SpecialTokens, StripWholeWhitespaceCodePoints) {
  const Tokenizer tok = stripping_tokens();
  EXPECT_EQ(tok.encode("voilà \t<mask>", false, true), concat(tok.encode("voilà", false), {2}));
  EXPECT_EQ(tok.encode("x\u2005<mask>", false, true), concat(tok.encode("x", false), {2}));
  EXPECT_EQ(tok.encode("\u2005<mask>", false, true), (Ids{2}));
  EXPECT_EQ(tok.encode("<|user|>\n\u00a0 hi", false, true), concat({3}, tok.encode("hi", false)));
  EXPECT_EQ(tok.encode("<|user|>…", false, true), concat({3}, tok.encode("…", false)));
  // Without parse_special a control token is text, and nothing is stripped.
  EXPECT_EQ(tok.encode("<|user|>\n", false, false).size(), 9u);
}

TEST(SentencePiece, RejectsBadIds) {
  TokenizerSpec spec;
  spec.tokens = {"a"};
  spec.bos = 5;
  EXPECT_THROW(Tokenizer{spec}, Error);
}

TEST(ByteLevelBpe, MergesByRank) {
  TokenizerSpec spec;
  spec.algorithm = Algorithm::bpe;
  spec.byte_level = true;
  spec.pre_tokenizer = PreTokenizer::gpt2;
  spec.tokens = {"a", "b", "c", "Ġ", "ab", "abc", "Ġa", "<|endoftext|>", "Ġab"};
  spec.types.assign(spec.tokens.size(), TokenType::normal);
  spec.types[7] = TokenType::control;
  spec.merges = {{"a", "b"}, {"ab", "c"}, {"Ġ", "a"}, {"Ġa", "b"}};
  const Tokenizer tok(spec);
  // "abc" -> ab (rank 0) -> abc; "Ġabc": "ab" (rank 0) beats "Ġa" (rank 2), leaving Ġ + abc.
  EXPECT_EQ(tok.encode("abc abc", false), (Ids{5, 3, 5}));
  EXPECT_EQ(tok.encode("abc<|endoftext|>ab", false, true), (Ids{5, 7, 4}));
  EXPECT_EQ(tok.decode(Ids{5, 3, 5, 7}), "abc abc");
  EXPECT_EQ(tok.token_piece(3), " ");
  EXPECT_EQ(tok.token_id("Ġab"), 8);
  EXPECT_EQ(tok.token_id("zz"), std::nullopt);
  EXPECT_EQ(tok.eot(), 7);
}

TEST(WordPiece, BertBasicTokenizationAndGreedyPieces) {
  TokenizerSpec spec;
  spec.algorithm = Algorithm::wordpiece;
  spec.wordpiece_style = WordPieceStyle::hashes;
  spec.tokens = {"[PAD]", "[UNK]",    "[CLS]",  "[SEP]", "hello", "world", "##s",
                 "un",    "##believ", "##able", "!",     ",",     "cafe",  "中"};
  spec.types.assign(spec.tokens.size(), TokenType::normal);
  spec.types[0] = spec.types[2] = spec.types[3] = TokenType::control;
  spec.types[1] = TokenType::unknown;
  spec.unk = 1;
  spec.bos = 2;
  spec.eos = 3;
  spec.add_bos = spec.add_eos = true;
  const Tokenizer tok(spec);
  EXPECT_EQ(tok.encode("Hello, Worlds! unbelievable CAFÉ 中文 xyz", false),
            (Ids{4, 11, 5, 6, 10, 7, 8, 9, 12, 13, 1, 1}));
  EXPECT_EQ(tok.encode("hello", true), (Ids{2, 4, 3}));
  EXPECT_EQ(tok.decode(Ids{2, 4, 5, 6, 3}), "hello worlds");
  // Longer than 100 characters: [UNK] even if it could be covered.
  EXPECT_EQ(tok.encode(std::string(101, 'x'), false), (Ids{1}));
}

}  // namespace
}  // namespace oxi::tokenizer
