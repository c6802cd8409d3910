// StreamDecoder: characters split over byte tokens come out whole, stop strings are cut even
// when split over tokens, and the stream always equals decode() of the same tokens.
#include <gtest/gtest.h>

#include <random>

#include "lib/llm/stream_decoder.h"
#include "tests/llm_engine/engine_fixture.h"

namespace oxi::llm::test {
namespace {

const std::string kSpace = "\xE2\x96\x81";

std::vector<int32_t> byte_ids(const std::string& text) {
  std::vector<int32_t> ids;
  for (unsigned char c : text) ids.push_back(byte_id(c));
  return ids;
}

// Pushes every id; returns the pieces (finish() last).
std::vector<std::string> stream(StreamDecoder& d, const std::vector<int32_t>& ids) {
  std::vector<std::string> pieces;
  for (int32_t id : ids) pieces.push_back(d.push(id));
  pieces.push_back(d.finish());
  return pieces;
}

std::string joined(const std::vector<std::string>& pieces) {
  std::string s;
  for (const std::string& p : pieces) s += p;
  return s;
}

TEST(StreamDecoder, IncompleteTail) {
  EXPECT_EQ(StreamDecoder::incomplete_utf8_tail(""), 0u);
  EXPECT_EQ(StreamDecoder::incomplete_utf8_tail("abc"), 0u);
  EXPECT_EQ(StreamDecoder::incomplete_utf8_tail("a\xC3"), 1u);
  EXPECT_EQ(StreamDecoder::incomplete_utf8_tail("a\xC3\xA9"), 0u);
  EXPECT_EQ(StreamDecoder::incomplete_utf8_tail("\xE2\x82"), 2u);
  EXPECT_EQ(StreamDecoder::incomplete_utf8_tail("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(StreamDecoder::incomplete_utf8_tail("\xF0\x9F\x98\x80"), 0u);
  EXPECT_EQ(StreamDecoder::incomplete_utf8_tail("\x80\x80\x80"), 0u);  // invalid: let through
}

TEST(StreamDecoder, HoldsSplitCharactersUntilComplete) {
  const tokenizer::Tokenizer tok = hand_tokenizer();
  StreamDecoder d(tok, {}, true);
  EXPECT_EQ(d.push(piece_id(tok, kSpace + "Hello")), "Hello");  // leading space stripped
  // "é" = C3 A9, "😀" = F0 9F 98 80, one byte token each.
  EXPECT_EQ(d.push(byte_id(0xC3)), "");
  EXPECT_EQ(d.push(byte_id(0xA9)), "\xC3\xA9");
  EXPECT_EQ(d.push(byte_id(0xF0)), "");
  EXPECT_EQ(d.push(byte_id(0x9F)), "");
  EXPECT_EQ(d.push(byte_id(0x98)), "");
  EXPECT_EQ(d.push(byte_id(0x80)), "\xF0\x9F\x98\x80");
  EXPECT_EQ(d.push(*tok.eos()), "");  // control tokens give no text
  EXPECT_EQ(d.push(piece_id(tok, kSpace + "world")), " world");
  EXPECT_EQ(d.finish(), "");
  EXPECT_EQ(d.text(), "Hello\xC3\xA9\xF0\x9F\x98\x80 world");

  // An unfinished character at the end becomes U+FFFD.
  StreamDecoder cut(tok, {}, true);
  EXPECT_EQ(cut.push(byte_id(0xE2)), "");
  EXPECT_EQ(cut.push(byte_id(0x82)), "");
  EXPECT_EQ(cut.finish(), "\xEF\xBF\xBD");
}

TEST(StreamDecoder, LeadingSpaceKeptForRawContinuations) {
  const tokenizer::Tokenizer tok = hand_tokenizer();
  StreamDecoder d(tok, {}, false);
  EXPECT_EQ(d.push(piece_id(tok, kSpace + "Hello")), " Hello");
  StreamDecoder s(tok, {}, true);
  EXPECT_EQ(s.push(*tok.bos()), "");
  EXPECT_EQ(s.push(byte_id(' ')), "");  // decode() strips this space too
  EXPECT_EQ(s.push(piece_id(tok, kSpace + "world")), " world");
}

TEST(StreamDecoder, StopStringSplitOverTokens) {
  const tokenizer::Tokenizer tok = hand_tokenizer();
  StreamDecoder d(tok, {"STOP"}, true);
  EXPECT_EQ(d.push(piece_id(tok, kSpace + "Hello")), "Hello");
  EXPECT_EQ(d.push(piece_id(tok, "ST")), "");  // could be the start of STOP: held
  EXPECT_FALSE(d.stopped());
  EXPECT_EQ(d.push(piece_id(tok, "OP")), "");
  EXPECT_TRUE(d.stopped());
  EXPECT_EQ(d.stop_string(), "STOP");
  EXPECT_EQ(d.push(piece_id(tok, kSpace + "world")), "");  // nothing after a stop
  EXPECT_EQ(d.finish(), "");
  EXPECT_EQ(d.text(), "Hello");
}

TEST(StreamDecoder, HeldPrefixIsReleasedWhenItIsNotAStop) {
  const tokenizer::Tokenizer tok = hand_tokenizer();
  StreamDecoder d(tok, {"STOP"}, true);
  EXPECT_EQ(d.push(piece_id(tok, "ST")), "");
  EXPECT_EQ(d.push(piece_id(tok, kSpace + "world")), "ST world");
  EXPECT_EQ(d.push(piece_id(tok, "ST")), "");
  EXPECT_EQ(d.finish(), "ST");  // never completed: released at the end
  EXPECT_FALSE(d.stopped());
  EXPECT_EQ(d.text(), "ST worldST");
}

TEST(StreamDecoder, StopInsideOneTokenAndEarliestStopWins) {
  const tokenizer::Tokenizer tok = hand_tokenizer();
  StreamDecoder d(tok, {"b", "STOP"}, true);
  EXPECT_EQ(d.push(piece_id(tok, "aSTOPb")), "a");
  EXPECT_TRUE(d.stopped());
  EXPECT_EQ(d.stop_string(), "STOP");

  // A stop string made of a character split over byte tokens: "é!".
  StreamDecoder e(tok, {"\xC3\xA9!"}, true);
  std::string out;
  for (int32_t id : byte_ids("x\xC3\xA9")) out += e.push(id);
  EXPECT_EQ(out, "x");  // "é" is held: it may start the stop string
  out += e.push(piece_id(tok, "!"));
  EXPECT_TRUE(e.stopped());
  EXPECT_EQ(out, "x");
}

// Random mixes of words, byte-split characters and control tokens: the stream is decode().
TEST(StreamDecoder, StreamEqualsDecodeOfAllTokens) {
  const tokenizer::Tokenizer tok = hand_tokenizer();
  const std::vector<std::string> chars = {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "a", " "};
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    std::vector<int32_t> ids;
    const int n = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      switch (rng() % 3) {
        case 0:
          ids.push_back(259 + static_cast<int32_t>(rng() % 11));
          break;  // a word
        case 1: {
          const auto bytes = byte_ids(chars[rng() % chars.size()]);
          ids.insert(ids.end(), bytes.begin(), bytes.end());
          break;
        }
        default:
          ids.push_back(1 + static_cast<int32_t>(rng() % 2));
          break;  // <s> / </s>
      }
    }
    for (bool strip : {true, false}) {
      StreamDecoder d(tok, {}, strip);
      const auto pieces = stream(d, ids);
      std::string expected = tok.decode(ids);
      if (!strip) {
        expected.clear();
        for (int32_t id : ids)
          if (!tok.is_control(id)) expected += tok.token_piece(id);
      }
      EXPECT_EQ(joined(pieces), expected) << "round " << round;
      for (const std::string& p : pieces)
        EXPECT_EQ(StreamDecoder::incomplete_utf8_tail(p), 0u) << "a piece ends mid-character";
    }
    // With a stop string: the stream is decode() cut before its first occurrence.
    const std::string all = tok.decode(ids);
    for (const std::string stop : {"a", "\xE2\x82\xAC", "lo w",
                                   "\xC3\xA9"
                                   "a"}) {
      StreamDecoder d(tok, {stop}, true);
      const auto pieces = stream(d, ids);
      const size_t at = all.find(stop);
      EXPECT_EQ(joined(pieces), all.substr(0, at)) << "round " << round << " stop " << stop;
      EXPECT_EQ(d.stopped(), at != std::string::npos);
    }
  }
}

}  // namespace
}  // namespace oxi::llm::test
