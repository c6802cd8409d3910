#include "lib/tokenizer/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>

#include "lib/core/error.h"
#include "lib/tokenizer/tokenizer_impl.h"
#include "lib/tokenizer/unicode.h"

namespace oxi::tokenizer {

namespace {

constexpr std::string_view kContext = "tokenizer";
constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // "▁", SentencePiece's space

std::string byte_token_text(uint8_t byte) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", byte);
  return buf;
}

void check_id(const std::optional<int32_t>& id, size_t vocab_size, std::string_view what) {
  if (id && (*id < 0 || static_cast<size_t>(*id) >= vocab_size)) {
    throw Error(kContext, std::string(what) + " token id " + std::to_string(*id) +
                              " is outside the vocabulary of " + std::to_string(vocab_size));
  }
}

// Where the whitespace code points (White_Space, as Hugging Face's lstrip / rstrip see them)
// around a special token end: after `pos`, and before `end` but not before `begin`. Whole UTF-8
// sequences: a byte such as 0xA0 (the end of "à") is not NBSP.
size_t skip_whitespace(std::string_view text, size_t pos) {
  while (pos < text.size()) {
    const DecodedCodePoint d = decode_code_point(text, pos);
    if (!is_whitespace(d.cp)) break;
    pos += d.length;
  }
  return pos;
}
size_t skip_whitespace_back(std::string_view text, size_t begin, size_t end) {
  while (end > begin) {
    size_t start = end - 1;  // the last code point's first byte
    while (start > begin && end - start < 4 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80)
      --start;
    const DecodedCodePoint d = decode_code_point(text, start);
    if (start + d.length != end || !is_whitespace(d.cp)) break;
    end = start;
  }
  return end;
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(text.substr(pos));
  return out;
}

}  // namespace

void Tokenizer::Impl::append_bytes(std::string_view bytes, std::vector<int32_t>& out) const {
  bool all_found = true;
  for (char c : bytes) all_found = all_found && byte_tokens[static_cast<uint8_t>(c)] >= 0;
  if (all_found) {
    for (char c : bytes) out.push_back(byte_tokens[static_cast<uint8_t>(c)]);
  } else if (spec.unk) {
    out.push_back(*spec.unk);
  }
}

