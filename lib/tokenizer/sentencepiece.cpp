// SentencePiece BPE as llama.cpp runs it: start from UTF-8 characters and repeatedly merge the
// adjacent pair whose concatenation is the highest-scoring vocabulary entry (leftmost first on
// ties); characters that end up in no token fall back to <0xXX> byte tokens.
#include <queue>
#include <string>
#include <vector>

#include "lib/tokenizer/tokenizer_impl.h"
#include "lib/tokenizer/unicode.h"

namespace oxi::tokenizer {

namespace {

struct Symbol {
  size_t begin = 0, length = 0;  // bytes in the escaped text; length 0 once merged away
  int prev = -1, next = -1;
};

struct Bigram {
  int left, right;
  float score;
  size_t length;  // bytes of the merged text, to detect stale entries
};

struct BigramOrder {  // highest score first, then leftmost
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

void encode_sentencepiece(const Tokenizer::Impl& impl, std::string_view raw, bool at_start,
                          std::vector<int32_t>& out) {
  std::string text;
  text.reserve(raw.size() + 8);
  if (impl.spec.add_space_prefix && at_start) text += "\xE2\x96\x81";
  for (char c : raw) {
    if (c == ' ' && impl.spec.escape_spaces)
      text += "\xE2\x96\x81";
    else
      text += c;
  }

  std::vector<Symbol> symbols;
  for (size_t pos = 0; pos < text.size();) {
    const size_t n =
        std::min(utf8_sequence_length(static_cast<uint8_t>(text[pos])), text.size() - pos);
    Symbol s;
    s.begin = pos;
    s.length = n;
    s.prev = static_cast<int>(symbols.size()) - 1;
    pos += n;
    s.next = pos == text.size() ? -1 : static_cast<int>(symbols.size()) + 1;
    symbols.push_back(s);
  }

  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const std::string_view merged(text.data() + symbols[left].begin,
                                  symbols[left].length + symbols[right].length);
    const int32_t id = impl.find(merged);
    if (id < 0) return;
    const float score = impl.spec.scores.empty() ? 0.0f : impl.spec.scores[id];
    queue.push({left, right, score, merged.size()});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& left = symbols[b.left];
    Symbol& right = symbols[b.right];
    if (left.length == 0 || right.length == 0 || left.length + right.length != b.length) continue;
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = b.left;
    try_add(left.prev, b.left);
    try_add(b.left, left.next);
  }

  for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[i].next) {
    const std::string_view piece(text.data() + symbols[i].begin, symbols[i].length);
    const int32_t id = impl.find(piece);
    if (id >= 0)
      out.push_back(id);
    else
      impl.append_bytes(piece, out);
  }
}

}  // namespace oxi::tokenizer
