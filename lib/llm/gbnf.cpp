#include "lib/llm/gbnf.h"

#include <algorithm>
#include <map>
#include <optional>

#include "lib/core/error.h"
#include "lib/tokenizer/unicode.h"

namespace oxi::llm::gbnf {

bool CharSet::matches(char32_t c) const {
  const bool in = std::any_of(ranges.begin(), ranges.end(),
                              [c](const CharRange& r) { return r.first <= c && c <= r.last; });
  return in != negated;
}

bool CharSet::matches_some(char32_t first, char32_t last) const {
  if (!negated)
    return std::any_of(ranges.begin(), ranges.end(),
                       [&](const CharRange& r) { return r.first <= last && first <= r.last; });
  // Negated: some code point of first..last lies outside every range. Walk first..last past
  // the ranges that cover its start.
  char32_t c = first;
  for (bool moved = true; moved;) {
    moved = false;
    for (const CharRange& r : ranges) {
      if (r.first <= c && c <= r.last) {
        if (r.last >= last) return false;
        c = r.last + 1;
        moved = true;
      }
    }
  }
  return true;
}

namespace {

// Repetitions beyond this many copies are refused (each copy is a symbol in the rules), and
// so are grammars beyond these sizes, so that a hostile one fails instead of exhausting memory.
constexpr int kMaxRepetitions = 1000;
constexpr size_t kMaxSymbols = size_t{1} << 20;
constexpr size_t kMaxRules = size_t{1} << 16;
constexpr int kMaxNesting = 256;  // groups inside groups (the parser recurses on each)

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Grammar parse() {
    skip_space(true);
    while (pos_ < text_.size()) {
      parse_rule();
      skip_space(true);
    }
    for (size_t i = 0; i < grammar_.rules.size(); ++i)
      if (!defined_[i])
        fail_at(first_use_[i], "rule '" + grammar_.rules[i].name + "' is not defined");
    const auto root = names_.find("root");
    if (root == names_.end()) throw Error("grammar", "no root rule (root ::= ...)");
    grammar_.root = root->second;
    check_left_recursion();
    return std::move(grammar_);
  }

