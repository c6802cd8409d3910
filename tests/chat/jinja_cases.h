// The jinja2-rendered cases of tests/chat/jinja_cases.json (tests/reference/gen_jinja_cases.py).
#pragma once

#include <fstream>
#include <string>

#include "lib/chat/jinja.h"

namespace oxi::test {

inline jinja::Json load_jinja_cases() {
  std::ifstream in(std::string(OXI_TEST_SOURCE_DIR) + "/jinja_cases.json");
  if (!in) return jinja::Json::array();
  return jinja::Json::parse(in);
}

}  // namespace oxi::test
