// Small helpers shared by the tests/formats tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "kernels/formats/dtype.h"
#include "lib/formats/mapped_file.h"

namespace oxi::test {

inline std::vector<std::byte> float_bytes(const std::vector<float>& v) {
  std::vector<std::byte> b(v.size() * 4);
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

inline std::vector<std::byte> pattern_bytes(size_t n, uint8_t seed) {
  std::vector<std::byte> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<std::byte>((i * 31 + seed) & 0xFF);
  return b;
}

inline std::shared_ptr<const MappedFile> in_memory(std::vector<std::byte> bytes,
                                                   const std::string& name = "mem.bin") {
  return MappedFile::from_bytes(std::move(bytes), name);
}

inline void write_bytes(const std::filesystem::path& p, std::span<const std::byte> b) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

inline std::vector<std::byte> read_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(f)), {});
  std::vector<std::byte> b(c.size());
  if (!c.empty()) std::memcpy(b.data(), c.data(), c.size());
  return b;
}

template <class T>
void put_le(std::vector<std::byte>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

inline void put_str(std::vector<std::byte>& out, const std::string& s) {
  put_le<uint64_t>(out, s.size());
  for (char c : s) out.push_back(static_cast<std::byte>(c));
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace oxi::test
