// libFuzzer target: the input bytes as a chat template, parsed and rendered against a short
// conversation. oxi::Error is the expected way to fail; anything else crashes the fuzzer.
#include <cstddef>
#include <cstdint>
#include <string>

#include "lib/chat/jinja.h"
#include "lib/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const oxi::jinja::Json context = {
      {"messages",
       {{{"role", "system"}, {"content", "Be brief."}},
        {{"role", "user"}, {"content", "Hi \"there\" <b>"}},
        {{"role", "assistant"}, {"content", "<think>\nx\n</think>\n\nHello."}},
        {{"role", "user"}, {"content", "Bye"}}}},
      {"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", {}}}}}}},
      {"add_generation_prompt", true},
      {"bos_token", "<s>"},
      {"eos_token", "</s>"}};
  try {
    oxi::jinja::Template(std::string(reinterpret_cast<const char*>(data), size)).render(context);
  } catch (const oxi::Error&) {
  }
  return 0;
}