 private:
  [[noreturn]] void fail_at(size_t pos, const std::string& message) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw Error("grammar", "line " + std::to_string(line) + ", column " + std::to_string(column) +
                               ": " + message);
  }
  [[noreturn]] void fail(const std::string& message) const { fail_at(pos_, message); }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  // Spaces, tabs and comments; line breaks too when `newlines` (inside a group, between
  // rules). A line break followed by | (after spaces) always continues the alternatives.
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t') {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else if (c == '\r' || c == '\n') {
        if (!newlines && !line_continues_with_bar()) return;
        ++pos_;
      } else {
        return;
      }
    }
  }

  bool line_continues_with_bar() const {
    size_t i = pos_;
    while (i < text_.size()) {
      const char c = text_[i];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        ++i;
      } else if (c == '#') {
        while (i < text_.size() && text_[i] != '\n') ++i;
      } else {
        return c == '|';
      }
    }
    return false;
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    if (pos_ == start) fail("expected a rule name");
    return std::string(text_.substr(start, pos_ - start));
  }

  uint32_t rule_index(const std::string& name, size_t used_at) {
    const auto [it, added] = names_.emplace(name, static_cast<uint32_t>(grammar_.rules.size()));
    if (added) {
      if (grammar_.rules.size() >= kMaxRules)
        fail("more than " + std::to_string(kMaxRules) +
             " rules (with those of groups and repetitions)");
      grammar_.rules.push_back({name, {}});
      defined_.push_back(false);
      first_use_.push_back(used_at);
    }
    return it->second;
  }

  uint32_t new_rule(const std::string& base) {
    const std::string name = base + "_" + std::to_string(grammar_.rules.size());
    const uint32_t index = rule_index(name, pos_);
    defined_[index] = true;
    return index;
  }

  // Counts symbols about to enter the rules.
  void charge(size_t symbols) {
    symbols_ += symbols;
    if (symbols_ > kMaxSymbols)
      fail("more than " + std::to_string(kMaxSymbols) + " symbols (with repetitions' copies)");
  }

  uint32_t add_set(CharSet set) {
    charge(1);
    grammar_.sets.push_back(std::move(set));
    return static_cast<uint32_t>(grammar_.sets.size() - 1);
  }

  void parse_rule() {
    const size_t start = pos_;
    const std::string name = parse_name();
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") fail("expected ::= after '" + name + "'");
    pos_ += 3;
    const uint32_t index = rule_index(name, start);
    if (defined_[index]) fail_at(start, "rule '" + name + "' is defined twice");
    defined_[index] = true;
    std::vector<Sequence> alternatives = parse_alternatives(name, false);
    grammar_.rules[index].alternatives = std::move(alternatives);
    skip_space(false);
    if (!at_end() && peek() != '\n' && peek() != '\r')
      fail("unexpected '" + std::string(1, peek()) + "'");
  }

  std::vector<Sequence> parse_alternatives(const std::string& rule, bool nested) {
    std::vector<Sequence> alternatives;
    alternatives.push_back(parse_sequence(rule, nested));
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      alternatives.push_back(parse_sequence(rule, nested));
    }
    return alternatives;
  }

  Sequence parse_sequence(const std::string& rule, bool nested) {
    Sequence seq;
    size_t item_start = 0;  // where the last item's symbols begin (a literal has several)
    bool have_item = false;
    skip_space(nested);
    while (!at_end()) {
      const char c = peek();
      if (c == '"') {
        item_start = seq.size();
        ++pos_;
        while (peek() != '"') {
          if (at_end() || peek() == '\n') fail("unterminated string");
          const char32_t cp = parse_char();
          seq.push_back({false, add_set({{{cp, cp}}, false})});
        }
        ++pos_;
        have_item = true;
      } else if (c == '[') {
        item_start = seq.size();
        seq.push_back({false, add_set(parse_class())});
        have_item = true;
      } else if (c == '.') {
        ++pos_;
        item_start = seq.size();
        seq.push_back({false, add_set({{}, true})});
        have_item = true;
      } else if (is_name_char(c)) {
        item_start = seq.size();
        const size_t at = pos_;
        seq.push_back({true, rule_index(parse_name(), at)});
        charge(1);
        have_item = true;
      } else if (c == '(') {
        if (++nesting_ > kMaxNesting)
          fail("groups nested more than " + std::to_string(kMaxNesting) + " deep");
        ++pos_;
        skip_space(true);
        const uint32_t group = new_rule(rule);
        std::vector<Sequence> alternatives = parse_alternatives(rule, true);
        grammar_.rules[group].alternatives = std::move(alternatives);
        if (peek() != ')') fail("expected )");
        ++pos_;
        --nesting_;
        item_start = seq.size();
        seq.push_back({true, group});
        charge(1);
        have_item = true;
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!have_item) fail(std::string("nothing before ") + c + " to repeat");
        const auto [min, max] = parse_repetition();
        const Sequence item(seq.begin() + static_cast<std::ptrdiff_t>(item_start), seq.end());
        seq.resize(item_start);
        append_repetition(seq, item, min, max, rule);
        have_item = false;  // x** is an error, as in llama.cpp
      } else {
        break;  // |, ), a line break at the top level, or something the caller rejects
      }
      skip_space(nested);
    }
    return seq;
  }

  // *, +, ? or {m}, {m,}, {m,n}, {,n}; max < 0: unbounded.
  std::pair<int, int> parse_repetition() {
    const char c = peek();
    ++pos_;
    if (c == '*') return {0, -1};
    if (c == '+') return {1, -1};
    if (c == '?') return {0, 1};
    skip_space(false);
    const auto number = [&]() -> std::optional<int> {
      const size_t start = pos_;
      long value = 0;
      while (!at_end() && peek() >= '0' && peek() <= '9') {
        value = value * 10 + (peek() - '0');
        if (value > kMaxRepetitions)
          fail("more than " + std::to_string(kMaxRepetitions) + " repetitions");
        ++pos_;
      }
      if (pos_ == start) return std::nullopt;
      return static_cast<int>(value);
    };
    const std::optional<int> min = number();
    skip_space(false);
    int lo = min.value_or(0), hi = lo;
    if (peek() == ',') {
      ++pos_;
      skip_space(false);
      const std::optional<int> max = number();
      hi = max.value_or(-1);
      if (!min && !max) fail("expected a count in {}");
    } else if (!min) {
      fail("expected a count in {}");
    }
    skip_space(false);
    if (peek() != '}') fail("expected }");
    ++pos_;
    if (hi >= 0 && hi < lo) fail("{m,n} with n < m");
    return {lo, hi};
  }

  // min copies of item, then: unbounded, R ::= item R | (empty); else max - min nested
  // optionals, O ::= item O' | (empty), so that the copies after the first absent one are too.
  void append_repetition(Sequence& seq, const Sequence& item, int min, int max,
                         const std::string& rule) {
    charge(item.size() * static_cast<size_t>(std::max(min, max)) + 1);
    for (int i = 0; i < min; ++i) seq.insert(seq.end(), item.begin(), item.end());
    if (max < 0) {
      const uint32_t star = new_rule(rule);
      Sequence again = item;
      again.push_back({true, star});
      grammar_.rules[star].alternatives = {again, {}};
      seq.push_back({true, star});
      return;
    }
    if (max == min) return;
    std::optional<uint32_t> inner;
    for (int i = max - min; i > 0; --i) {
      const uint32_t opt = new_rule(rule);
      Sequence some = item;
      if (inner) some.push_back({true, *inner});
      grammar_.rules[opt].alternatives = {some, {}};
      inner = opt;
    }
    seq.push_back({true, *inner});
  }

  // One character of a literal or class: UTF-8, or an escape.
  char32_t parse_char() {
    if (peek() == '\\') {
      ++pos_;
      const char e = peek();
      ++pos_;
      switch (e) {
        case 'n':
          return '\n';
        case 'r':
          return '\r';
        case 't':
          return '\t';
        case '0':
          return 0;
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
        case '\'':
          return static_cast<unsigned char>(e);
        case 'x':
          return parse_hex(2);
        case 'u':
          return parse_hex(4);
        case 'U':
          return parse_hex(8);
        default:
          pos_ -= 2;
          fail(std::string("unknown escape \\") + e);
      }
    }
    const tokenizer::DecodedCodePoint d = tokenizer::decode_code_point(text_, pos_);
    pos_ += d.length;
    return d.cp;
  }

  char32_t parse_hex(int digits) {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      int v;
      if (c >= '0' && c <= '9') {
        v = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        v = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        v = c - 'A' + 10;
      } else {
        fail("expected " + std::to_string(digits) + " hex digits");
      }
      value = value * 16 + static_cast<uint32_t>(v);
      ++pos_;
    }
    if (value > 0x10FFFF) fail("code point beyond U+10FFFF");
    return value;
  }

  CharSet parse_class() {
    ++pos_;  // [
    CharSet set;
    if (peek() == '^') {
      set.negated = true;
      ++pos_;
    }
    while (peek() != ']') {
      if (at_end() || peek() == '\n') fail("unterminated character class");
      const char32_t first = parse_char();
      char32_t last = first;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        last = parse_char();
        if (last < first) fail("range with its end before its start");
      }
      set.ranges.push_back({first, last});
    }
    ++pos_;
    return set;
  }

  // A rule that can reach itself before consuming a character would make the matcher expand
  // forever: refused, as llama.cpp refuses it.
  void check_left_recursion() const {
    const auto& rules = grammar_.rules;
    std::vector<bool> nullable(rules.size(), false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < rules.size(); ++r) {
        if (nullable[r]) continue;
        for (const Sequence& seq : rules[r].alternatives) {
          if (std::all_of(seq.begin(), seq.end(),
                          [&](const Symbol& s) { return s.is_rule && nullable[s.index]; })) {
            nullable[r] = changed = true;
            break;
          }
        }
      }
    }
    // The rules each rule may start with: its alternatives' leading references, up to and
    // including the first that consumes a character.
    std::vector<std::vector<uint32_t>> starts(rules.size());
    for (size_t r = 0; r < rules.size(); ++r)
      for (const Sequence& seq : rules[r].alternatives)
        for (const Symbol& s : seq) {
          if (!s.is_rule) break;
          starts[r].push_back(s.index);
          if (!nullable[s.index]) break;
        }
    // A depth-first search for a cycle, with its own stack (a chain of rules may be long).
    enum class Mark { none, active, done };
    std::vector<Mark> mark(rules.size(), Mark::none);
    std::vector<std::pair<uint32_t, size_t>> path;  // a rule and the next of its starts to try
    for (uint32_t first = 0; first < rules.size(); ++first) {
      if (mark[first] != Mark::none) continue;
      mark[first] = Mark::active;
      path.push_back({first, 0});
      while (!path.empty()) {
        auto& [r, i] = path.back();
        if (i == starts[r].size()) {
          mark[r] = Mark::done;
          path.pop_back();
          continue;
        }
        const uint32_t next = starts[r][i++];
        if (mark[next] == Mark::active)
          throw Error("grammar", "rule '" + rules[next].name +
                                     "' is left-recursive (it can reach itself before "
                                     "consuming a character)");
        if (mark[next] == Mark::none) {
          mark[next] = Mark::active;
          path.push_back({next, 0});
        }
      }
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  Grammar grammar_;
  std::map<std::string, uint32_t> names_;
  std::vector<bool> defined_;
  std::vector<size_t> first_use_;
  size_t symbols_ = 0;
  int nesting_ = 0;
};

}  // namespace

Grammar Grammar::parse(std::string_view text) {
  return Parser(text).parse();
}

std::string literal(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      static constexpr char kHex[] = "0123456789ABCDEF";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace oxi::llm::gbnf
