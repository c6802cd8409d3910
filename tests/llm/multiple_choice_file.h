// Tests' writer of llama.cpp's multiple-choice task file (what lib/llm/multiple_choice.h reads),
// restated from its layout rather than from the reader: uint32 n_task, n_task uint32 offsets,
// then per task the question and two answer sets (uint32 count, the strings, int32 labels),
// strings as uint32 length + bytes, all little-endian.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/llm/multiple_choice.h"

namespace oxi::llm::test {

namespace mc_file {
inline void u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i) & 0xff));
}
inline void str(std::string& out, const std::string& s) {
  u32(out, static_cast<uint32_t>(s.size()));
  out += s;
}
}  // namespace mc_file

// The second answer set of each task is one answer "x", labelled 1 (it is read past).
inline std::string multiple_choice_file(const std::vector<MultipleChoiceTask>& tasks) {
  std::string body;
  std::vector<uint32_t> offsets;
  const size_t header = 4 + 4 * tasks.size();
  for (const MultipleChoiceTask& t : tasks) {
    offsets.push_back(static_cast<uint32_t>(header + body.size()));
    mc_file::str(body, t.question);
    for (int set = 0; set < 2; ++set) {
      const std::vector<std::string> answers = set == 0 ? t.answers : std::vector<std::string>{"x"};
      mc_file::u32(body, static_cast<uint32_t>(answers.size()));
      for (const std::string& a : answers) mc_file::str(body, a);
      for (size_t i = 0; i < answers.size(); ++i)
        mc_file::u32(body, set == 0 ? static_cast<uint32_t>(t.labels[i]) : 1);
    }
  }
  std::string out;
  mc_file::u32(out, static_cast<uint32_t>(tasks.size()));
  for (uint32_t o : offsets) mc_file::u32(out, o);
  return out + body;
}

}  // namespace oxi::llm::test
