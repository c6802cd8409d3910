// Python's str methods (lib/chat/python_str.h) against Python itself: the expected values were
// printed by Python 3.11 (Unicode 14, the version of lib/tokenizer/unicode_tables.h).
#include "lib/chat/python_str.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace oxi::jinja::py {
namespace {

struct Case {
  const char* text;
  const char* lower;
  const char* upper;
  const char* title;
  const char* capitalize;
  bool islower, isupper, isdigit, isnumeric, isalnum, isspace, isalpha;
};

// Final sigma in and out of words (a combining accent between is skipped), titlecase digraphs,
// expansions (ß, ﬁ, ᾳ, ŉ), a dotted capital I, digits and numerics of other scripts, an
// ideographic space.
TEST(PythonStr, CasingAndClassesMatchPython) {
  const Case cases[] = {
      {"ΟΔΟΣ ΣΑΣ Σ", "οδος σας σ", "ΟΔΟΣ ΣΑΣ Σ", "Οδος Σας Σ", "Οδος σας σ", false, true, false,
       false, false, false, false},
      {"ΑΣ.", "ας.", "ΑΣ.", "Ας.", "Ας.", false, true, false, false, false, false, false},
      {"Σ", "σ", "Σ", "Σ", "Σ", false, true, false, false, true, false, true},
      {"aΣ\xCC\x81"
       "b",
       "aσ\xCC\x81"
       "b",
       "AΣ\xCC\x81"
       "B",
       "Aσ\xCC\x81"
       "B",
       "Aσ\xCC\x81"
       "b",
       false, false, false, false, false, false, false},
      {"ǆemal ǅ", "ǆemal ǆ", "ǄEMAL Ǆ", "ǅemal ǅ", "ǅemal ǆ", false, false, false, false, false,
       false, false},
      {"straße ﬁne", "straße ﬁne", "STRASSE FINE", "Straße Fine", "Straße ﬁne", true, false, false,
       false, false, false, false},
      {"İstanbul", "i̇stanbul", "İSTANBUL", "İstanbul", "İstanbul", false, false, false, false, true,
       false, true},
      {"hello wörld-foo", "hello wörld-foo", "HELLO WÖRLD-FOO", "Hello Wörld-Foo",
       "Hello wörld-foo", true, false, false, false, false, false, false},
      {"ʼn", "ʼn", "ʼN", "ʼN", "ʼn", true, false, false, false, true, false, true},
      {"ᾳ", "ᾳ", "ΑΙ", "ᾼ", "ᾼ", true, false, false, false, true, false, true},
      {"", "", "", "", "", false, false, false, false, false, false, false},
      {"  ", "  ", "  ", "  ", "  ", false, false, false, false, false, true, false},
      {"aBc", "abc", "ABC", "Abc", "Abc", false, false, false, false, true, false, true},
      {"²3", "²3", "²3", "²3", "²3", false, false, true, true, true, false, false},
      {"٣", "٣", "٣", "٣", "٣", false, false, true, true, true, false, false},
      {"½", "½", "½", "½", "½", false, false, false, true, true, false, false},
      {"x\xE3\x80\x80"
       "y",
       "x\xE3\x80\x80"
       "y",
       "X\xE3\x80\x80"
       "Y",
       "X\xE3\x80\x80"
       "Y",
       "X\xE3\x80\x80"
       "y",
       true, false, false, false, false, false, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(lower(c.text), c.lower);
    EXPECT_EQ(upper(c.text), c.upper);
    EXPECT_EQ(title(c.text), c.title);
    EXPECT_EQ(capitalize(c.text), c.capitalize);
    EXPECT_EQ(islower(c.text), c.islower);
    EXPECT_EQ(isupper(c.text), c.isupper);
    EXPECT_EQ(isdigit(c.text), c.isdigit);
    EXPECT_EQ(isnumeric(c.text), c.isnumeric);
    EXPECT_EQ(isalnum(c.text), c.isalnum);
    EXPECT_EQ(isspace(c.text), c.isspace);
    EXPECT_EQ(isalpha(c.text), c.isalpha);
  }
}

TEST(PythonStr, SplitStripReplaceFindByCharacter) {
  using Parts = std::vector<std::string>;
  EXPECT_EQ(rsplit(" a  b ", nullptr, 1), (Parts{" a", "b"}));
  const std::string comma = ",";
  EXPECT_EQ(rsplit("a,b,c", &comma, 1), (Parts{"a,b", "c"}));
  EXPECT_EQ(split(" a  b ", nullptr, 1), (Parts{"a", "b "}));
  EXPECT_EQ(split("a\xC2\xA0" "b", nullptr, -1), (Parts{"a", "b"}));  // U+00A0 is whitespace
  EXPECT_EQ(strip("\xC2\xA0x\xE2\x80\x83", nullptr, true, true), "x");
  const std::string accent = "é";
  EXPECT_EQ(strip("éxé", &accent, true, true), "x");  // a character, not its bytes
  EXPECT_EQ(replace("ab", "", "-", 2), "-a-b");
  EXPECT_EQ(find("héllo", "l"), 2);
  EXPECT_EQ(count("aaa", ""), 4);
  EXPECT_EQ(length("héllo"), 5u);
  EXPECT_EQ(chars("h\xFFé").size(), 3u);  // an invalid byte is a character of its own
}

}  // namespace
}  // namespace oxi::jinja::py
