#include "lib/llm/grammar_matcher.h"

#include <algorithm>

#include "lib/core/error.h"

namespace oxi::llm {
namespace {

// Ways the text can go on that a state may hold; a grammar that needs more is refused.
constexpr size_t kMaxStacks = 4096;

bool is_continuation(uint8_t b) {
  return (b & 0xC0) == 0x80;
}

// Bytes in a UTF-8 character that starts with `lead`; 0 for a byte no character starts with.
size_t sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// The code points a character whose first `bytes` are known (a valid start) can be.
std::pair<char32_t, char32_t> possible_code_points(std::string_view bytes, size_t length) {
  static constexpr char32_t kLeadMask[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  static constexpr char32_t kLowest[5] = {0, 0, 0x80, 0x800, 0x10000};
  char32_t value = static_cast<uint8_t>(bytes[0]) & kLeadMask[length];
  for (size_t i = 1; i < bytes.size(); ++i) value = (value << 6) | (bytes[i] & 0x3F);
  const size_t missing = length - bytes.size();
  const char32_t first = value << (6 * missing);
  const char32_t last = first | ((char32_t{1} << (6 * missing)) - 1);
  return {std::max(first, kLowest[length]), std::min<char32_t>(last, 0x10FFFF)};
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const gbnf::Grammar> grammar)
    : grammar_(std::move(grammar)) {
  const gbnf::Rule& root = grammar_->rules.at(grammar_->root);
  for (uint32_t a = 0; a < root.alternatives.size(); ++a)
    expand(Stack{{grammar_->root, a, 0}}, state_.stacks);
}

const gbnf::Symbol& GrammarMatcher::symbol_at(const Position& p) const {
  return grammar_->rules[p.rule].alternatives[p.alternative][p.element];
}

const gbnf::CharSet& GrammarMatcher::top_set(const Stack& stack) const {
  return grammar_->sets[symbol_at(stack.back()).index];
}

// Moves `stack` on to its next character sets: finished sequences return to their caller, a
// rule reference opens each of the rule's alternatives. Adds each distinct result to `out`.
// A work list rather than recursion: a chain of rules that each start with the next may be long.
void GrammarMatcher::expand(Stack stack, std::vector<Stack>& out) const {
  std::vector<Stack> work;
  work.push_back(std::move(stack));
  while (!work.empty()) {
    Stack s = std::move(work.back());
    work.pop_back();
    std::optional<uint32_t> opens;  // the rule a reference on top opens
    while (!s.empty()) {
      const Position top = s.back();
      const gbnf::Sequence& seq = grammar_->rules[top.rule].alternatives[top.alternative];
      if (top.element == seq.size()) {
        s.pop_back();
        continue;
      }
      const gbnf::Symbol symbol = seq[top.element];
      if (!symbol.is_rule) break;
      // The caller continues after the reference; a reference that ends its sequence leaves
      // nothing to return to (so right recursion, x*, keeps the stack short).
      if (top.element + 1 == seq.size())
        s.pop_back();
      else
        ++s.back().element;
      opens = symbol.index;
      break;
    }
    if (!opens) {
      if (std::find(out.begin(), out.end(), s) == out.end()) {
        if (out.size() >= kMaxStacks)
          throw Error("grammar", "too ambiguous: more than " + std::to_string(kMaxStacks) +
                                     " ways to go on at once");
        out.push_back(std::move(s));
      }
      continue;
    }
    const gbnf::Rule& rule = grammar_->rules[*opens];
    for (uint32_t a = static_cast<uint32_t>(rule.alternatives.size()); a-- > 0;) {
      Stack next = s;
      next.push_back({*opens, a, 0});
      work.push_back(std::move(next));
    }
  }
}

std::vector<GrammarMatcher::Stack> GrammarMatcher::step(const std::vector<Stack>& stacks,
                                                        char32_t c) const {
  std::vector<Stack> out;
  for (const Stack& stack : stacks) {
    if (stack.empty() || !top_set(stack).matches(c)) continue;
    Stack next = stack;
    ++next.back().element;
    expand(std::move(next), out);
  }
  return out;
}

std::optional<GrammarMatcher::State> GrammarMatcher::advance(std::string_view bytes,
                                                             bool check_only) const {
  const std::string text = state_.pending + std::string(bytes);
  const std::vector<Stack>* stacks = &state_.stacks;
  State next;
  size_t i = 0;
  while (i < text.size()) {
    const size_t length = sequence_length(static_cast<uint8_t>(text[i]));
    if (length == 0) return std::nullopt;  // not UTF-8
    const size_t have = std::min(length, text.size() - i);
    for (size_t k = 1; k < have; ++k)
      if (!is_continuation(static_cast<uint8_t>(text[i + k]))) return std::nullopt;
    if (have < length) {  // the text ends inside this character
      const auto range = possible_code_points(std::string_view(text).substr(i), length);
      if (range.first > range.second) return std::nullopt;
      const bool possible = std::any_of(stacks->begin(), stacks->end(), [&](const Stack& s) {
        return !s.empty() && top_set(s).matches_some(range.first, range.second);
      });
      if (!possible) return std::nullopt;
      next.pending = text.substr(i);
      break;
    }
    const auto range = possible_code_points(std::string_view(text).substr(i, length), length);
    const char32_t c = range.first;
    if (c != range.second) return std::nullopt;  // overlong or beyond U+10FFFF
    if (check_only && i + length == text.size()) {
      // The last character: a stack whose top matches it is enough (stepping past a match
      // always leaves a stack), so the stacks are not built.
      const bool possible = std::any_of(stacks->begin(), stacks->end(), [&](const Stack& s) {
        return !s.empty() && top_set(s).matches(c);
      });
      if (!possible) return std::nullopt;
      return State{};
    }
    next.stacks = step(*stacks, c);
    if (next.stacks.empty()) return std::nullopt;
    stacks = &next.stacks;
    i += length;
  }
  if (check_only) return State{};
  if (stacks != &next.stacks) next.stacks = *stacks;
  return next;
}

bool GrammarMatcher::accepts(std::string_view bytes) const {
  return advance(bytes, /*check_only=*/true).has_value();
}

std::optional<GrammarMatcher> GrammarMatcher::after(std::string_view bytes) const {
  std::optional<State> next = advance(bytes);
  if (!next) return std::nullopt;
  return GrammarMatcher(grammar_, std::move(*next));
}

void GrammarMatcher::accept(std::string_view bytes) {
  std::optional<State> next = advance(bytes);
  if (!next) throw Error("grammar", "the text cannot continue with '" + std::string(bytes) + "'");
  state_ = std::move(*next);
}

bool GrammarMatcher::can_end() const {
  return state_.pending.empty() && std::any_of(state_.stacks.begin(), state_.stacks.end(),
                                               [](const Stack& s) { return s.empty(); });
}

std::string GrammarMatcher::state_key() const {
  std::vector<std::string> stacks;
  for (const Stack& stack : state_.stacks)
    stacks.emplace_back(reinterpret_cast<const char*>(stack.data()),
                        stack.size() * sizeof(Position));
  std::sort(stacks.begin(), stacks.end());  // the same set, whatever order it was built in
  std::string key = state_.pending;
  key += '\0';
  for (const std::string& s : stacks) {
    const auto size = static_cast<uint32_t>(s.size());
    key.append(reinterpret_cast<const char*>(&size), sizeof size);
    key += s;
  }
  return key;
}

bool GrammarMatcher::must_end() const {
  return state_.pending.empty() && std::all_of(state_.stacks.begin(), state_.stacks.end(),
                                               [](const Stack& s) { return s.empty(); });
}

}  // namespace oxi::llm
