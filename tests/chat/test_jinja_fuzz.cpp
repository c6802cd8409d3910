// A deterministic short fuzz run of the template interpreter: chat templates come from model
// files (GGUF metadata, tokenizer_config.json), so a broken or hostile one must fail with
// oxi::Error, never crash, hang or throw anything else. Seeds are the jinja2-checked cases;
// then every prefix of each, random edits that splice in template syntax, and inputs built to
// exhaust the stack, memory or time.
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "lib/chat/jinja.h"
#include "lib/core/error.h"
#include "tests/chat/jinja_cases.h"

namespace {

using oxi::jinja::Json;

// Parses and renders; true when it rendered, false on oxi::Error. Anything else escapes.
bool render_or_error(const std::string& source, const Json& context) {
  try {
    oxi::jinja::Template(source).render(context);
    return true;
  } catch (const oxi::Error&) {
    return false;
  }
}

const char* const kSyntax[] = {
    "{{",
    "}}",
    "{%",
    "%}",
    "{#",
    "#}",
    "-%}",
    "{%-",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "|",
    ",",
    ":",
    ".",
    "'",
    "\"",
    "\\",
    "\\x4",
    "\\u00",
    "\n",
    " if ",
    " else ",
    " for x in ",
    " endfor",
    " endif",
    "{% set ns.a = 1 %}",
    " not ",
    " and ",
    " is ",
    " in ",
    "~",
    "+",
    "*",
    "//",
    "%",
    "**",
    "loop.",
    "range(",
    "namespace(",
    "raise_exception(",
    "|safe",
    "|indent(",
    "|tojson",
    "{% filter upper %}",
    "{% endfilter %}",
    "{% macro m() %}",
    "{% endmacro %}",
    "m()",
    "99999999999999999999",
    "1e999",
    "-1",
    "none",
    "true",
    "messages[0]",
    "[::-1]",
    "x.y.z",
};

TEST(JinjaFuzz, MutatedTemplatesRenderOrFailWithAnError) {
  const Json cases = oxi::test::load_jinja_cases();
  ASSERT_GE(cases.size(), 10u);
  std::mt19937 rng(7);
  int rendered = 0, failed = 0;
  for (const Json& c : cases) {
    const std::string seed = c["template"].get<std::string>();
    const Json& context = c["context"];
    SCOPED_TRACE(c["name"].get<std::string>());
    for (size_t n = 0; n <= seed.size(); ++n) {
      ASSERT_NO_THROW(render_or_error(seed.substr(0, n), context) ? ++rendered : ++failed) << n;
    }
    for (int round = 0; round < 300; ++round) {
      std::string m = seed;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !m.empty(); ++e) {
        const size_t at = rng() % m.size();
        switch (rng() % 4) {
          case 0:
            m.insert(at, kSyntax[rng() % std::size(kSyntax)]);
            break;
          case 1:
            m[at] = static_cast<char>(rng());
            break;
          case 2:
            m.erase(at, 1 + rng() % 8);
            break;
          default:  // repeat a stretch, as nested or chained constructs do
            m.insert(at, m.substr(at, 1 + rng() % 24));
            break;
        }
      }
      ASSERT_NO_THROW(render_or_error(m, context) ? ++rendered : ++failed) << m;
    }
  }
  // both outcomes occur, so the run exercised the renderer and the error paths
  EXPECT_GT(rendered, 1000);
  EXPECT_GT(failed, 1000);
}

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

TEST(JinjaFuzz, ResourceExhaustionIsAnError) {
  const Json ctx = Json::object();
  const std::string hostile[] = {
      "{{ " + repeat("(", 100000) + "1" + repeat(")", 100000) + " }}",  // parser stack
      "{{ " + repeat("[", 100000) + " }}",
      repeat("{% if true %}", 50000) + "x" + repeat("{% endif %}", 50000),
      "{{ 1" + repeat(" + 1", 100000) + " }}",  // a deep left-leaning tree
      "{{ x" + repeat("|trim", 100000) + " }}",
      "{{ " + repeat("not ", 100000) + "x }}",
      "{{ " + repeat("-", 100000) + "1 }}",
      "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",  // unbounded recursion
      "{{ range(1000000000) | length }}",
      "{{ 'ab' * 9000000000000000000 }}",
      "{% set ns = namespace(s='ab') %}{% for i in range(80) %}{% set ns.s = ns.s + ns.s %}"
      "{% endfor %}{{ ns.s | length }}",
      "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
      "{{ 99999999999999999999999 }}",
      "{{ range('a') }}",
  };
  for (const std::string& t : hostile) {
    SCOPED_TRACE(t.substr(0, 60));
    bool ok = true;
    EXPECT_NO_THROW(ok = render_or_error(t, ctx));
    EXPECT_FALSE(ok) << "rendered";
  }
  // Within the bounds, the same constructs render (a real template nests a few levels).
  EXPECT_TRUE(render_or_error("{{ " + repeat("(", 50) + "1" + repeat(")", 50) + " }}", ctx));
  EXPECT_TRUE(render_or_error("{{ range(100000) | length }}", ctx));
}

}  // namespace
