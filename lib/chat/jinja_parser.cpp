#include "lib/chat/jinja_parser.h"

#include <cctype>
#include <cstdint>
#include <cstring>
#include <utility>

#include "lib/core/error.h"
#include "lib/tokenizer/unicode.h"  // append_utf8

namespace oxi::jinja {
namespace {

[[noreturn]] void syntax_error(int line, const std::string& message) {
  throw Error("chat template", "line " + std::to_string(line) + ": " + message);
}

// The escape sequence at code[i] (a backslash) of a string literal, decoded into out as
// jinja2 decodes literals (Python's unicode-escape): backslash-newline joins lines, \\ \' \"
// \a \b \f \n \r \t \v, \ooo (octal), \xhh, \uhhhh, \Uhhhhhhhh; unknown escapes stay as
// written. Returns the index past the sequence. (Mistral Small 3.1's template continues its
// strings over lines this way.)
size_t python_escape(const std::string& code, size_t i, int line, std::string& out) {
  const char e = code[i + 1];
  const auto hex = [&](size_t digits) {
    uint32_t v = 0;
    for (size_t k = 0; k < digits; ++k) {
      const size_t at = i + 2 + k;
      const char d = at < code.size() ? code[at] : '\0';
      if (!std::isxdigit(static_cast<unsigned char>(d)))
        syntax_error(line, std::string("truncated \\") + e + " escape in a string literal");
      v = v * 16 +
          static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(d))
                                    ? d - '0'
                                    : std::tolower(static_cast<unsigned char>(d)) - 'a' + 10);
    }
    if (v > 0x10FFFF) syntax_error(line, "escape beyond U+10FFFF in a string literal");
    tokenizer::append_utf8(out, static_cast<char32_t>(v));
    return i + 2 + digits;
  };
  constexpr std::pair<char, char> kSingle[] = {{'\\', '\\'}, {'\'', '\''}, {'"', '"'},  {'a', '\a'},
                                               {'b', '\b'},  {'f', '\f'},  {'n', '\n'}, {'r', '\r'},
                                               {'t', '\t'},  {'v', '\v'}};
  for (const auto& [letter, byte] : kSingle) {
    if (e == letter) {
      out += byte;
      return i + 2;
    }
  }
  if (e == '\n') return i + 2;  // a line continued
  if (e == 'x') return hex(2);
  if (e == 'u') return hex(4);
  if (e == 'U') return hex(8);
  if (e == 'N') syntax_error(line, "\\N{...} escapes are not supported");
  if (e >= '0' && e <= '7') {
    uint32_t v = 0;
    size_t k = i + 1;
    for (; k < code.size() && k < i + 4 && code[k] >= '0' && code[k] <= '7'; ++k)
      v = v * 8 + static_cast<uint32_t>(code[k] - '0');
    tokenizer::append_utf8(out, static_cast<char32_t>(v));
    return k;
  }
  out += '\\';
  out += e;
  return i + 2;
}

// Templates come from model files: nesting and expression size are bounded, so that a hostile
// or broken one fails with an error instead of exhausting the stack (real templates nest a
// handful of levels and write expressions of a few dozen nodes).
constexpr int kMaxNesting = 100;
constexpr int kMaxExprNodes = 2000;

class NestingGuard {
 public:
  NestingGuard(int& depth, int limit, int line, const char* what) : depth_(depth) {
    if (++depth_ > limit) {
      --depth_;
      syntax_error(line, what);
    }
  }
  ~NestingGuard() { --depth_; }
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;

 private:
  int& depth_;
};

// ---- Segments: the template split into text and tags, whitespace rules applied ----

struct Segment {
  enum class Kind { text, expr, stmt } kind;
  std::string body;  // text, or the code inside the tag
  int line;
};

// The source as jinja2's lexer reads it: every line break (\r\n, \r, \n) as "\n", and one
// final line break dropped (keep_trailing_newline is off in transformers' environment), inside
// string literals too.
std::string normalized_source(std::string_view raw) {
  std::string src;
  src.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\r') {
      src += '\n';
      if (i + 1 < raw.size() && raw[i + 1] == '\n') ++i;
    } else {
      src += raw[i];
    }
  }
  if (!src.empty() && src.back() == '\n') src.pop_back();
  return src;
}

