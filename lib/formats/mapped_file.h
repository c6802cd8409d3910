// A read-only view of a whole file's bytes (RAII): a memory mapping of a file on disk, or an
// owned in-memory buffer (tests and fuzzers parse from memory through the same readers).
// Model weights are used in place through std::span views into it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <new>
#include <span>
#include <vector>

namespace oxi {

class MappedFile {
 public:
  // Throws oxi::Error naming the file when it cannot be opened or mapped. Empty files map to
  // an empty span.
  explicit MappedFile(const std::filesystem::path& path);
  // Owns `bytes`; `name` stands in for the path in error messages.
  MappedFile(std::vector<std::byte> bytes, std::filesystem::path name);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Shared ownership is how readers keep their mapping alive behind the views they hand out.
  static std::shared_ptr<const MappedFile> open(const std::filesystem::path& path);
  static std::shared_ptr<const MappedFile> from_bytes(std::vector<std::byte> bytes,
                                                      std::filesystem::path name);
  static std::shared_ptr<const MappedFile> from_bytes(std::span<const uint8_t> bytes,
                                                      std::filesystem::path name);

  const std::filesystem::path& path() const { return path_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }

  // Copies bytes [offset, offset + n) to dst. A mapped file is read with pread() rather than
  // through the mapping: the bytes pass through the page cache without becoming resident in
  // this process (a loader that converts weights into its own buffer would otherwise hold
  // both). Throws oxi::Error naming the file for a range outside it or a failed read.
  void copy_out(size_t offset, size_t n, std::byte* dst) const;
  // Lets go of the resident mapped pages wholly inside [offset, offset + n): a later read maps
  // them again from the page cache. Does nothing for an in-memory buffer.
  void release_pages(size_t offset, size_t n) const;

 private:
  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;  // data_ is an mmap that the destructor unmaps
  int fd_ = -1;          // kept open while mapped, for copy_out()
  // The in-memory buffer, when not mapped: 64-byte aligned like a mapping's start, so tensor
  // data that is aligned within the file is aligned in memory too.
  struct AlignedDelete {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  std::unique_ptr<std::byte[], AlignedDelete> owned_;
};

}  // namespace oxi
