#include "lib/llm/regex_gbnf.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "lib/core/error.h"
#include "lib/llm/gbnf.h"
#include "lib/tokenizer/unicode.h"

namespace oxi::llm {
namespace {

// Code point ranges, first..last inclusive; normalized: sorted, apart, merged.
using Ranges = std::vector<std::pair<char32_t, char32_t>>;
constexpr char32_t kLastCodePoint = 0x10FFFF;
constexpr int kMaxRepetitions = 1000;

Ranges normalized(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  for (const auto& [first, last] : r) {
    if (!out.empty() && first <= out.back().second + 1)
      out.back().second = std::max(out.back().second, last);
    else
      out.emplace_back(first, last);
  }
  return out;
}

Ranges complement(const Ranges& r) {
  Ranges out;
  char32_t next = 0;
  for (const auto& [first, last] : normalized(r)) {
    if (first > next) out.emplace_back(next, first - 1);
    next = last + 1;
  }
  if (next <= kLastCodePoint) out.emplace_back(next, kLastCodePoint);
  return out;
}

const Ranges kDigits = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// ECMAScript's \s: white space and line terminators.
const Ranges kSpace = {{'\t', '\r'},     {' ', ' '},       {0xA0, 0xA0},     {0x1680, 0x1680},
                       {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                       {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
// What '.' leaves out: the line terminators.
const Ranges kLineTerminators = {{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};

// A code point as a GBNF escape (safe in a literal and in a class).
std::string gbnf_escape(char32_t c) {
  char text[16];
  if (c <= 0xFFFF)
    std::snprintf(text, sizeof text, "\\u%04X", static_cast<unsigned>(c));
  else
    std::snprintf(text, sizeof text, "\\U%08X", static_cast<unsigned>(c));
  return text;
}

// The code points JSON escapes in a string: the controls, " and \.
bool escaped_in_json(char32_t c) {
  return c < 0x20 || c == '"' || c == '\\';
}

// One code point as JSON writes it inside a string (nlohmann::json's and JavaScript's form).
std::string json_char(char32_t c) {
  switch (c) {
    case '"':
      return R"("\\\"")";
    case '\\':
      return R"("\\\\")";
    case '\n':
      return R"("\\n")";
    case '\r':
      return R"("\\r")";
    case '\t':
      return R"("\\t")";
    case '\b':
      return R"("\\b")";
    case '\f':
      return R"("\\f")";
    default:
      break;
  }
  if (c < 0x20) {
    char text[16];
    std::snprintf(text, sizeof text, "\"\\\\u%04x\"", static_cast<unsigned>(c));
    return text;
  }
  return std::string("\"").append(gbnf_escape(c)).append("\"");
}

// A set of code points as JSON writes them: a class of those written as themselves, and the
// escapes of the others.
std::string set_gbnf(const Ranges& set) {
  Ranges plain;
  std::vector<std::string> alternatives;
  for (const auto& [first, last] : normalized(set)) {
    for (char32_t c = first; c <= last && c < 0x80; ++c)
      if (escaped_in_json(c)) alternatives.push_back(json_char(c));
    char32_t start = first;
    for (char32_t c = first; c <= last; ++c) {
      if (c >= 0x80) break;  // nothing past ASCII is escaped
      if (escaped_in_json(c)) {
        if (c > start) plain.emplace_back(start, c - 1);
        start = c + 1;
      }
    }
    if (start <= last) plain.emplace_back(start, last);
  }
  if (!plain.empty()) {
    std::string cls = "[";
    for (const auto& [first, last] : plain) {
      cls += gbnf_escape(first);
      if (last != first) cls.append("-").append(gbnf_escape(last));
    }
    alternatives.insert(alternatives.begin(), cls + "]");
  }
  if (alternatives.empty()) throw Error("pattern", "a class that matches nothing");
  if (alternatives.size() == 1) return alternatives[0];
  std::string out = "(";
  for (size_t i = 0; i < alternatives.size(); ++i) out += (i ? " | " : "") + alternatives[i];
  return out + ")";
}

class RegexParser {
 public:
  explicit RegexParser(std::string_view pattern) : text_(pattern) {
    for (size_t i = 0; i < pattern.size();) {
      const tokenizer::DecodedCodePoint d = tokenizer::decode_code_point(pattern, i);
      p_.push_back(d.cp);
      i += d.length;
    }
  }

  std::string parse() {
    if (p_.empty() || p_.front() != '^' || !ends_with_anchor())
      fail("must be anchored, ^ ... $ (a pattern matches anywhere in the string otherwise)");
    end_ = p_.size() - 1;
    at_ = 1;
    std::vector<std::string> alternatives = parse_alternatives();
    if (at_ != end_) fail("unmatched )");
    if (alternatives.size() > 1) fail("a | outside any group anchors only its side: write ^(a|b)$");
    return alternatives[0].empty() ? "\"\"" : alternatives[0];
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw Error("pattern", "'" + std::string(text_) + "' " + message);
  }

  // The final $ is an anchor when an even number of backslashes comes before it.
  bool ends_with_anchor() const {
    if (p_.size() < 2 || p_.back() != '$') return false;
    size_t backslashes = 0;
    for (size_t i = p_.size() - 1; i-- > 0 && p_[i] == '\\';) ++backslashes;
    return backslashes % 2 == 0;
  }

  bool more() const { return at_ < end_; }
  char32_t peek() const { return more() ? p_[at_] : 0; }

  std::vector<std::string> parse_alternatives() {
    std::vector<std::string> alternatives{parse_sequence()};
    while (more() && peek() == '|') {
      ++at_;
      alternatives.push_back(parse_sequence());
    }
    return alternatives;
  }

  std::string parse_sequence() {
    std::string seq;
    while (more() && peek() != '|' && peek() != ')') {
      std::string atom = parse_atom();
      atom = parse_quantifier(std::move(atom));
      seq += (seq.empty() ? "" : " ") + atom;
    }
    return seq;
  }

  std::string parse_atom() {
    const char32_t c = p_[at_++];
    switch (c) {
      case '(': {
        if (peek() == '?') {
          if (at_ + 1 < end_ && p_[at_ + 1] == ':')
            at_ += 2;
          else
            fail("has a lookaround or named group, which is not supported");
        }
        std::vector<std::string> alternatives = parse_alternatives();
        if (!more() || peek() != ')') fail("has an unclosed (");
        ++at_;
        std::string out = "(";
        for (size_t i = 0; i < alternatives.size(); ++i)
          out += (i ? " | " : "") + (alternatives[i].empty() ? "\"\"" : alternatives[i]);
        return out + ")";
      }
      case '[':
        return set_gbnf(parse_class());
      case '.':
        return set_gbnf(complement(kLineTerminators));
      case '\\': {
        Ranges set;
        const char32_t single = parse_escape(set, false);
        return set.empty() ? json_char(single) : set_gbnf(set);
      }
      case '^':
      case '$':
        fail("has an anchor inside it, which is not supported");
      case '*':
      case '+':
      case '?':
        fail("has a quantifier with nothing before it");
      default:
        return json_char(c);
    }
  }

  // After a backslash: a class escape fills `set`; otherwise the one character it stands for.
  char32_t parse_escape(Ranges& set, bool in_class) {
    if (!more()) fail("ends in a backslash");
    const char32_t e = p_[at_++];
    switch (e) {
      case 'd':
        set = kDigits;
        return 0;
      case 'D':
        set = complement(kDigits);
        return 0;
      case 'w':
        set = kWord;
        return 0;
      case 'W':
        set = complement(kWord);
        return 0;
      case 's':
        set = kSpace;
        return 0;
      case 'S':
        set = complement(kSpace);
        return 0;
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case 'f':
        return '\f';
      case 'v':
        return '\v';
      case '0':
        return 0;
      case 'b':
        if (in_class) return '\b';
        fail("has \\b (a word boundary), which is not supported");
      case 'x':
        return parse_hex(2);
      case 'u':
        return parse_hex(4);
      default:
        break;
    }
    const bool letter_or_digit =
        (e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9');
    if (letter_or_digit)
      fail(std::string("has \\") + static_cast<char>(e) + ", which is not supported");
    return e;  // escaped punctuation stands for itself
  }

  char32_t parse_hex(int digits) {
    char32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      if (!more()) fail("has a short \\x or \\u escape");
      const char32_t c = p_[at_++];
      int v = -1;
      if (c >= '0' && c <= '9') v = static_cast<int>(c - '0');
      if (c >= 'a' && c <= 'f') v = static_cast<int>(c - 'a' + 10);
      if (c >= 'A' && c <= 'F') v = static_cast<int>(c - 'A' + 10);
      if (v < 0) fail("has a \\x or \\u escape that is not hex");
      value = value * 16 + static_cast<char32_t>(v);
    }
    return value;
  }

  Ranges parse_class() {
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++at_;
    }
    Ranges set;
    while (true) {
      if (!more()) fail("has an unclosed [");
      if (peek() == ']') {
        ++at_;
        break;
      }
      Ranges escape_set;
      char32_t first = p_[at_++];
      if (first == '\\') {
        first = parse_escape(escape_set, true);
        if (!escape_set.empty()) {
          set.insert(set.end(), escape_set.begin(), escape_set.end());
          continue;
        }
      }
      char32_t last = first;
      if (peek() == '-' && at_ + 1 < end_ && p_[at_ + 1] != ']') {
        ++at_;
        last = p_[at_++];
        if (last == '\\') {
          Ranges not_allowed;
          last = parse_escape(not_allowed, true);
          if (!not_allowed.empty()) fail("has a range that ends in a class escape");
        }
        if (last < first) fail("has a range with its end before its start");
      }
      set.emplace_back(first, last);
    }
    return negated ? complement(set) : normalized(set);
  }

  std::string parse_quantifier(std::string atom) {
    if (!more()) return atom;
    const char32_t q = peek();
    std::string suffix;
    if (q == '*' || q == '+' || q == '?') {
      ++at_;
      suffix = std::string(1, static_cast<char>(q));
    } else if (q == '{') {
      const size_t start = at_;
      ++at_;
      const auto number = [&]() -> long {
        long n = -1;
        while (more() && peek() >= '0' && peek() <= '9') {
          n = (n < 0 ? 0 : n) * 10 + static_cast<long>(peek() - '0');
          if (n > kMaxRepetitions) fail("repeats more than 1000 times");
          ++at_;
        }
        return n;
      };
      const long min = number();
      long max = min;
      if (more() && peek() == ',') {
        ++at_;
        max = number();
      }
      if (min < 0 || !more() || peek() != '}') {
        at_ = start;  // not a quantifier: a literal {, as ECMAScript reads it
        return atom;
      }
      ++at_;
      if (max >= 0 && max < min) fail("has {m,n} with n < m");
      suffix = "{";
      suffix.append(std::to_string(min)).append(",");
      if (max >= 0) suffix.append(std::to_string(max));
      suffix += "}";
    } else {
      return atom;
    }
    if (more() && peek() == '?') ++at_;  // lazy: the same strings
    return "(" + atom + ")" + suffix;
  }

  std::string_view text_;
  std::u32string p_;
  size_t at_ = 0, end_ = 0;
};

}  // namespace

std::string regex_gbnf(std::string_view pattern) {
  std::string expression = RegexParser(pattern).parse();
  // A repeated part that can match nothing, (|a)*, makes a left-recursive rule.
  try {
    (void)gbnf::Grammar::parse("root ::= " + expression);
  } catch (const Error&) {
    throw Error("pattern", "'" + std::string(pattern) +
                               "' repeats a part that can match nothing, which is not supported");
  }
  return expression;
}

}  // namespace oxi::llm
