// BPE by merge rank (GPT-2 and its descendants, and SentencePiece vocabularies exported as BPE):
// pre-tokenize into words, spell each word in the vocabulary's alphabet (GPT-2's
// bytes-to-unicode characters, or "▁"-escaped text), start from its characters and repeatedly
// apply the lowest-ranked merge among adjacent pairs (leftmost on ties).
#include <queue>
#include <string>
#include <vector>

#include "lib/tokenizer/tokenizer_impl.h"
#include "lib/tokenizer/unicode.h"

namespace oxi::tokenizer {

std::array<char32_t, 256> gpt2_byte_to_code_point() {
  // Printable Latin-1 bytes stand for themselves; the others take the code points from 256 on,
  // in byte order (openai/gpt-2 encoder.py bytes_to_unicode).
  std::array<char32_t, 256> table{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    table[b] = printable ? static_cast<char32_t>(b) : next++;
  }
  return table;
}

namespace {

struct Symbol {
  int32_t id;                 // -1: a character outside the vocabulary
  size_t begin = 0, end = 0;  // bytes of the spelled word
  int prev = -1, next = -1;
  bool alive = true;
};

struct Candidate {
  int32_t rank;
  int left, right;
  int32_t left_id, right_id, result;
};

struct CandidateOrder {  // lowest rank first, then leftmost
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

void merge_word(const Tokenizer::Impl& impl, std::string_view word, std::vector<int32_t>& out) {
  if (word.empty()) return;
  if (impl.spec.ignore_merges) {
    if (const int32_t id = impl.find(word); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  std::vector<Symbol> symbols;
  for (size_t pos = 0; pos < word.size();) {
    const size_t n = decode_code_point(word, pos).length;
    Symbol s;
    s.id = impl.find(word.substr(pos, n));
    s.begin = pos;
    s.end = pos + n;
    s.prev = static_cast<int>(symbols.size()) - 1;
    s.next = pos + n == word.size() ? -1 : static_cast<int>(symbols.size()) + 1;
    symbols.push_back(s);
    pos += n;
  }

  std::priority_queue<Candidate, std::vector<Candidate>, CandidateOrder> queue;
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const int32_t a = symbols[left].id, b = symbols[right].id;
    if (a < 0 || b < 0) return;
    const auto it = impl.merges.find((static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b));
    if (it == impl.merges.end()) return;
    queue.push({it->second.rank, left, right, a, b, it->second.result});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = symbols[c.left];
    Symbol& right = symbols[c.right];
    // Stale when either side changed since the candidate was queued.
    if (!left.alive || !right.alive || left.next != c.right || left.id != c.left_id ||
        right.id != c.right_id) {
      continue;
    }
    left.id = c.result;
    left.end = right.end;
    left.next = right.next;
    right.alive = false;
    if (right.next >= 0) symbols[right.next].prev = c.left;
    try_add(left.prev, c.left);
    try_add(c.left, left.next);
  }

  for (int i = 0; i != -1; i = symbols[i].next) {
    const Symbol& s = symbols[i];
    if (s.id >= 0) {
      out.push_back(s.id);
      continue;
    }
    const std::string_view piece = word.substr(s.begin, s.end - s.begin);
    if (!impl.spec.byte_level) {
      impl.append_bytes(piece, out);
      continue;
    }
    // A byte-level character outside the vocabulary: fall back to the unknown token.
    if (impl.spec.unk) out.push_back(*impl.spec.unk);
  }
}

}  // namespace

void encode_bpe(const Tokenizer::Impl& impl, std::string_view text, bool at_start,
                std::vector<int32_t>& out) {
  std::string spelled;
  for (std::string_view word : pretokenize(impl.spec.pre_tokenizer, text)) {
    spelled.clear();
    if (impl.spec.byte_level) {
      for (char c : word) spelled += impl.byte_chars[static_cast<uint8_t>(c)];
    } else {
      if (impl.spec.add_space_prefix && at_start) spelled += "\xE2\x96\x81";
      at_start = false;
      for (char c : word) {
        if (c == ' ' && impl.spec.escape_spaces)
          spelled += "\xE2\x96\x81";
        else
          spelled += c;
      }
    }
    merge_word(impl, spelled, out);
  }
}

}  // namespace oxi::tokenizer