Tokenizer::Tokenizer(TokenizerSpec spec) {
  auto impl = std::make_shared<Impl>();
  impl->spec = std::move(spec);
  const TokenizerSpec& s = impl->spec;
  const size_t n = s.tokens.size();
  if (n == 0) throw Error(kContext, "the vocabulary is empty");
  if (!s.scores.empty() && s.scores.size() != n) {
    throw Error(kContext,
                std::to_string(s.scores.size()) + " scores for " + std::to_string(n) + " tokens");
  }
  if (!s.types.empty() && s.types.size() != n) {
    throw Error(kContext, std::to_string(s.types.size()) + " token types for " + std::to_string(n) +
                              " tokens");
  }
  check_id(s.bos, n, "BOS");
  check_id(s.eos, n, "EOS");
  check_id(s.eot, n, "EOT");
  check_id(s.pad, n, "padding");
  check_id(s.unk, n, "unknown");
  // A fill-in-the-middle id outside the vocabulary is dropped (as llama.cpp does): the model
  // still chats, and infill asks for the markers it lacks.
  TokenizerSpec::Fim& fim = impl->spec.fim;
  for (std::optional<int32_t>* id : {&fim.pre, &fim.suf, &fim.mid, &fim.pad, &fim.rep, &fim.sep})
    if (*id && (**id < 0 || static_cast<size_t>(**id) >= n)) {
      spdlog::warn(
          "tokenizer: fill-in-the-middle token id {} is outside the vocabulary of {}; "
          "ignored",
          **id, n);
      id->reset();
    }

  impl->ids_by_text.reserve(n);
  for (size_t i = 0; i < n; ++i) impl->ids_by_text[s.tokens[i]] = static_cast<int32_t>(i);

  impl->merges.reserve(s.merges.size());
  for (size_t rank = 0; rank < s.merges.size(); ++rank) {
    const auto& [left, right] = s.merges[rank];
    const int32_t a = impl->find(left), b = impl->find(right), merged = impl->find(left + right);
    // Merges of texts outside the vocabulary can never apply (llama.cpp skips them too).
    if (a < 0 || b < 0 || merged < 0) continue;
    impl->merges.try_emplace((static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b),
                             BpeMerge{static_cast<int32_t>(rank), merged});
  }

  const auto byte_cps = gpt2_byte_to_code_point();
  for (int b = 0; b < 256; ++b) {
    append_utf8(impl->byte_chars[b], byte_cps[b]);
    impl->char_bytes[byte_cps[b]] = static_cast<uint8_t>(b);
    impl->byte_tokens[b] = impl->find(byte_token_text(static_cast<uint8_t>(b)));
  }

  if (s.algorithm == Algorithm::wordpiece) {
    for (size_t i = 0; i < n; ++i) {
      const std::string& t = s.tokens[i];
      const auto id = static_cast<int32_t>(i);
      if (s.wordpiece_style == WordPieceStyle::hashes) {
        if (t.starts_with("##") && t.size() > 2)
          impl->continuations.try_emplace(t.substr(2), id);
        else
          impl->word_starts.try_emplace(t, id);
      } else if (t.starts_with(kSpaceMarker)) {
        impl->word_starts.try_emplace(t.substr(kSpaceMarker.size()), id);
      } else if (t.size() > 2 && t.front() == '[' && t.back() == ']') {
        impl->word_starts.try_emplace(t, id);  // [CLS], [unused0]: kept as they were
      } else {
        impl->continuations.try_emplace(t, id);
      }
    }
  }

  impl->lstrip.assign(n, 0);
  impl->rstrip.assign(n, 0);
  for (int32_t id : s.lstrip_tokens) {
    check_id(id, n, "lstrip");
    impl->lstrip[id] = 1;
  }
  for (int32_t id : s.rstrip_tokens) {
    check_id(id, n, "rstrip");
    impl->rstrip[id] = 1;
  }
  for (size_t i = 0; i < n; ++i) {
    const TokenType t = impl->type(static_cast<int32_t>(i));
    if ((t == TokenType::control || t == TokenType::user_defined || t == TokenType::unknown) &&
        !s.tokens[i].empty()) {
      impl->special_tokens[static_cast<uint8_t>(s.tokens[i][0])].push_back(static_cast<int32_t>(i));
    }
  }
  for (auto& group : impl->special_tokens) {
    std::stable_sort(group.begin(), group.end(),
                     [&](int32_t a, int32_t b) { return s.tokens[a].size() > s.tokens[b].size(); });
  }

  if (!impl->spec.eot) {
    // Models without an explicit end-of-turn id name it by convention (as llama.cpp guesses).
    for (std::string_view name : {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                                  "<|endoftext|>", "<EOT>", "<｜end▁of▁sentence｜>"}) {
      const int32_t id = impl->find(name);
      if (id >= 0 && impl->type(id) == TokenType::control) {
        impl->spec.eot = id;
        break;
      }
    }
  }
  // Fill-in-the-middle markers the spec does not name, by the texts llama.cpp looks for (Qwen,
  // StarCoder / Granite, DeepSeek, CodeLlama, ...), the first found of each list.
  const auto by_text = [&](std::optional<int32_t>& id,
                           std::initializer_list<std::string_view> names) {
    for (std::string_view name : names) {
      if (id) return;
      if (const int32_t found = impl->find(name); found >= 0) id = found;
    }
  };
  by_text(fim.pre, {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>",
                    "▁<PRE>", "<|code_prefix|>"});
  by_text(fim.suf, {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>",
                    "▁<SUF>", "<|code_suffix|>"});
  by_text(fim.mid, {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>",
                    "▁<MID>", "<|code_middle|>"});
  by_text(fim.pad, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>"});
  by_text(fim.rep, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"});
  by_text(fim.sep, {"<|file_sep|>"});
  impl_ = std::move(impl);
}

namespace {

// NFC or NFKC of UTF-8 text; text that is ASCII (already normalized) or not valid UTF-8 is kept
// as it is.
std::string normalized_utf8(std::string_view text, TokenizerSpec::Normalization form) {
  if (std::all_of(text.begin(), text.end(), [](char c) { return static_cast<uint8_t>(c) < 0x80; }))
    return std::string(text);
  std::u32string cps;
  for (size_t pos = 0; pos < text.size();) {
    const DecodedCodePoint d = decode_code_point(text, pos);
    if (d.cp == 0xFFFD && d.length == 1) return std::string(text);  // an invalid sequence
    cps.push_back(d.cp);
    pos += d.length;
  }
  return encode_utf8(form == TokenizerSpec::Normalization::nfc ? nfc(cps) : nfkc(cps));
}

}  // namespace

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos,
                                       bool parse_special) const {
  const Impl& impl = *impl_;
  const TokenizerSpec& s = impl.spec;
  std::vector<int32_t> out;
  if (add_bos && s.bos) out.push_back(*s.bos);

  std::string normalized;
  auto encode_text = [&](std::string_view piece, bool at_start) {
    if (piece.empty()) return;
    if (s.normalization != TokenizerSpec::Normalization::none) {
      normalized = normalized_utf8(piece, s.normalization);
      piece = normalized;
    }
    switch (s.algorithm) {
      case Algorithm::sentencepiece:
        encode_sentencepiece(impl, piece, at_start, out);
        break;
      case Algorithm::bpe:
        encode_bpe(impl, piece, at_start, out);
        break;
      case Algorithm::wordpiece:
        encode_wordpiece(impl, piece, out);
        break;
    }
  };

  // Cut the text at special tokens (longest first at each position), encode the rest.
  size_t text_begin = 0, pos = 0;
  bool at_start = true;
  while (pos < text.size()) {
    int32_t hit = -1;
    for (int32_t id : impl.special_tokens[static_cast<uint8_t>(text[pos])]) {
      const TokenType t = impl.type(id);
      if (!parse_special && t != TokenType::user_defined) continue;
      if (text.substr(pos).starts_with(s.tokens[id])) {
        hit = id;
        break;
      }
    }
    if (hit < 0) {
      ++pos;
      continue;
    }
    const size_t text_end = impl.lstrip[hit] ? skip_whitespace_back(text, text_begin, pos) : pos;
    encode_text(text.substr(text_begin, text_end - text_begin), at_start);
    out.push_back(hit);
    at_start = true;
    pos += s.tokens[hit].size();
    if (impl.rstrip[hit]) pos = skip_whitespace(text, pos);
    text_begin = pos;
  }
  encode_text(text.substr(text_begin), at_start);

  if (add_bos && s.add_eos && s.eos) out.push_back(*s.eos);
  return out;
}

std::string Tokenizer::token_piece(int32_t id) const {
  const Impl& impl = *impl_;
  const TokenizerSpec& s = impl.spec;
  const std::string& text = token_text(id);
  switch (impl.type(id)) {
    case TokenType::control:
    case TokenType::unknown:
    case TokenType::user_defined:
      return text;
    case TokenType::byte:
      if (text.size() == 6 && text.starts_with("<0x")) {
        return std::string(1, static_cast<char>(std::stoi(text.substr(3, 2), nullptr, 16)));
      }
      break;
    default:
      break;
  }
  switch (s.algorithm) {
    case Algorithm::bpe:
      if (s.byte_level) {
        std::string bytes;
        for (size_t pos = 0; pos < text.size();) {
          const DecodedCodePoint d = decode_code_point(text, pos);
          const auto it = impl.char_bytes.find(d.cp);
          if (it != impl.char_bytes.end())
            bytes.push_back(static_cast<char>(it->second));
          else
            bytes.append(text, pos, d.length);
          pos += d.length;
        }
        return bytes;
      }
      [[fallthrough]];
    case Algorithm::sentencepiece:
      return replace_all(text, kSpaceMarker, " ");
    case Algorithm::wordpiece:
      // Word-initial pieces read with the space that separated the words.
      if (s.wordpiece_style == WordPieceStyle::hashes) {
        if (text.starts_with("##")) return text.substr(2);
        return std::string(" ").append(text);
      }
      if (!text.starts_with(kSpaceMarker)) return text;
      return std::string(" ").append(std::string_view(text).substr(kSpaceMarker.size()));
  }
  return text;
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (int32_t id : ids) {
    if (!is_control(id)) out += token_piece(id);
  }
  // The space that SentencePiece's prefix and WordPiece's word starts put before the text.
  const bool leading_space_is_markup =
      impl_->spec.algorithm == Algorithm::wordpiece || impl_->spec.add_space_prefix;
  if (leading_space_is_markup && out.starts_with(' ')) out.erase(0, 1);
  return out;
}

size_t Tokenizer::vocab_size() const {
  return impl_->spec.tokens.size();
}

const std::string& Tokenizer::token_text(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= vocab_size()) {
    throw Error(kContext, "token id " + std::to_string(id) + " is outside the vocabulary of " +
                              std::to_string(vocab_size()));
  }
  return impl_->spec.tokens[static_cast<size_t>(id)];
}

