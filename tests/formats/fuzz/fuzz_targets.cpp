#include "tests/formats/fuzz/fuzz_targets.h"

#include <span>

#include "lib/core/error.h"
#include "lib/formats/gguf.h"
#include "lib/formats/safetensors.h"
#include "lib/formats/torch_zip.h"
#include "lib/formats/zip.h"

namespace oxi::fuzz {

namespace {

std::shared_ptr<const MappedFile> input(const uint8_t* data, size_t size) {
  return MappedFile::from_bytes(std::span<const uint8_t>(data, size), "fuzz-input");
}

// Reads every byte of a view, so an out-of-range span shows up under ASan.
volatile uint8_t g_sink;
void touch(std::span<const std::byte> bytes) {
  uint8_t x = 0;
  for (std::byte b : bytes) x ^= static_cast<uint8_t>(b);
  g_sink = x;
}

template <class F>
int guarded(F&& f) {
  try {
    f();
  } catch (const Error&) {
  }
  return 0;
}

}  // namespace

int gguf_target(const uint8_t* data, size_t size) {
  return guarded([&] {
    gguf::Reader r(input(data, size));
    for (const auto& t : r.tensors()) touch(t.data);
    for (const auto& [key, value] : r.metadata()) (void)value.array_size();
    r.get_string_or("general.architecture", "");
    r.get_u64_or("general.alignment", 0);
  });
}

int safetensors_target(const uint8_t* data, size_t size) {
  return guarded([&] {
    safetensors::File f(input(data, size));
    for (const auto& t : f.tensors()) {
      touch(t.data);
      if (t.usable()) touch(f.tensor(t.name).data);
    }
  });
}

int torch_target(const uint8_t* data, size_t size) {
  return guarded([&] {
    torch::Archive a(input(data, size));
    for (const auto& t : a.tensors()) touch(t.data);
  });
}

int zip_target(const uint8_t* data, size_t size) {
  return guarded([&] {
    zip::Archive z(input(data, size));
    for (const auto& e : z.entries()) {
      try {
        touch(z.read(e));
      } catch (const Error&) {
      }
    }
  });
}

}  // namespace oxi::fuzz