std::vector<Segment> split_segments(std::string_view raw) {
  const std::string source = normalized_source(raw);
  const std::string_view src = source;
  std::vector<Segment> out;
  std::string text;
  int line = 1;
  bool strip_next_text = false;  // set by "-%}" / "-}}" / "-#}"
  bool trim_newline = false;     // trim_blocks: drop one newline after %} or #}
  size_t i = 0;
  // lstrip_blocks: spaces and tabs before a block tag go when only they stand between the
  // start of its line (in the source) and the tag.
  const auto tag_starts_line = [&](size_t tag) {
    size_t k = tag;
    while (k > 0 && (src[k - 1] == ' ' || src[k - 1] == '\t')) --k;
    return k == 0 || src[k - 1] == '\n';
  };
  auto flush_text = [&](bool strip_right, bool lstrip_line) {
    if (strip_right) {
      while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.pop_back();
    } else if (lstrip_line) {
      while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.pop_back();
    }
    if (!text.empty()) out.push_back({Segment::Kind::text, text, line});
    text.clear();
  };
  while (i < src.size()) {
    const bool tag = src[i] == '{' && i + 1 < src.size() &&
                     (src[i + 1] == '{' || src[i + 1] == '%' || src[i + 1] == '#');
    if (!tag) {
      char c = src[i++];
      if (strip_next_text && std::isspace(static_cast<unsigned char>(c))) {
        if (c == '\n') ++line;
        continue;
      }
      strip_next_text = false;
      if (trim_newline) {
        trim_newline = false;
        if (c == '\n') {
          ++line;
          continue;
        }
      }
      if (c == '\n') ++line;
      text += c;
      continue;
    }
    strip_next_text = false;
    trim_newline = false;
    const char open = src[i + 1];
    const char close = open == '{' ? '}' : open;
    size_t p = i + 2;
    bool strip_left = false, keep_left = false;
    if (p < src.size() && src[p] == '-')
      strip_left = true, ++p;
    else if (p < src.size() && src[p] == '+')
      keep_left = true, ++p;
    // Find the closing delimiter outside string literals.
    size_t q = p;
    char quote = 0;
    const int tag_line = line;
    for (; q + 1 < src.size(); ++q) {
      const char c = src[q];
      if (c == '\n') ++line;
      if (open != '#') {
        if (quote) {
          if (c == '\\') {
            if (q + 1 < src.size() && src[q + 1] == '\n') ++line;  // a continued literal
            ++q;
          } else if (c == quote)
            quote = 0;
          continue;
        }
        if (c == '\'' || c == '"') {
          quote = c;
          continue;
        }
      }
      if (c == close && src[q + 1] == '}') break;
    }
    if (q + 1 >= src.size()) syntax_error(tag_line, "unclosed tag");
    size_t body_end = q;
    bool strip_right = false,
         keep_right = false;  // "-%}": strip what follows; "+%}": no trim_blocks
    if (body_end > p && src[body_end - 1] == '-')
      strip_right = true, --body_end;
    else if (body_end > p && src[body_end - 1] == '+' && open != '{')
      keep_right = true, --body_end;
    const bool is_block = open != '{';
    flush_text(strip_left, is_block && !keep_left && tag_starts_line(i));
    if (open == '{')
      out.push_back({Segment::Kind::expr, std::string(src.substr(p, body_end - p)), tag_line});
    else if (open == '%')
      out.push_back({Segment::Kind::stmt, std::string(src.substr(p, body_end - p)), tag_line});
    i = q + 2;
    strip_next_text = strip_right;
    trim_newline = is_block && !strip_right && !keep_right;
  }
  flush_text(false, false);
  return out;
}

// ---- Tokens inside a tag ----

struct Token {
  enum class Kind { name, string, integer, number, op, end } kind;
  std::string text;
  Json value;
};

