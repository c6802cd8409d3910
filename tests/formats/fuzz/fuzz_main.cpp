// libFuzzer entry point; FUZZ_TARGET names the function of fuzz_targets.h (set by meson).
#include "tests/formats/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return oxi::fuzz::FUZZ_TARGET(data, size);
}
