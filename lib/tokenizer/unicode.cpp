#include "lib/tokenizer/unicode.h"

#include <algorithm>
#include <iterator>

#include "lib/tokenizer/unicode_tables.h"

namespace oxi::tokenizer {

namespace tables = unicode_tables;

Category category(char32_t cp) noexcept {
  if (cp >= 0x110000) return Category::Cn;
  const auto* end = std::end(tables::kCategoryRuns);
  // The last run starting at or before cp.
  const auto* it =
      std::upper_bound(std::begin(tables::kCategoryRuns), end, cp,
                       [](char32_t v, const tables::CategoryRun& run) { return v < run.first; });
  return static_cast<Category>(std::prev(it)->category);
}

bool is_whitespace(char32_t cp) noexcept {
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

size_t utf8_sequence_length(uint8_t lead) noexcept {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

DecodedCodePoint decode_code_point(std::string_view text, size_t pos) noexcept {
  const auto lead = static_cast<uint8_t>(text[pos]);
  if (lead < 0x80) return {lead, 1};
  const size_t n = utf8_sequence_length(lead);
  if (n == 1 || pos + n > text.size()) return {0xFFFD, 1};
  char32_t cp = lead & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    const auto byte = static_cast<uint8_t>(text[pos + k]);
    if ((byte & 0xC0) != 0x80) return {0xFFFD, 1};
    cp = (cp << 6) | (byte & 0x3F);
  }
  return {cp, n};
}

std::u32string decode_utf8(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const DecodedCodePoint d = decode_code_point(text, i);
    out.push_back(d.cp);
    i += d.length;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string encode_utf8(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) append_utf8(out, cp);
  return out;
}

namespace {

template <size_t N, size_t M>
bool append_mapping(std::u32string& out, char32_t cp, const tables::Mapping (&rows)[N],
                    const char32_t (&data)[M]) {
  const auto* it =
      std::lower_bound(std::begin(rows), std::end(rows), cp,
                       [](const tables::Mapping& row, char32_t v) { return row.code_point < v; });
  if (it == std::end(rows) || it->code_point != cp) return false;
  out.append(data + it->offset, it->length);
  return true;
}

// Hangul syllables decompose and compose arithmetically (Unicode 3.12): S = SBase + (L index *
// VCount + V index) * TCount + T index.
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28;
constexpr char32_t kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

}  // namespace

void append_nfd(std::u32string& out, char32_t cp) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  if (!append_mapping(out, cp, tables::kNfdMappings, tables::kNfdData)) out.push_back(cp);
}

uint8_t combining_class(char32_t cp) noexcept {
  if (cp >= 0x110000) return 0;
  const auto* it = std::upper_bound(
      std::begin(tables::kCombiningClassRuns), std::end(tables::kCombiningClassRuns), cp,
      [](char32_t v, const tables::CombiningClassRun& run) { return v < run.first; });
  return std::prev(it)->ccc;
}

namespace {

// The primary composite of the canonical pair (a, b), or 0 (UAX #15; Hangul arithmetically).
char32_t compose_pair(char32_t a, char32_t b) noexcept {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount)
    return a + (b - kTBase);
  const auto* end = std::end(tables::kCompositions);
  const auto* it =
      std::lower_bound(std::begin(tables::kCompositions), end, std::pair(a, b),
                       [](const tables::Composition& c, std::pair<char32_t, char32_t> k) {
                         return c.first != k.first ? c.first < k.first : c.second < k.second;
                       });
  return it != end && it->first == a && it->second == b ? it->composite : 0;
}

// Full compatibility decomposition of cp (Hangul as in NFD).
void append_nfkd(std::u32string& out, char32_t cp) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    append_nfd(out, cp);
    return;
  }
  if (!append_mapping(out, cp, tables::kNfkdMappings, tables::kNfkdData)) out.push_back(cp);
}

// Steps 2 and 3 of NFC / NFKC on a full decomposition d.
std::u32string compose(std::u32string d) {
  // 2. Canonical ordering: each run of non-starters sorted stably by combining class.
  for (size_t i = 1; i < d.size(); ++i) {
    const uint8_t c = combining_class(d[i]);
    if (c == 0) continue;
    for (size_t j = i; j > 0; --j) {
      const uint8_t prev = combining_class(d[j - 1]);
      if (prev == 0 || prev <= c) break;
      std::swap(d[j - 1], d[j]);
    }
  }
  // 3. Canonical composition: a character joins the last starter unless a character between
  //    them has a class >= its own (blocked); a starter joins only an adjacent starter.
  std::u32string out;
  out.reserve(d.size());
  size_t starter = std::u32string::npos;
  int last_class = -1;  // class of out.back(); -1 right after the starter (nothing between)
  for (char32_t cp : d) {
    const int c = combining_class(cp);
    if (starter != std::u32string::npos && (last_class == -1 || last_class < c)) {
      if (const char32_t composite = compose_pair(out[starter], cp); composite != 0) {
        out[starter] = composite;
        continue;
      }
    }
    if (c == 0) {
      starter = out.size();
      last_class = -1;
    } else {
      last_class = c;
    }
    out.push_back(cp);
  }
  return out;
}

}  // namespace

std::u32string nfc(std::u32string_view text) {
  std::u32string d;
  d.reserve(text.size());
  for (char32_t cp : text) append_nfd(d, cp);
  return compose(std::move(d));
}

std::u32string nfkc(std::u32string_view text) {
  std::u32string d;
  d.reserve(text.size());
  for (char32_t cp : text) append_nfkd(d, cp);
  return compose(std::move(d));
}

void append_lowercase(std::u32string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
    return;
  }
  if (!append_mapping(out, cp, tables::kLowercaseMappings, tables::kLowercaseData)) {
    out.push_back(cp);
  }
}

void append_uppercase(std::u32string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(cp >= 'a' && cp <= 'z' ? cp - 32 : cp);
    return;
  }
  if (!append_mapping(out, cp, tables::kUppercaseMappings, tables::kUppercaseData)) {
    out.push_back(cp);
  }
}

void append_titlecase(std::u32string& out, char32_t cp) {
  if (!append_mapping(out, cp, tables::kTitlecaseMappings, tables::kTitlecaseData))
    append_uppercase(out, cp);
}

StrProperties str_properties(char32_t cp) noexcept {
  uint8_t f = 0;
  if (cp < 0x110000) {
    const auto* end = std::end(tables::kStrPropertyRuns);
    const auto* it = std::upper_bound(
        std::begin(tables::kStrPropertyRuns), end, cp,
        [](char32_t v, const tables::StrPropertyRun& run) { return v < run.first; });
    f = std::prev(it)->flags;
  }
  return {(f & 1) != 0,  (f & 2) != 0,  (f & 4) != 0,  (f & 8) != 0,
          (f & 16) != 0, (f & 32) != 0, (f & 64) != 0, (f & 128) != 0};
}

}  // namespace oxi::tokenizer
