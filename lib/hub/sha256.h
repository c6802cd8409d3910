// SHA-256 (FIPS 180-4), streaming: the Hub names every LFS file by its SHA-256, and a download
// is only kept when its digest matches.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace oxi::hub {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  // The 32-byte digest; the object must not be updated afterwards.
  std::array<uint8_t, 32> finish();
  // finish() as 64 lowercase hex digits.
  std::string finish_hex();

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

std::string sha256_hex(std::string_view data);
// Digest of a whole file, read in chunks; throws oxi::Error when it cannot be read.
std::string sha256_file_hex(const std::filesystem::path& path);

}  // namespace oxi::hub
