// JSON string literals written the way Python's json.dumps(s, ensure_ascii=False) writes
// them: `"`, `\` and the control characters escaped (\b \f \n \r \t by name, the rest as
// \u00XX), every other byte copied. Bytes that are not valid UTF-8 (a token may end inside a
// character) pass through unchanged, which nlohmann::json would refuse or replace.
#pragma once

#include <string>
#include <string_view>

namespace oxi {

void append_json_string(std::string& out, std::string_view s);

inline std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

}  // namespace oxi
