// Tokenizer: text to token ids and back, for every model family this library runs.
//
// Built from a TokenizerSpec (see tokenizer_spec.h; loaders in load.h read GGUF metadata and
// tokenizer.json). Immutable after construction; copies share the tables and encode/decode may
// run concurrently.
//
//   auto tok = oxi::tokenizer::load("model.gguf");
//   std::vector<int32_t> ids = tok.encode("Hello world", tok.add_bos());
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/tokenizer/tokenizer_spec.h"

namespace oxi::tokenizer {

class Tokenizer {
 public:
  // Validates the spec (ids in range, merges of known tokens); throws oxi::Error.
  explicit Tokenizer(TokenizerSpec spec);

  // The ids of `text`. add_bos: add the begin token (and the end token when the model
  // says so, as BERT's [SEP]). parse_special: text such as "<|im_start|>" becomes that control
  // token; otherwise control tokens are tokenized as plain text (user-defined added tokens are
  // always matched whole).
  std::vector<int32_t> encode(std::string_view text, bool add_bos,
                              bool parse_special = false) const;
  // The text of `ids`, control tokens (BOS, EOS, <|im_end|>...) left out. Bytes are joined
  // before anything is interpreted, so a character split over several tokens comes out whole.
  std::string decode(std::span<const int32_t> ids) const;
  // The raw bytes of one token, possibly an incomplete UTF-8 sequence (callers streaming text
  // buffer until complete); control tokens give their text. Throws oxi::Error out of range.
  std::string token_piece(int32_t id) const;

  size_t vocab_size() const;
  // The vocabulary's text of a token (byte-level alphabet, "▁" and all); out of range throws.
  const std::string& token_text(int32_t id) const;
  // The id whose vocabulary text is exactly `piece`.
  std::optional<int32_t> token_id(std::string_view piece) const;
  TokenType token_type(int32_t id) const;
  bool is_control(int32_t id) const;  // BOS, EOS, <|im_start|>...: decode() leaves them out

  std::optional<int32_t> bos() const;
  std::optional<int32_t> eos() const;
  std::optional<int32_t> eot() const;  // end of turn (<|eot_id|>, <|im_end|>...), if any
  std::optional<int32_t> pad() const;
  std::optional<int32_t> unk() const;
  // Fill-in-the-middle markers (TokenizerSpec::Fim), those the model has.
  const TokenizerSpec::Fim& fim() const;
  bool add_bos() const;  // the model's default for encode()
  bool add_eos() const;

  Algorithm algorithm() const;
  PreTokenizer pre_tokenizer() const;

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
};

}  // namespace oxi::tokenizer
