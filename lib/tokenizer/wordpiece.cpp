// WordPiece (BERT): Hugging Face's BertNormalizer (clean control characters, space out CJK
// ideographs, strip accents, lowercase) and BertPreTokenizer (split on whitespace, each
// punctuation character alone), then per word the longest vocabulary prefix, then the longest
// continuation, and so on; a word that cannot be covered becomes [UNK] as a whole.
#include <string>
#include <vector>

#include "lib/tokenizer/tokenizer_impl.h"
#include "lib/tokenizer/unicode.h"

namespace oxi::tokenizer {

namespace {

bool is_bert_whitespace(char32_t c) {
  return c == '\t' || c == '\n' || c == '\r' || is_whitespace(c);
}

bool is_bert_control(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  return is_other(c);
}

// ASCII punctuation and symbols count as punctuation for BERT, as do all of Unicode's P.
bool is_bert_punctuation(char32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
      (c >= 123 && c <= 126)) {
    return true;
  }
  return is_punctuation(c);
}

// The CJK Unified Ideographs blocks (not Hangul, Hiragana or Katakana), as BERT defines them.
bool is_cjk_ideograph(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

}  // namespace

std::vector<std::string> bert_words(const TokenizerSpec& spec, std::string_view text) {
  std::vector<std::string> words;
  std::string current;
  auto finish_word = [&] {
    if (!current.empty()) words.push_back(std::move(current));
    current.clear();
  };
  std::u32string normalized;
  for (char32_t c : decode_utf8(text)) {
    if (c == 0 || c == 0xFFFD || is_bert_control(c)) continue;
    if (is_bert_whitespace(c)) {
      finish_word();
      continue;
    }
    normalized.clear();
    if (spec.strip_accents) {
      std::u32string decomposed;
      append_nfd(decomposed, c);
      for (char32_t d : decomposed) {
        if (category(d) != Category::Mn) normalized.push_back(d);
      }
    } else {
      normalized.push_back(c);
    }
    if (spec.lowercase) {
      std::u32string lowered;
      for (char32_t d : normalized) append_lowercase(lowered, d);
      normalized.swap(lowered);
    }
    for (char32_t d : normalized) {
      if (is_bert_punctuation(d) || (spec.split_chinese_chars && is_cjk_ideograph(d))) {
        finish_word();
        append_utf8(current, d);
        finish_word();
      } else {
        append_utf8(current, d);
      }
    }
  }
  finish_word();
  return words;
}

void encode_wordpiece(const Tokenizer::Impl& impl, std::string_view text,
                      std::vector<int32_t>& out) {
  for (const std::string& word : bert_words(impl.spec, text)) {
    const size_t first_new = out.size();
    bool covered = decode_utf8(word).size() <= impl.spec.max_chars_per_word;
    for (size_t begin = 0; covered && begin < word.size();) {
      const StringMap<int32_t>& pieces = begin == 0 ? impl.word_starts : impl.continuations;
      // The longest piece starting here; ends stop at character boundaries.
      size_t end = word.size();
      int32_t found = -1;
      while (end > begin) {
        const auto it = pieces.find(std::string_view(word).substr(begin, end - begin));
        if (it != pieces.end()) {
          found = it->second;
          break;
        }
        do --end;
        while (end > begin && (static_cast<uint8_t>(word[end]) & 0xC0) == 0x80);
      }
      if (found < 0) {
        covered = false;
        break;
      }
      out.push_back(found);
      begin = end;
    }
    if (!covered) {
      out.resize(first_new);
      if (impl.spec.unk) out.push_back(*impl.spec.unk);
    }
  }
}

}  // namespace oxi::tokenizer
