// A bounds-checked little-endian reader over a byte span. Every read checks what is left, so
// parsers of untrusted files never touch memory outside the span; a short read throws
// oxi::Error("<context>: truncated ...").
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "lib/core/error.h"

namespace oxi::formats {

static_assert(std::endian::native == std::endian::little,
              "the model file readers assume a little-endian host");

class ByteCursor {
 public:
  ByteCursor(std::span<const std::byte> bytes, std::string context, size_t pos = 0)
      : bytes_(bytes), context_(std::move(context)), pos_(pos) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return bytes_.size() - pos_; }
  size_t size() const { return bytes_.size(); }
  const std::string& context() const { return context_; }

  template <class T>
  T read(std::string_view what) {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    std::memcpy(&v, take(sizeof(T), what).data(), sizeof(T));
    return v;
  }

  std::span<const std::byte> take(size_t n, std::string_view what) {
    if (n > remaining()) {
      fail("truncated: " + std::string(what) + " needs " + std::to_string(n) + " bytes at offset " +
           std::to_string(pos_) + " but the file has " + std::to_string(remaining()) + " left");
    }
    auto out = bytes_.subspan(pos_, n);
    pos_ += n;
    return out;
  }

  std::string_view take_chars(size_t n, std::string_view what) {
    auto s = take(n, what);
    return {reinterpret_cast<const char*>(s.data()), s.size()};
  }

  [[noreturn]] void fail(const std::string& problem) const { throw Error(context_, problem); }

 private:
  std::span<const std::byte> bytes_;
  std::string context_;
  size_t pos_;
};

// a * b and a + b that report overflow instead of wrapping.
inline bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}
inline bool add_overflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_add_overflow(a, b, out);
}

}  // namespace oxi::formats
