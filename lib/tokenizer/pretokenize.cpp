#include "lib/tokenizer/pretokenize.h"

#include <algorithm>
#include <array>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lib/tokenizer/unicode.h"

namespace oxi::tokenizer {

namespace {

// A pass looks for a match at `pos` of one piece of text (the regex subject: `$` and lookahead
// see the piece's end) and returns its length in code points, 0 for no match there.
using Subject = std::u32string_view;
using Matcher = size_t (*)(Subject s, size_t pos);
// A pass whose matches depend on where a whole run ends (a lookahead over the run, or `$`)
// appends the positions that cut one piece, ascending, in one scan: a matcher asked position by
// position would scan the run again each time (quadratic in a run's length).
using Cutter = void (*)(Subject s, std::vector<size_t>& cuts);

// One of the two; implicit, so that the pass lists below just name the functions.
struct Pass {
  constexpr Pass(Matcher m) : match(m) {}
  constexpr Pass(Cutter c) : cut(c) {}
  Matcher match = nullptr;
  Cutter cut = nullptr;
};

template <typename Pred>
size_t run_length(Subject s, size_t pos, Pred pred) {
  size_t end = pos;
  while (end < s.size() && pred(s[end])) ++end;
  return end - pos;
}

// `X?Y+` with greedy backtracking: one X then Y+, else Y+ alone.
template <typename PredX, typename PredY>
size_t optional_then_run(Subject s, size_t pos, PredX x, PredY y) {
  if (pos < s.size() && x(s[pos])) {
    const size_t n = run_length(s, pos + 1, y);
    if (n > 0) return 1 + n;
  }
  return run_length(s, pos, y);
}

bool is_newline(char32_t c) {
  return c == '\r' || c == '\n';
}
bool is_space_char(char32_t c) {
  return c == ' ';
}
bool is_not_space_letter_number(char32_t c) {
  return !is_whitespace(c) && !is_letter(c) && !is_number(c);
}
bool is_ascii_digit(char32_t c) {
  return c >= '0' && c <= '9';
}

// c under Unicode simple case folding (CaseFolding.txt, status C) where it folds to an ASCII
// letter: A-Z, LONG S (U+017F) to s and KELVIN SIGN (U+212A) to k. That is how a
// case-insensitive regex ((?i:'s|...), Oniguruma's and Perl's alike) compares letters:
// "'\u017F" is the contraction 's (tests/tokenizer/pretokenize_cases.json).
char32_t fold_to_ascii(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c == 0x017F) return 's';
  if (c == 0x212A) return 'k';
  return c;
}

// 's|'t|'re|'ve|'m|'ll|'d, optionally case-insensitive.
size_t contraction(Subject s, size_t pos, bool ignore_case) {
  if (s[pos] != '\'' || pos + 1 >= s.size()) return 0;
  auto at = [&](size_t i) -> char32_t {
    if (i >= s.size()) return 0;
    return ignore_case ? fold_to_ascii(s[i]) : s[i];
  };
  const char32_t a = at(pos + 1), b = at(pos + 2);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// \s+(?!\S): a whitespace run, less its last character when text follows it.
size_t whitespace_not_before_text(Subject s, size_t pos) {
  const size_t n = run_length(s, pos, is_whitespace);
  if (n == 0) return 0;
  if (pos + n == s.size()) return n;
  return n >= 2 ? n - 1 : 0;
}

// \s*[\r\n]+: whitespace up to and including its last newline.
size_t whitespace_through_newline(Subject s, size_t pos) {
  const size_t n = run_length(s, pos, is_whitespace);
  for (size_t k = n; k > 0; --k) {
    if (is_newline(s[pos + k - 1])) return k;
  }
  return 0;
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
size_t match_gpt2(Subject s, size_t pos) {
  if (size_t n = contraction(s, pos, false)) return n;
  if (size_t n = optional_then_run(s, pos, is_space_char, is_letter)) return n;
  if (size_t n = optional_then_run(s, pos, is_space_char, is_number)) return n;
  if (size_t n = optional_then_run(s, pos, is_space_char, is_not_space_letter_number)) return n;
  if (size_t n = whitespace_not_before_text(s, pos)) return n;
  return run_length(s, pos, is_whitespace);
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}
//   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// (Seed-Coder's: without the newlines after the punctuation, kTrailingNewlines = false; Qwen3.5's:
// words of [\p{L}\p{M}]+ and punctuation of [^\s\p{L}\p{M}\p{N}]+, kMarks = true)
template <size_t kMaxDigits, bool kTrailingNewlines = true, bool kMarks = false>
size_t match_llama3_like(Subject s, size_t pos) {
  if (size_t n = contraction(s, pos, true)) return n;
  auto letter_prefix = [](char32_t c) { return !is_newline(c) && !is_letter(c) && !is_number(c); };
  auto word = [](char32_t c) { return is_letter(c) || (kMarks && is_mark(c)); };
  if (size_t n = optional_then_run(s, pos, letter_prefix, word)) return n;
  if (size_t n = run_length(s, pos, is_number)) return std::min(n, kMaxDigits);
  auto punctuation = [](char32_t c) {
    return is_not_space_letter_number(c) && !(kMarks && is_mark(c));
  };
  if (size_t n = optional_then_run(s, pos, is_space_char, punctuation)) {
    return kTrailingNewlines ? n + run_length(s, pos + n, is_newline) : n;
  }
  if (size_t n = whitespace_through_newline(s, pos)) return n;
  if (size_t n = whitespace_not_before_text(s, pos)) return n;
  return run_length(s, pos, is_whitespace);
}

// o200k's (GPT-4o, Llama 4) and Tekken's (Mistral NeMo) letters, cased:
// [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and [\p{Ll}\p{Lm}\p{Lo}\p{M}]. Modifier and other letters and
// marks are both, so a word may start upper case and run on lower, but not the other way.
bool is_upper_like(char32_t c) {
  const Category k = category(c);
  return k == Category::Lu || k == Category::Lt || k == Category::Lm || k == Category::Lo ||
         is_mark(c);
}
bool is_lower_like(char32_t c) {
  const Category k = category(c);
  return k == Category::Ll || k == Category::Lm || k == Category::Lo || is_mark(c);
}

// U*L+ (upper-like, then lower-like) with greedy backtracking: when no lower-like letter follows
// the upper run, the run gives back letters until one of them is also lower-like, which ends
// the match (the letters after it in the run are not).
size_t upper_then_lower(Subject s, size_t pos) {
  const size_t u = run_length(s, pos, is_upper_like);
  if (size_t l = run_length(s, pos + u, is_lower_like)) return u + l;
  for (size_t k = u; k > 0; --k) {
    if (is_lower_like(s[pos + k - 1])) return k;
  }
  return 0;
}
// U+L*
size_t upper_run_then_lower(Subject s, size_t pos) {
  const size_t u = run_length(s, pos, is_upper_like);
  return u == 0 ? 0 : u + run_length(s, pos + u, is_lower_like);
}

// [^\r\n\p{L}\p{N}]?WORD: one optional leading character (a mark may be that character or the
// word's first), greedy, then WORD.
template <size_t (*Word)(Subject, size_t)>
size_t with_optional_prefix(Subject s, size_t pos) {
  const char32_t c = s[pos];
  if (!is_newline(c) && !is_letter(c) && !is_number(c)) {
    if (size_t n = Word(s, pos + 1)) return 1 + n;
  }
  return Word(s, pos);
}

// Tekken (kContractions = false) and o200k (true, and digits in threes):
//   [^\r\n\p{L}\p{N}]?U*L+C?|[^\r\n\p{L}\p{N}]?U+L*C?|\p{N}{1,max_digits}
//   | ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
// with C = (?i:'s|'t|'re|'ve|'m|'ll|'d) and U / L the cased letter classes above.
template <bool kContractions, size_t kMaxDigits>
size_t match_cased_words(Subject s, size_t pos) {
  size_t n = with_optional_prefix<upper_then_lower>(s, pos);
  if (n == 0) n = with_optional_prefix<upper_run_then_lower>(s, pos);
  if (n > 0) {
    if (kContractions && pos + n < s.size()) n += contraction(s, pos + n, true);
    return n;
  }
  if (size_t d = run_length(s, pos, is_number)) return std::min(d, kMaxDigits);
  if (size_t p = optional_then_run(s, pos, is_space_char, is_not_space_letter_number)) {
    return p + run_length(s, pos + p, [](char32_t c) { return is_newline(c) || c == '/'; });
  }
  if (size_t w = whitespace_through_newline(s, pos)) return w;
  if (size_t w = whitespace_not_before_text(s, pos)) return w;
  return run_length(s, pos, is_whitespace);
}

size_t match_newline(Subject s, size_t pos) {
  return is_newline(s[pos]) ? 1 : 0;
}
size_t match_number_run(Subject s, size_t pos) {
  return run_length(s, pos, is_number);
}
size_t match_single_number(Subject s, size_t pos) {
  return is_number(s[pos]) ? 1 : 0;
}
size_t match_ascii_digit_run(Subject s, size_t pos) {
  return run_length(s, pos, is_ascii_digit);
}
size_t match_ascii_digit_triple(Subject s, size_t pos) {
  return pos + 3 <= s.size() && is_ascii_digit(s[pos]) && is_ascii_digit(s[pos + 1]) &&
                 is_ascii_digit(s[pos + 2])
             ? 3
             : 0;
}

bool in_ranges(char32_t c, std::span<const std::pair<char32_t, char32_t>> ranges) {
  for (const auto& [first, last] : ranges) {
    if (c >= first && c <= last) return true;
  }
  return false;
}

// DeepSeek LLM's letter class: [A-Za-zµÀ-ÖØ-öø-ƺ...𞤀-𞥃] (cased letters of many
// scripts).
constexpr std::pair<char32_t, char32_t> kDeepseekLetters[] = {
    {0x41, 0x5A},       {0x61, 0x7A},       {0xB5, 0xB5},       {0xC0, 0xD6},
    {0xD8, 0xF6},       {0xF8, 0x1BA},      {0x1BC, 0x1BF},     {0x1C4, 0x293},
    {0x295, 0x2AF},     {0x370, 0x373},     {0x376, 0x377},     {0x37B, 0x37D},
    {0x37F, 0x37F},     {0x386, 0x386},     {0x388, 0x38A},     {0x38C, 0x38C},
    {0x38E, 0x3A1},     {0x3A3, 0x3F5},     {0x3F7, 0x481},     {0x48A, 0x52F},
    {0x531, 0x556},     {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},
    {0x1C90, 0x1CBA},   {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},
    {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},   {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},
    {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},   {0x1F5B, 0x1F5B},
    {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},
    {0x1FD6, 0x1FDB},   {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},
    {0x2102, 0x2102},   {0x2107, 0x2107},   {0x210A, 0x2113},   {0x2115, 0x2115},
    {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},   {0x2128, 0x2128},
    {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},
    {0x2C7E, 0x2CE4},   {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},
    {0xA680, 0xA69B},   {0xA722, 0xA76F},   {0xA771, 0xA787},   {0xA78B, 0xA78E},
    {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},   {0xFF21, 0xFF3A},
    {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
// [!-/:-~！-／：-～‘-‟　-。]: ASCII and full-width punctuation, quotes, CJK punctuation.
constexpr std::pair<char32_t, char32_t> kDeepseekPunctuation[] = {
    {0x21, 0x2F},     {0x3A, 0x7E},     {0xFF01, 0xFF0F},
    {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002},
};
// [一-龥ࠀ-一가-퟿]: CJK ideographs and the blocks before them, Hangul.
constexpr std::pair<char32_t, char32_t> kDeepseekCjk[] = {
    {0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF}};

size_t match_deepseek_letters(Subject s, size_t pos) {
  return optional_then_run(s, pos, is_whitespace,
                           [](char32_t c) { return in_ranges(c, kDeepseekLetters); });
}
size_t match_deepseek_punctuation(Subject s, size_t pos) {
  return optional_then_run(s, pos, is_whitespace,
                           [](char32_t c) { return in_ranges(c, kDeepseekPunctuation); });
}
// \s+$: the piece's trailing whitespace run on its own.
void cut_trailing_whitespace(Subject s, std::vector<size_t>& cuts) {
  size_t start = s.size();
  while (start > 0 && is_whitespace(s[start - 1])) --start;
  cuts.push_back(start);
}
size_t match_deepseek_cjk(Subject s, size_t pos) {
  return run_length(s, pos, [](char32_t c) { return in_ranges(c, kDeepseekCjk); });
}
size_t match_space_letters(Subject s, size_t pos) {  // \s?\p{L}+
  return optional_then_run(s, pos, is_whitespace, is_letter);
}
size_t match_space_punctuation(Subject s, size_t pos) {  // \s?\p{P}+
  return optional_then_run(s, pos, is_whitespace, is_punctuation);
}

// DeepSeek V3's (Hunyuan dense's, AFMoE's) last pass:
//   [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
//   | ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// An ASCII punctuation character takes the ASCII letters after it; words keep their marks.
size_t match_deepseek_v3_words(Subject s, size_t pos) {
  const auto ascii_letter = [](char32_t c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; };
  const char32_t c = s[pos];
  if (c >= '!' && c <= '~' && !ascii_letter(c) && !is_ascii_digit(c)) {
    if (size_t n = run_length(s, pos + 1, ascii_letter)) return 1 + n;
  }
  const auto prefix = [](char32_t x) {
    return !is_newline(x) && !is_letter(x) && !is_punctuation(x) && !is_symbol(x);
  };
  const auto word = [](char32_t x) { return is_letter(x) || is_mark(x); };
  if (size_t n = optional_then_run(s, pos, prefix, word)) return n;
  const auto punctuation = [](char32_t x) { return is_punctuation(x) || is_symbol(x); };
  if (size_t n = optional_then_run(s, pos, is_space_char, punctuation)) {
    return n + run_length(s, pos + n, is_newline);
  }
  if (size_t n = whitespace_through_newline(s, pos)) return n;
  if (size_t n = whitespace_not_before_text(s, pos)) return n;
  return run_length(s, pos, is_whitespace);
}

size_t match_number_triple(Subject s, size_t pos) {  // \p{N}{1,3}
  return std::min<size_t>(run_length(s, pos, is_number), 3);
}

// [一-龥぀-ゟ゠-ヿ]+: CJK ideographs to U+9FA5, hiragana, katakana.
constexpr std::pair<char32_t, char32_t> kDeepseekV3Cjk[] = {
    {0x4E00, 0x9FA5}, {0x3040, 0x309F}, {0x30A0, 0x30FF}};
size_t match_deepseek_v3_cjk(Subject s, size_t pos) {
  return run_length(s, pos, [](char32_t c) { return in_ranges(c, kDeepseekV3Cjk); });
}

// f(start, length) for each maximal run of code points that pred accepts.
template <typename Pred, typename F>
void for_each_run(Subject s, Pred pred, F f) {
  for (size_t a = 0; a < s.size();) {
    const size_t n = run_length(s, a, pred);
    if (n == 0) {
      ++a;
      continue;
    }
    f(a, n);
    a += n;
  }
}

// AFMoE's digits (llama.cpp's custom \p{AFMoE_digits} pass): each \p{N} run on its own, in
// groups of three from its end, the first group the 1 or 2 left over:
// \p{N}{1,3}(?=(?:\p{N}{3})*(?!\p{N})).
void cut_number_groups_from_end(Subject s, std::vector<size_t>& cuts) {
  for_each_run(s, is_number, [&cuts](size_t a, size_t n) {
    cuts.push_back(a);
    for (size_t c = a + (n % 3 == 0 ? 3 : n % 3); c < a + n; c += 3) cuts.push_back(c);
    cuts.push_back(a + n);
  });
}

// SuperBPE's second pass, (?=(\d{3})+(?!\d)) with ASCII \d (llama.cpp's std::regex): an empty
// match, so a cut before every ASCII digit that starts a multiple of three digits up to its
// run's end, and none after the run. A run's short head stays with what came before it
// ("12½345" is "12½", "345").
void cut_digit_groups_from_run_end(Subject s, std::vector<size_t>& cuts) {
  for_each_run(s, is_ascii_digit, [&cuts](size_t a, size_t n) {
    if (n < 3) return;
    for (size_t c = a + n % 3; c < a + n; c += 3) cuts.push_back(c);
  });
}

// AFMoE's Asian scripts: CJK ideographs, extension A, compatibility ideographs, kana, half-width
// katakana, Kangxi radicals, Thai, Lao, Khmer, Myanmar (and its extensions), Hangul and its jamo.
constexpr std::pair<char32_t, char32_t> kAfmoeAsian[] = {
    {0x4E00, 0x9FFF}, {0x3400, 0x4DBF}, {0xF900, 0xFAFF}, {0x3040, 0x309F}, {0x30A0, 0x30FF},
    {0xFF65, 0xFF9F}, {0x2F00, 0x2FDF}, {0x0E00, 0x0E7F}, {0x0E80, 0x0EFF}, {0x1780, 0x17FF},
    {0x1000, 0x109F}, {0xAA60, 0xAA7F}, {0xA9E0, 0xA9FF}, {0xAC00, 0xD7AF}, {0x1100, 0x11FF}};
size_t match_afmoe_asian(Subject s, size_t pos) {
  return run_length(s, pos, [](char32_t c) { return in_ranges(c, kAfmoeAsian); });
}

// Punctuation as Hugging Face's Punctuation pre-tokenizer sees it (Unicode P and ASCII
// punctuation): [\p{P}\$\+<=>\^~\|`]+. llama.cpp's default pass omits the backquote.
template <bool kWithBackquote>
size_t match_punctuation_run(Subject s, size_t pos) {
  return run_length(s, pos, [](char32_t c) {
    return is_punctuation(c) || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' ||
           c == '^' || c == '~' || c == '|' || (kWithBackquote && c == '`');
  });
}

// ' ?[^(\s|.,!?…。，、।۔،)]+'
size_t match_bloom(Subject s, size_t pos) {
  auto word_char = [](char32_t c) {
    switch (c) {
      case '(':
      case '|':
      case '.':
      case ',':
      case '!':
      case '?':
      case ')':
      case U'…':
      case U'。':
      case U'，':
      case U'、':
      case U'।':
      case U'۔':
      case U'،':
        return false;
      default:
        return !is_whitespace(c);
    }
  };
  return optional_then_run(s, pos, is_space_char, word_char);
}

// Chameleon's passes (its tokenizer.json, as llama.cpp lists them): sentinel and image tokens,
// tabs, newlines and 4 or 2 spaces, single digits, single punctuation characters, then gpt2.
// <sentinel:[0-9]+>
size_t match_sentinel(Subject s, size_t pos) {
  constexpr std::u32string_view kOpen = U"<sentinel:";
  if (s.substr(pos, kOpen.size()) != kOpen) return 0;
  const size_t digits = run_length(s, pos + kOpen.size(), is_ascii_digit);
  const size_t close = pos + kOpen.size() + digits;
  return digits > 0 && close < s.size() && s[close] == '>' ? close + 1 - pos : 0;
}
// (IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z: a run of more than 4 letters A-I cannot end in Z after
// any 1-4 of them, so the run itself must be 1-4 long.
size_t match_image_token(Subject s, size_t pos) {
  constexpr std::u32string_view kPrefix = U"IMGIMG";
  if (s.substr(pos, kPrefix.size()) != kPrefix) return 0;
  const size_t letters =
      run_length(s, pos + kPrefix.size(), [](char32_t c) { return c >= 'A' && c <= 'I'; });
  const size_t z = pos + kPrefix.size() + letters;
  return letters >= 1 && letters <= 4 && z < s.size() && s[z] == 'Z' ? z + 1 - pos : 0;
}
// ([\t\n]|    |  )
size_t match_chameleon_whitespace(Subject s, size_t pos) {
  if (s[pos] == '\t' || s[pos] == '\n') return 1;
  // Up to 4 spaces: the rest of a run is the next match's (scanning it all would be quadratic).
  size_t spaces = 0;
  while (spaces < 4 && pos + spaces < s.size() && s[pos + spaces] == ' ') ++spaces;
  return spaces == 4 ? 4 : spaces >= 2 ? 2 : 0;
}
// [\p{P}!-/:-@\[-`{-~]: one punctuation character, Unicode's or ASCII's.
size_t match_single_punctuation(Subject s, size_t pos) {
  const char32_t c = s[pos];
  const bool ascii = (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
                     (c >= '{' && c <= '~');
  return ascii || is_punctuation(c) ? 1 : 0;
}

constexpr Pass kGpt2Passes[] = {match_gpt2};
constexpr Pass kLlama3Passes[] = {match_llama3_like<3>};
constexpr Pass kQwen2Passes[] = {match_llama3_like<1>};
constexpr Pass kSeedCoderPasses[] = {match_llama3_like<1, false>};
constexpr Pass kQwen35Passes[] = {match_llama3_like<1, true, true>};
constexpr Pass kTekkenPasses[] = {match_cased_words<false, 1>};
constexpr Pass kGpt4oPasses[] = {match_cased_words<true, 3>};
constexpr Pass kDeepseekLlmPasses[] = {
    match_newline,           match_deepseek_letters, match_deepseek_punctuation,
    cut_trailing_whitespace, match_deepseek_cjk,     match_number_run};
constexpr Pass kDeepseekCoderPasses[] = {match_newline, match_space_letters,
                                         match_space_punctuation, match_deepseek_cjk,
                                         match_single_number};
constexpr Pass kDeepseekV3Passes[] = {match_number_triple, match_deepseek_v3_cjk,
                                      match_deepseek_v3_words};
constexpr Pass kAfmoePasses[] = {cut_number_groups_from_end, match_afmoe_asian,
                                 match_deepseek_v3_words};
// Hugging Face's Falcon: Punctuation, ByteLevel, Digits, Split([0-9][0-9][0-9]). Its digit
// runs are ASCII: the reference ids keep " ½" whole (StarCoder's single digits are \p{N}).
constexpr Pass kFalconPasses[] = {match_punctuation_run<true>, match_gpt2, match_ascii_digit_run,
                                  match_ascii_digit_triple};
// Hugging Face's StarCoder: Digits(individual_digits), ByteLevel.
constexpr Pass kStarcoderPasses[] = {match_single_number, match_gpt2};
constexpr Pass kChameleonPasses[] = {
    match_sentinel,      match_image_token,        match_chameleon_whitespace,
    match_single_number, match_single_punctuation, match_gpt2};
// llama.cpp's SuperBPE: number runs, then ASCII digits in threes from the right (no word
// splitting: its merges cross spaces).
constexpr Pass kSuperbpePasses[] = {match_number_run, cut_digit_groups_from_run_end};
constexpr Pass kBloomPasses[] = {match_bloom};
// llama.cpp's Viking: BLOOM's pass, then single digits.
constexpr Pass kVikingPasses[] = {match_bloom, match_single_number};
constexpr Pass kBpeDefaultPasses[] = {match_punctuation_run<false>, match_gpt2, match_number_run,
                                      match_ascii_digit_triple};

std::span<const Pass> passes_of(PreTokenizer kind) {
  switch (kind) {
    case PreTokenizer::none:
      return {};
    case PreTokenizer::gpt2:
      return kGpt2Passes;
    case PreTokenizer::llama3:
      return kLlama3Passes;
    case PreTokenizer::qwen2:
      return kQwen2Passes;
    case PreTokenizer::seed_coder:
      return kSeedCoderPasses;
    case PreTokenizer::qwen35:
      return kQwen35Passes;
    case PreTokenizer::tekken:
      return kTekkenPasses;
    case PreTokenizer::gpt4o:
      return kGpt4oPasses;
    case PreTokenizer::deepseek_llm:
      return kDeepseekLlmPasses;
    case PreTokenizer::deepseek_coder:
      return kDeepseekCoderPasses;
    case PreTokenizer::deepseek_v3:
      return kDeepseekV3Passes;
    case PreTokenizer::afmoe:
      return kAfmoePasses;
    case PreTokenizer::falcon:
      return kFalconPasses;
    case PreTokenizer::starcoder:
      return kStarcoderPasses;
    case PreTokenizer::chameleon:
      return kChameleonPasses;
    case PreTokenizer::superbpe:
      return kSuperbpePasses;
    case PreTokenizer::bloom:
      return kBloomPasses;
    case PreTokenizer::viking:
      return kVikingPasses;
    case PreTokenizer::bpe_default:
      return kBpeDefaultPasses;
  }
  return {};
}

using Range = std::pair<size_t, size_t>;  // [first, last) code point indices

void split_pass(std::u32string_view text, const std::vector<Range>& pieces, const Pass& pass,
                std::vector<Range>& out) {
  out.clear();
  std::vector<size_t> cuts;
  for (const auto& [first, last] : pieces) {
    const Subject s = text.substr(first, last - first);
    if (pass.cut != nullptr) {
      cuts.clear();
      pass.cut(s, cuts);
      size_t start = 0;
      for (size_t c : cuts) {
        if (c <= start || c >= s.size()) continue;
        out.emplace_back(first + start, first + c);
        start = c;
      }
      out.emplace_back(first + start, last);
      continue;
    }
    const Matcher matcher = pass.match;
    size_t unmatched = 0, pos = 0;
    while (pos < s.size()) {
      const size_t n = matcher(s, pos);
      if (n == 0) {
        ++pos;
        continue;
      }
      if (unmatched < pos) out.emplace_back(first + unmatched, first + pos);
      out.emplace_back(first + pos, first + pos + n);
      pos += n;
      unmatched = pos;
    }
    if (unmatched < s.size()) out.emplace_back(first + unmatched, last);
  }
}

constexpr std::string_view kDeepseekV3WordsPattern =
    "[!\"#$%&'()*+,\\-./"
    ":;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
    "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";

constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace

std::vector<std::string_view> pretokenize(PreTokenizer kind, std::string_view text) {
  if (text.empty()) return {};
  // Code points, and the byte offset of each (plus the end) to turn ranges into views.
  std::u32string cps;
  std::vector<size_t> byte_offset;
  cps.reserve(text.size());
  byte_offset.reserve(text.size() + 1);
  for (size_t offset = 0; offset < text.size();) {
    const DecodedCodePoint d = decode_code_point(text, offset);
    byte_offset.push_back(offset);
    cps.push_back(d.cp);
    offset += d.length;
  }
  byte_offset.push_back(text.size());

  std::vector<Range> pieces{{0, cps.size()}}, next;
  for (const Pass& pass : passes_of(kind)) {
    split_pass(cps, pieces, pass, next);
    pieces.swap(next);
  }
  std::vector<std::string_view> words;
  words.reserve(pieces.size());
  for (const auto& [first, last] : pieces) {
    words.push_back(text.substr(byte_offset[first], byte_offset[last] - byte_offset[first]));
  }
  return words;
}

std::optional<PreTokenizer> pre_tokenizer_from_gguf_name(std::string_view name) {
  struct Entry {
    std::string_view name;
    PreTokenizer kind;
  };
  static constexpr Entry kNames[] = {
      {"default", PreTokenizer::bpe_default},
      {"gpt-2", PreTokenizer::gpt2},
      {"gpt2", PreTokenizer::gpt2},
      {"mpt", PreTokenizer::gpt2},
      {"olmo", PreTokenizer::gpt2},
      {"gpt-neox", PreTokenizer::gpt2},
      {"jais", PreTokenizer::gpt2},
      {"phi-2", PreTokenizer::gpt2},
      {"roberta-bpe", PreTokenizer::gpt2},
      {"jina-v1-en", PreTokenizer::gpt2},
      {"jina-es", PreTokenizer::gpt2},
      {"jina-de", PreTokenizer::gpt2},
      {"jina-v2-es", PreTokenizer::gpt2},
      {"jina-v2-de", PreTokenizer::gpt2},
      {"jina-v2-code", PreTokenizer::gpt2},
      {"gigachat", PreTokenizer::gpt2},
      {"a.x-4.0", PreTokenizer::gpt2},
      {"mellum", PreTokenizer::gpt2},
      {"modern-bert", PreTokenizer::gpt2},
      {"exaone4", PreTokenizer::gpt2},
      {"trillion", PreTokenizer::gpt2},
      {"granite-docling", PreTokenizer::gpt2},
      {"llama3", PreTokenizer::llama3},
      {"llama-v3", PreTokenizer::llama3},
      {"llama-bpe", PreTokenizer::llama3},
      {"falcon3", PreTokenizer::llama3},
      {"dbrx", PreTokenizer::llama3},
      {"smaug-bpe", PreTokenizer::llama3},
      {"chatglm-bpe", PreTokenizer::llama3},
      {"pixtral", PreTokenizer::llama3},
      {"falcon-h1", PreTokenizer::llama3},
      {"midm-2.0", PreTokenizer::llama3},
      {"lfm2", PreTokenizer::llama3},
      {"jina-v5-nano", PreTokenizer::llama3},
      {"glm4", PreTokenizer::llama3},
      {"qwen2", PreTokenizer::qwen2},
      {"deepseek-r1-qwen", PreTokenizer::qwen2},
      {"stablelm2", PreTokenizer::qwen2},
      {"kormo", PreTokenizer::qwen2},
      {"megrez", PreTokenizer::qwen2},
      {"hunyuan", PreTokenizer::qwen2},
      {"grok-2", PreTokenizer::qwen2},
      {"bailingmoe", PreTokenizer::qwen2},
      {"bailingmoe2", PreTokenizer::qwen2},
      {"llada-moe", PreTokenizer::qwen2},
      {"solar-open", PreTokenizer::qwen2},
      {"seed-coder", PreTokenizer::seed_coder},
      {"qwen35", PreTokenizer::qwen35},
      {"f2llmv2", PreTokenizer::qwen2},
      {"tekken", PreTokenizer::tekken},
      {"gpt-4o", PreTokenizer::gpt4o},
      {"llama4", PreTokenizer::gpt4o},
      {"minimax-m2", PreTokenizer::gpt4o},
      {"kanana2", PreTokenizer::gpt4o},
      {"talkie", PreTokenizer::gpt4o},
      {"deepseek-llm", PreTokenizer::deepseek_llm},
      {"deepseek-coder", PreTokenizer::deepseek_coder},
      {"deepseek-v3", PreTokenizer::deepseek_v3},
      {"hunyuan-dense", PreTokenizer::deepseek_v3},
      {"joyai-llm", PreTokenizer::deepseek_v3},
      {"afmoe", PreTokenizer::afmoe},
      {"falcon", PreTokenizer::falcon},
      {"starcoder", PreTokenizer::starcoder},
      {"refact", PreTokenizer::starcoder},
      {"command-r", PreTokenizer::starcoder},
      {"smollm", PreTokenizer::starcoder},
      {"codeshell", PreTokenizer::starcoder},
      {"exaone", PreTokenizer::starcoder},
      {"minerva-7b", PreTokenizer::starcoder},
      {"chameleon", PreTokenizer::chameleon},
      {"superbpe", PreTokenizer::superbpe},
      {"bloom", PreTokenizer::bloom},
      {"poro-chat", PreTokenizer::bloom},
      {"gpt3-finnish", PreTokenizer::bloom},
      {"viking", PreTokenizer::viking},
  };
  for (const Entry& e : kNames) {
    if (e.name == name) return e.kind;
  }
  return std::nullopt;
}

// Llama 3's names and tekken: llama.cpp reads them with ignore_merges and add_bos.
constexpr std::string_view kLlama3LikeNames[] = {"llama3",       "llama-v3", "llama-bpe", "falcon3",
                                                 "falcon-h1",    "pixtral",  "midm-2.0",  "lfm2",
                                                 "jina-v5-nano", "tekken"};

bool gguf_pre_tokenizer_ignores_merges(std::string_view name) {
  return std::ranges::find(kLlama3LikeNames, name) != std::end(kLlama3LikeNames);
}

bool gguf_pre_tokenizer_adds_bos(std::string_view name) {
  return gguf_pre_tokenizer_ignores_merges(name) || name == "chameleon";
}

std::string_view pre_tokenizer_name(PreTokenizer kind) {
  switch (kind) {
    case PreTokenizer::none:
      return "none";
    case PreTokenizer::gpt2:
      return "gpt-2";
    case PreTokenizer::llama3:
      return "llama-bpe";
    case PreTokenizer::qwen2:
      return "qwen2";
    case PreTokenizer::seed_coder:
      return "seed-coder";
    case PreTokenizer::qwen35:
      return "qwen35";
    case PreTokenizer::tekken:
      return "tekken";
    case PreTokenizer::gpt4o:
      return "gpt-4o";
    case PreTokenizer::deepseek_llm:
      return "deepseek-llm";
    case PreTokenizer::deepseek_coder:
      return "deepseek-coder";
    case PreTokenizer::deepseek_v3:
      return "deepseek-v3";
    case PreTokenizer::afmoe:
      return "afmoe";
    case PreTokenizer::falcon:
      return "falcon";
    case PreTokenizer::starcoder:
      return "starcoder";
    case PreTokenizer::chameleon:
      return "chameleon";
    case PreTokenizer::superbpe:
      return "superbpe";
    case PreTokenizer::bloom:
      return "bloom";
    case PreTokenizer::viking:
      return "viking";
    case PreTokenizer::bpe_default:
      return "default";
  }
  return "?";
}

std::vector<std::string_view> pre_tokenizer_steps(PreTokenizer kind) {
  switch (kind) {
    case PreTokenizer::none:
      return {};
    case PreTokenizer::gpt2:
      return {kGpt2Pattern};
    case PreTokenizer::llama3:
      return {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3})"
              R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
    case PreTokenizer::qwen2:
      return {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})"
              R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
    case PreTokenizer::seed_coder:
      return {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1})"
              R"(| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)"};
    case PreTokenizer::qwen35:
      return {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N})"
              R"(| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
    case PreTokenizer::tekken:
      return {R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
              R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)"
              R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
    case PreTokenizer::gpt4o:
      return {R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
              R"((?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
              R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)"
              R"((?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
              R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
    case PreTokenizer::deepseek_llm:
      return {
          "[\r\n]",
          "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-"
          "ԯԱ-"
          "ՖႠ-"
          "ჅᎠ-"
          "Ᏽᏸ-"
          "ᏽᲐ-"
          "ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-"
          "Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳ"
          "Ꙁ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-"
          "𐓓𐓘-"
          "𐓻𐲀-"
          "𐲲𐳀-"
          "𐳲𑢠-"
          "𑣟𞤀-𞥃]+",
          "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
          "\\s+$",
          "[一-龥ࠀ-一가-퟿]+",
          "\\p{N}+"};
    case PreTokenizer::deepseek_coder:
      return {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\\p{N}"};
    case PreTokenizer::deepseek_v3:
      return {R"(\p{N}{1,3})", "[一-龥\u3040-ゟ゠-ヿ]+", kDeepseekV3WordsPattern};
    case PreTokenizer::afmoe:  // its digit pass is not a regex of the model's files
      return {};
    case PreTokenizer::falcon:
      return {"<punctuation>", kGpt2Pattern, "<digit-runs>", "[0-9][0-9][0-9]"};
    case PreTokenizer::starcoder:
      return {"<digits>", kGpt2Pattern};
    case PreTokenizer::chameleon:
      return {"<sentinel:[0-9]+>",       "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
              R"(([\t\n]|    |  ))",     R"(\p{N})",
              R"([\p{P}!-/:-@\[-`{-~])", kGpt2Pattern};
    case PreTokenizer::superbpe:
      return {R"(\p{N}+)", R"((?=(\d{3})+(?!\d)))"};
    case PreTokenizer::bloom:
      return {R"( ?[^(\s|.,!?…。，、।۔،)]+)"};
    case PreTokenizer::viking:
      return {R"( ?[^(\s|.,!?…。，、।۔،)]+)", R"(\p{N})"};
    case PreTokenizer::bpe_default:
      return {};
  }
  return {};
}

}  // namespace oxi::tokenizer
