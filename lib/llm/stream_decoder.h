// StreamDecoder: turns generated token ids into text as they come, safely for a terminal or a
// UTF-8 consumer, and applies stop strings.
//
//   StreamDecoder decoder(model.tokenizer(), {"\nUser:"}, true);
//   for (...) { std::cout << decoder.push(id); if (decoder.stopped()) break; }
//   std::cout << decoder.finish();
//
// - Only complete UTF-8 characters come out: the bytes of a character split over several
//   byte-fallback or byte-level tokens are held back until the last one arrives.
// - Stop strings: the text before the first occurrence of any of them is emitted, never the
//   stop string itself, even when it arrives split over several tokens (a tail that could be
//   the start of a stop string is held back until it is decided).
// - Control tokens (BOS, EOS, <|im_end|>...) produce no text, as in Tokenizer::decode.
// Everything emitted, concatenated, equals Tokenizer::decode of the pushed ids (with the
// leading space stripped as decode strips it, when strip_leading_space), cut at a stop string.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/tokenizer/tokenizer.h"

namespace oxi::llm {

class StreamDecoder {
 public:
  // strip_leading_space: drop the space SentencePiece / WordPiece put before the first word,
  // as Tokenizer::decode does (for a reply on its own; a raw continuation keeps it).
  StreamDecoder(const tokenizer::Tokenizer& tokenizer, std::vector<std::string> stop_strings,
                bool strip_leading_space);

  // The text that became final with this token (often empty). Nothing after stopped().
  std::string push(int32_t id);
  // The held-back rest at the end of generation: a stop-string prefix that never completed,
  // and an incomplete UTF-8 sequence as U+FFFD.
  std::string finish();

  // A stop string was found; the text before it has been emitted.
  bool stopped() const { return stopped_; }
  // Which stop string (valid when stopped()).
  const std::string& stop_string() const { return stop_strings_.at(stop_index_); }
  // Everything emitted so far.
  const std::string& text() const { return emitted_; }

  // Bytes at the end of `bytes` that start a UTF-8 character not yet complete (0..3).
  static size_t incomplete_utf8_tail(std::string_view bytes);

 private:
  std::string release(std::string ready);

  const tokenizer::Tokenizer& tokenizer_;
  std::vector<std::string> stop_strings_;
  bool strip_leading_space_;
  bool seen_text_ = false;    // a non-empty piece arrived (the leading space is decided)
  std::string pending_utf8_;  // bytes of an unfinished character
  std::string held_;          // complete text that may be the start of a stop string
  std::string emitted_;
  bool stopped_ = false;
  size_t stop_index_ = 0;
};

}  // namespace oxi::llm
