// Random edits of a file's bytes for fuzz tests of readers: bit flips, random bytes, bumps of
// what may be a 4- or 8-byte length or count field, and cuts; and one-character edits of text.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oxi::test {

// `seed` with 1-4 random edits (B is uint8_t or std::byte). May return an empty vector.
template <class B>
std::vector<B> edit_bytes(const std::vector<B>& seed, std::mt19937& rng) {
  std::vector<B> m = seed;
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !m.empty(); ++e) {
    const size_t at = rng() % m.size();
    switch (rng() % 4) {
      case 0:
        m[at] = static_cast<B>(static_cast<uint8_t>(m[at]) ^ (1u << (rng() % 8)));
        break;
      case 1:
        m[at] = static_cast<B>(rng());
        break;
      case 2: {  // bump what may be a length or count field
        const size_t width = (rng() % 2) ? 4 : 8;
        if (at + width <= m.size()) {
          uint64_t v = 0;
          std::memcpy(&v, m.data() + at, width);
          const uint64_t bumps[] = {
              1, static_cast<uint64_t>(-1), 0x100, 1ull << 31, 1ull << 32, 1ull << 63};
          v += bumps[rng() % 6];
          std::memcpy(m.data() + at, &v, width);
        }
        break;
      }
      default:
        m.resize(at);
        break;
    }
  }
  return m;
}

// `text` with one character removed, inserted from `alphabet` or replaced by one of it (for
// text parsers: JSON, grammars). `text` must not be empty.
inline std::string edit_char(std::string text, std::string_view alphabet, std::mt19937& rng) {
  const size_t at = rng() % text.size();
  switch (rng() % 3) {
    case 0:
      text.erase(at, 1);
      break;
    case 1:
      text.insert(at, 1, alphabet[rng() % alphabet.size()]);
      break;
    default:
      text[at] = alphabet[rng() % alphabet.size()];
  }
  return text;
}

// Every string of up to max_length characters over `alphabet`, shortest first ("" included),
// then `random` more of random lengths min_random..max_random (inclusive) drawn from `rng`.
inline std::vector<std::string> strings_over(std::string_view alphabet, size_t max_length,
                                             size_t random, size_t min_random, size_t max_random,
                                             std::mt19937& rng) {
  std::vector<std::string> strings = {""};
  for (size_t n = 0, start = 0; n < max_length; ++n) {
    const size_t end = strings.size();
    for (size_t i = start; i < end; ++i)
      for (char c : alphabet) strings.push_back(strings[i] + c);
    start = end;
  }
  for (size_t i = 0; i < random; ++i) {
    std::string s(min_random + rng() % (max_random - min_random + 1), ' ');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    strings.push_back(std::move(s));
  }
  return strings;
}

}  // namespace oxi::test
