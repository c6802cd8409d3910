// The fuzz targets: parse bytes from memory with one reader and touch everything it returns.
// oxi::Error is the expected way to fail and is swallowed; anything else escapes (and crashes
// libFuzzer). Shared by the libFuzzer executables and the default-suite short fuzz test.
#pragma once

#include <cstddef>
#include <cstdint>

namespace oxi::fuzz {

int gguf_target(const uint8_t* data, size_t size);
int safetensors_target(const uint8_t* data, size_t size);
int torch_target(const uint8_t* data, size_t size);
int zip_target(const uint8_t* data, size_t size);

}  // namespace oxi::fuzz