std::vector<Token> tokenize(const std::string& code, int line) {
  std::vector<Token> out;
  size_t i = 0;
  static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*",
                                     "/",  "%",  "<",  ">",  "(",  ")",  "[", "]", "{",
                                     "}",  ",",  ":",  ".",  "|",  "~",  "="};
  while (i < code.size()) {
    const char c = code[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < code.size() &&
             (std::isalnum(static_cast<unsigned char>(code[j])) || code[j] == '_'))
        ++j;
      out.push_back({Token::Kind::name, code.substr(i, j - i), {}});
      i = j;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      bool is_float = false;
      while (j < code.size() &&
             (std::isdigit(static_cast<unsigned char>(code[j])) || code[j] == '_'))
        ++j;
      if (j + 1 < code.size() && code[j] == '.' &&
          std::isdigit(static_cast<unsigned char>(code[j + 1]))) {
        is_float = true;
        ++j;
        while (j < code.size() && std::isdigit(static_cast<unsigned char>(code[j]))) ++j;
      }
      if (j < code.size() && (code[j] == 'e' || code[j] == 'E')) {
        size_t k = j + 1;
        if (k < code.size() && (code[k] == '+' || code[k] == '-')) ++k;
        if (k < code.size() && std::isdigit(static_cast<unsigned char>(code[k]))) {
          is_float = true;
          j = k;
          while (j < code.size() && std::isdigit(static_cast<unsigned char>(code[j]))) ++j;
        }
      }
      std::string digits;
      for (size_t k = i; k < j; ++k) {
        if (code[k] != '_') digits += code[k];
      }
      try {
        if (is_float)
          out.push_back({Token::Kind::number, digits, Json(std::stod(digits))});
        else
          out.push_back({Token::Kind::integer, digits, Json(std::stoll(digits))});
      } catch (const std::logic_error&) {  // out_of_range, invalid_argument
        syntax_error(line, "number '" + digits + "' out of range");
      }
      i = j;
      continue;
    }
    if (c == '\'' || c == '"') {
      std::string s;
      size_t j = i + 1;
      for (; j < code.size() && code[j] != c; ++j) {
        if (code[j] != '\\' || j + 1 >= code.size()) {
          s += code[j];
          continue;
        }
        j = python_escape(code, j, line, s) - 1;
      }
      if (j >= code.size()) syntax_error(line, "unterminated string literal");
      out.push_back({Token::Kind::string, s, Json(s)});
      i = j + 1;
      continue;
    }
    bool matched = false;
    for (const char* op : kOps) {
      const size_t n = std::strlen(op);
      if (code.compare(i, n, op) == 0) {
        out.push_back({Token::Kind::op, op, {}});
        i += n;
        matched = true;
        break;
      }
    }
    if (!matched) {  // the whole character, so that the message stays UTF-8
      const size_t n = std::min(tokenizer::decode_code_point(code, i).length, code.size() - i);
      syntax_error(line, "unexpected character '" + code.substr(i, n) + "'");
    }
  }
  out.push_back({Token::Kind::end, "", {}});
  return out;
}

// ---- Expression parser (precedence climbing, Jinja's order) ----

class ExprParser {
 public:
  ExprParser(std::vector<Token> tokens, int line) : toks_(std::move(tokens)), line_(line) {}

  const Token& peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  bool at_end() const { return peek().kind == Token::Kind::end; }
  bool is_op(const char* op) const { return peek().kind == Token::Kind::op && peek().text == op; }
  bool is_name(const char* n) const { return peek().kind == Token::Kind::name && peek().text == n; }
  Token next() { return toks_[std::min(pos_++, toks_.size() - 1)]; }
  void expect_op(const char* op) {
    if (!is_op(op))
      syntax_error(line_, std::string("expected '") + op + "' near '" + peek().text + "'");
    ++pos_;
  }
  std::string expect_name() {
    if (peek().kind != Token::Kind::name)
      syntax_error(line_, "expected a name near '" + peek().text + "'");
    return next().text;
  }
  void expect_end() {
    if (!at_end()) syntax_error(line_, "unexpected '" + peek().text + "'");
  }

  ExprPtr make(Expr::Kind k) {
    // Bounds the tree (chains like a + a + ... or a|f|f|... grow it without recursing here),
    // so that evaluating and destroying it cannot exhaust the stack.
    if (++nodes_ > kMaxExprNodes) syntax_error(line_, "expression too large");
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = line_;
    return e;
  }

