// json_string: the literal Python's json.dumps(s, ensure_ascii=False) writes (the expected
// strings below are its output), with bytes that are not UTF-8 passed through.
#include "lib/core/json_string.h"

#include <gtest/gtest.h>

#include <string>

namespace {

TEST(JsonString, EscapesWhatPythonEscapes) {
  EXPECT_EQ(oxi::json_string(""), R"("")");
  EXPECT_EQ(oxi::json_string("say \"hi\" \\ bye"), R"("say \"hi\" \\ bye")");
  EXPECT_EQ(oxi::json_string("a\nb\rc\td\be\ff"), R"("a\nb\rc\td\be\ff")");
  EXPECT_EQ(oxi::json_string(std::string("\x01\x1f\0z", 4)), R"("\u0001\u001f\u0000z")");
}

TEST(JsonString, CopiesDelUtf8AndStrayBytes) {
  // json.dumps leaves DEL and non-ASCII characters alone with ensure_ascii=False
  EXPECT_EQ(oxi::json_string("a\x7f"
                             "b"),
            "\"a\x7f"
            "b\"");
  EXPECT_EQ(oxi::json_string("h\xc3\xa9llo \xe2\x82\xac"), "\"h\xc3\xa9llo \xe2\x82\xac\"");
  // half of a two-byte character, as a token boundary can leave it
  EXPECT_EQ(oxi::json_string("x\xc3"), "\"x\xc3\"");
}

TEST(JsonString, AppendsToWhatIsThere) {
  std::string out = "{\"k\": ";
  oxi::append_json_string(out, "v");
  EXPECT_EQ(out, "{\"k\": \"v\"");
}

}  // namespace
