// A read-only memory mapping of a whole file (RAII). Model weights are used in place through
// std::span views into it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>

namespace oxi {

class MappedFile {
 public:
  // Throws oxi::Error naming the file when it cannot be opened or mapped. Empty files map to
  // an empty span.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }

 private:
  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace oxi