  // Top level: a tuple without parentheses is allowed where Jinja allows it (for/set), so
  // callers choose parse_expression (no bare tuples) or parse_tuple_or_expression.
  ExprPtr parse_expression() { return parse_ternary(); }
  // The filters of a {% filter %} tag (`upper`, `indent(4) | trim`) applied to `subject`.
  ExprPtr parse_filter_chain(const std::string& subject) {
    auto body = make(Expr::Kind::name);
    body->name = subject;
    auto f = make(Expr::Kind::filter);
    f->name = expect_name();
    f->a = std::move(body);
    if (is_op("(")) parse_call_args(*f);
    return parse_filtered(std::move(f));
  }

  ExprPtr parse_tuple_or_expression() {
    ExprPtr first = parse_expression();
    if (!is_op(",")) return first;
    auto t = make(Expr::Kind::tuple);
    t->args.push_back(std::move(first));
    while (is_op(",")) {
      ++pos_;
      if (at_end()) break;
      t->args.push_back(parse_expression());
    }
    return t;
  }

  ExprPtr parse_ternary() {
    const NestingGuard guard(depth_, kMaxNesting, line_, "expression nested too deeply");
    ExprPtr value = parse_or();
    if (is_name("if")) {
      ++pos_;
      auto t = make(Expr::Kind::ternary);
      t->args.push_back(parse_or());
      t->args.push_back(std::move(value));
      if (is_name("else")) {
        ++pos_;
        t->args.push_back(parse_ternary());
      } else {
        t->args.push_back(nullptr);  // undefined when false
      }
      return t;
    }
    return value;
  }

  ExprPtr binary(const std::string& op, ExprPtr l, ExprPtr r) {
    auto b = make(Expr::Kind::binary);
    b->name = op;
    b->a = std::move(l);
    b->args.push_back(std::move(r));
    return b;
  }