std::optional<int32_t> Tokenizer::token_id(std::string_view piece) const {
  const int32_t id = impl_->find(piece);
  return id < 0 ? std::nullopt : std::optional<int32_t>(id);
}

TokenType Tokenizer::token_type(int32_t id) const {
  token_text(id);  // range check
  return impl_->type(id);
}

bool Tokenizer::is_control(int32_t id) const {
  return token_type(id) == TokenType::control;
}

std::optional<int32_t> Tokenizer::bos() const {
  return impl_->spec.bos;
}
std::optional<int32_t> Tokenizer::eos() const {
  return impl_->spec.eos;
}
std::optional<int32_t> Tokenizer::eot() const {
  return impl_->spec.eot;
}
const TokenizerSpec::Fim& Tokenizer::fim() const {
  return impl_->spec.fim;
}
std::optional<int32_t> Tokenizer::pad() const {
  return impl_->spec.pad;
}
std::optional<int32_t> Tokenizer::unk() const {
  return impl_->spec.unk;
}
bool Tokenizer::add_bos() const {
  return impl_->spec.add_bos;
}
bool Tokenizer::add_eos() const {
  return impl_->spec.add_eos;
}
Algorithm Tokenizer::algorithm() const {
  return impl_->spec.algorithm;
}
PreTokenizer Tokenizer::pre_tokenizer() const {
  return impl_->spec.pre_tokenizer;
}

}  // namespace oxi::tokenizer