  ExprPtr parse_or() {
    ExprPtr l = parse_and();
    while (is_name("or")) {
      ++pos_;
      l = binary("or", std::move(l), parse_and());
    }
    return l;
  }
  ExprPtr parse_and() {
    ExprPtr l = parse_not();
    while (is_name("and")) {
      ++pos_;
      l = binary("and", std::move(l), parse_not());
    }
    return l;
  }
  ExprPtr parse_not() {
    if (is_name("not")) {
      ++pos_;
      auto u = make(Expr::Kind::unary);
      u->name = "not";
      u->a = parse_not();
      return u;
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    ExprPtr l = parse_concat();
    for (;;) {
      if (peek().kind == Token::Kind::op &&
          (peek().text == "==" || peek().text == "!=" || peek().text == "<" || peek().text == ">" ||
           peek().text == "<=" || peek().text == ">=")) {
        std::string op = next().text;
        l = binary(op, std::move(l), parse_concat());
      } else if (is_name("in")) {
        ++pos_;
        l = binary("in", std::move(l), parse_concat());
      } else if (is_name("not") && peek(1).kind == Token::Kind::name && peek(1).text == "in") {
        pos_ += 2;
        l = binary("not in", std::move(l), parse_concat());
      } else {
        return l;
      }
    }
  }
  ExprPtr parse_concat() {
    ExprPtr l = parse_additive();
    while (is_op("~")) {
      ++pos_;
      l = binary("~", std::move(l), parse_additive());
    }
    return l;
  }
  ExprPtr parse_additive() {
    ExprPtr l = parse_multiplicative();
    while (is_op("+") || is_op("-")) {
      std::string op = next().text;
      l = binary(op, std::move(l), parse_multiplicative());
    }
    return l;
  }
  ExprPtr parse_multiplicative() {
    ExprPtr l = parse_power();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = next().text;
      l = binary(op, std::move(l), parse_power());
    }
    return l;
  }
  // As in jinja2 (not Python): `**` binds less tightly than a sign and groups from the left,
  // so -2 ** 2 is 4 and 2 ** 3 ** 2 is 64.
  ExprPtr parse_power() {
    ExprPtr l = parse_unary();
    while (is_op("**")) {
      ++pos_;
      l = binary("**", std::move(l), parse_unary());
    }
    return l;
  }
  // As in jinja2, a sign applies before filters: "-3 | abs" is (-3) | abs.
  ExprPtr parse_unary(bool with_filters = true) {
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      node = make(Expr::Kind::unary);
      node->name = next().text;
      node->a = parse_unary(false);
    } else {
      node = parse_postfix(parse_primary());
    }
    return with_filters ? parse_filtered(std::move(node)) : std::move(node);
  }

  void parse_call_args(Expr& e) {
    expect_op("(");
    while (!is_op(")")) {
      if (peek().kind == Token::Kind::name && peek(1).kind == Token::Kind::op &&
          peek(1).text == "=") {
        e.kwnames.push_back(next().text);
        ++pos_;
        e.kwargs.push_back(parse_expression());
      } else {
        e.args.push_back(parse_expression());
      }
      if (!is_op(",")) break;
      ++pos_;
    }
    expect_op(")");
  }

  ExprPtr parse_filtered(ExprPtr e) {
    for (;;) {
      if (is_op("|")) {
        ++pos_;
        auto f = make(Expr::Kind::filter);
        f->name = expect_name();
        f->a = std::move(e);
        if (is_op("(")) parse_call_args(*f);
        e = std::move(f);
      } else if (is_name("is")) {
        ++pos_;
        auto t = make(Expr::Kind::test);
        if (is_name("not")) {
          ++pos_;
          t->negated = true;
        }
        t->name = expect_name();
        t->a = std::move(e);
        if (is_op("(")) {
          parse_call_args(*t);
        } else if (peek().kind == Token::Kind::string || peek().kind == Token::Kind::integer ||
                   peek().kind == Token::Kind::number) {
          t->args.push_back(parse_primary());  // "is divisibleby 3", "is equalto 'x'"
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_postfix(ExprPtr e) {
    for (;;) {
      if (is_op(".")) {
        ++pos_;
        auto a = make(Expr::Kind::attr);
        if (peek().kind == Token::Kind::integer)
          a->name = next().text;
        else
          a->name = expect_name();
        a->a = std::move(e);
        e = std::move(a);
      } else if (is_op("[")) {
        ++pos_;
        ExprPtr parts[3];
        int n_colons = 0;
        for (;;) {
          if (is_op(":")) {
            ++pos_;
            if (++n_colons > 2) syntax_error(line_, "too many ':' in a slice");
            continue;
          }
          if (is_op("]")) break;
          if (parts[n_colons]) syntax_error(line_, "expected ':' or ']' in a subscript");
          parts[n_colons] = parse_expression();
        }
        expect_op("]");
        if (n_colons == 0 && !parts[0]) syntax_error(line_, "empty subscript []");
        if (n_colons == 0) {
          auto s = make(Expr::Kind::subscript);
          s->a = std::move(e);
          s->args.push_back(std::move(parts[0]));
          e = std::move(s);
        } else {
          auto s = make(Expr::Kind::slice);
          s->a = std::move(e);
          for (auto& p : parts) s->args.push_back(std::move(p));
          e = std::move(s);
        }
      } else if (is_op("(")) {
        auto c = make(Expr::Kind::call);
        c->a = std::move(e);
        parse_call_args(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_primary() {
    const Token t = next();
    switch (t.kind) {
      case Token::Kind::string: {
        std::string s = t.text;
        while (peek().kind == Token::Kind::string) s += next().text;  // adjacent literals join
        auto e = make(Expr::Kind::literal);
        e->value = s;
        return e;
      }
      case Token::Kind::integer:
      case Token::Kind::number: {
        auto e = make(Expr::Kind::literal);
        e->value = t.value;
        return e;
      }
      case Token::Kind::name: {
        if (t.text == "true" || t.text == "True" || t.text == "false" || t.text == "False") {
          auto e = make(Expr::Kind::literal);
          e->value = (t.text == "true" || t.text == "True");
          return e;
        }
        if (t.text == "none" || t.text == "None") return make(Expr::Kind::literal);
        auto e = make(Expr::Kind::name);
        e->name = t.text;
        return e;
      }
      case Token::Kind::op:
        if (t.text == "(") {
          if (is_op(")")) {
            ++pos_;
            return make(Expr::Kind::tuple);
          }
          ExprPtr inner = parse_expression();
          if (is_op(",")) {
            auto tup = make(Expr::Kind::tuple);
            tup->args.push_back(std::move(inner));
            while (is_op(",")) {
              ++pos_;
              if (is_op(")")) break;
              tup->args.push_back(parse_expression());
            }
            inner = std::move(tup);
          }
          expect_op(")");
          return inner;
        }
        if (t.text == "[") {
          auto l = make(Expr::Kind::list);
          while (!is_op("]")) {
            l->args.push_back(parse_expression());
            if (!is_op(",")) break;
            ++pos_;
          }
          expect_op("]");
          return l;
        }
        if (t.text == "{") {
          auto d = make(Expr::Kind::dict);
          while (!is_op("}")) {
            d->keys.push_back(parse_expression());
            expect_op(":");
            d->args.push_back(parse_expression());
            if (!is_op(",")) break;
            ++pos_;
          }
          expect_op("}");
          return d;
        }
        break;
      case Token::Kind::end:
        syntax_error(line_, "unexpected end of expression");
    }
    syntax_error(line_, "unexpected '" + t.text + "'");
  }

 private:
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int line_;
  int nodes_ = 0, depth_ = 0;
};

// ---- Statement parser ----

class TemplateParser {
 public:
  explicit TemplateParser(std::vector<Segment> segs) : segs_(std::move(segs)) {}

  Body parse_all() {
    Body body = parse_body({});
    if (pos_ < segs_.size())
      syntax_error(segs_[pos_].line, "unexpected tag '" + segs_[pos_].body + "'");
    return body;
  }

 private:
  static std::string first_word(const std::string& code) {
    size_t i = 0;
    while (i < code.size() && std::isspace(static_cast<unsigned char>(code[i]))) ++i;
    size_t j = i;
    while (j < code.size() && (std::isalnum(static_cast<unsigned char>(code[j])) || code[j] == '_'))
      ++j;
    return code.substr(i, j - i);
  }

  // Parses statements until a tag whose first word is in `stop` (left unconsumed).
  Body parse_body(const std::vector<std::string>& stop) {
    const NestingGuard guard(depth_, kMaxNesting, pos_ < segs_.size() ? segs_[pos_].line : 0,
                             "blocks nested too deeply");
    Body body;
    while (pos_ < segs_.size()) {
      const Segment& seg = segs_[pos_];
      if (seg.kind == Segment::Kind::text) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::text;
        s->text = seg.body;
        body.push_back(std::move(s));
        ++pos_;
        continue;
      }
      if (seg.kind == Segment::Kind::expr) {
        ExprParser p(tokenize(seg.body, seg.line), seg.line);
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::output;
        s->line = seg.line;
        s->expr = p.parse_tuple_or_expression();
        p.expect_end();
        body.push_back(std::move(s));
        ++pos_;
        continue;
      }
      const std::string word = first_word(seg.body);
      for (const std::string& w : stop) {
        if (w == word) return body;
      }
      body.push_back(parse_statement(word));
    }
    if (!stop.empty())
      syntax_error(segs_.empty() ? 0 : segs_.back().line, "missing {% " + stop.back() + " %}");
    return body;
  }

  StmtPtr parse_statement(const std::string& word) {
    const Segment& seg = segs_[pos_];
    ExprParser p(tokenize(seg.body, seg.line), seg.line);
    p.expect_name();  // the keyword itself
    auto s = std::make_unique<Stmt>();
    s->line = seg.line;
    ++pos_;
    if (word == "if") {
      s->kind = Stmt::Kind::if_;
      s->conditions.push_back(p.parse_expression());
      p.expect_end();
      for (;;) {
        s->branches.push_back(parse_body({"elif", "else", "endif"}));
        const Segment& tag = segs_[pos_];
        const std::string w = first_word(tag.body);
        ExprParser tp(tokenize(tag.body, tag.line), tag.line);
        tp.expect_name();
        ++pos_;
        if (w == "elif") {
          s->conditions.push_back(tp.parse_expression());
          tp.expect_end();
          continue;
        }
        tp.expect_end();
        if (w == "else") {
          s->branches.push_back(parse_body({"endif"}));
          ++pos_;
        }
        break;
      }
      return s;
    }
    if (word == "for") {
      s->kind = Stmt::Kind::for_;
      s->targets.push_back(p.expect_name());
      while (p.is_op(",")) {
        p.next();
        s->targets.push_back(p.expect_name());
      }
      if (!p.is_name("in")) syntax_error(seg.line, "expected 'in' in for loop");
      p.next();
      s->expr = p.parse_or();  // not a ternary: a trailing "if" filters the loop
      if (p.is_name("if")) {
        p.next();
        s->loop_filter = p.parse_expression();
      }
      if (p.is_name("recursive")) syntax_error(seg.line, "recursive loops are not supported");
      p.expect_end();
      s->body = parse_body({"else", "endfor"});
      if (first_word(segs_[pos_].body) == "else") {
        ++pos_;
        s->else_body = parse_body({"endfor"});
      }
      ++pos_;
      return s;
    }
    if (word == "set") {
      std::string target = p.expect_name();
      s->targets.push_back(target);
      if (p.is_op(".")) {
        p.next();
        s->targets.push_back(p.expect_name());
      } else {
        while (p.is_op(",")) {  // set a, b = ...
          p.next();
          s->targets.push_back(p.expect_name());
          s->unpack = true;
        }
      }
      if (p.is_op("=")) {
        p.next();
        s->kind = Stmt::Kind::set;
        s->expr = p.parse_tuple_or_expression();
        p.expect_end();
      } else {
        p.expect_end();
        s->kind = Stmt::Kind::set_block;
        s->body = parse_body({"endset"});
        ++pos_;
      }
      return s;
    }
    if (word == "break" || word == "continue") {
      p.expect_end();
      s->kind = word == "break" ? Stmt::Kind::break_ : Stmt::Kind::continue_;
      return s;
    }
    if (word == "macro") {
      s->kind = Stmt::Kind::macro;
      s->targets.push_back(p.expect_name());
      parse_params(p, *s);
      p.expect_end();
      s->body = parse_body({"endmacro"});
      ++pos_;
      return s;
    }
    if (word == "call") {  // {% call[(params)] macro(args) %}: the body is the macro's caller()
      s->kind = Stmt::Kind::call_block;
      if (p.is_op("(")) parse_params(p, *s);
      s->expr = p.parse_expression();
      if (s->expr->kind != Expr::Kind::call) syntax_error(seg.line, "{% call %} needs a call");
      p.expect_end();
      s->body = parse_body({"endcall"});
      ++pos_;
      return s;
    }
    if (word == "with") {  // {% with a = x, b = y %}: names set for the body only
      s->kind = Stmt::Kind::with;
      while (!p.at_end()) {
        if (!s->params.empty()) p.expect_op(",");
        s->params.push_back(p.expect_name());
        p.expect_op("=");
        s->defaults.push_back(p.parse_expression());
      }
      s->body = parse_body({"endwith"});
      ++pos_;
      return s;
    }
    if (word == "filter") {
      s->kind = Stmt::Kind::filter_block;
      s->expr = p.parse_filter_chain(kFilterBody);
      p.expect_end();
      s->body = parse_body({"endfilter"});
      ++pos_;
      return s;
    }
    if (word == "generation") {
      // transformers' AssistantTracker marks assistant spans; rendering is unchanged.
      Body inner = parse_body({"endgeneration"});
      ++pos_;
      s->kind = Stmt::Kind::if_;
      auto lit = std::make_unique<Expr>();
      lit->value = true;
      s->conditions.push_back(std::move(lit));
      s->branches.push_back(std::move(inner));
      return s;
    }
    syntax_error(seg.line, "unsupported tag '" + word + "'");
  }

  // A macro's or a caller's parameter list: (a, b=default, ...).
  static void parse_params(ExprParser& p, Stmt& s) {
    p.expect_op("(");
    while (!p.is_op(")")) {
      s.params.push_back(p.expect_name());
      if (p.is_op("=")) {
        p.next();
        s.defaults.push_back(p.parse_expression());
      } else {
        s.defaults.push_back(nullptr);
      }
      if (!p.is_op(",")) break;
      p.next();
    }
    p.expect_op(")");
  }

  std::vector<Segment> segs_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Body parse_template(std::string_view source) {
  return TemplateParser(split_segments(source)).parse_all();
}

}  // namespace oxi::jinja
