// A read-only zip archive reader over a mapped file: the central directory (with ZIP64), and
// entry contents. Stored entries (how torch.save writes) are views into the mapping; deflated
// entries (NumPy's savez_compressed) are inflated into a buffer on request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/formats/mapped_file.h"

namespace oxi::zip {

struct Entry {
  std::string name;
  uint16_t method = 0;  // 0 stored, 8 deflate
  uint16_t flags = 0;
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t size = 0;         // uncompressed
  uint64_t data_offset = 0;  // file offset of the entry's (possibly compressed) bytes
};

class Archive {
 public:
  // Maps and indexes the archive; throws oxi::Error naming the file and the problem.
  explicit Archive(const std::filesystem::path& path);
  explicit Archive(std::shared_ptr<const MappedFile> file);

  const std::filesystem::path& path() const { return file_->path(); }
  const std::shared_ptr<const MappedFile>& file() const { return file_; }

  // Entries in central-directory order.
  const std::vector<Entry>& entries() const { return entries_; }
  const Entry* find(std::string_view name) const;
  // Throws oxi::Error naming the archive and the entry when absent.
  const Entry& entry(std::string_view name) const;

  // The bytes of a stored (uncompressed) entry, in place in the mapping. Throws for a
  // compressed or encrypted entry.
  std::span<const std::byte> stored(std::string_view name) const;
  std::span<const std::byte> stored(const Entry& e) const;
  // The contents of a stored or deflated entry (copied / inflated, CRC-checked).
  std::vector<std::byte> read(std::string_view name) const;
  std::vector<std::byte> read(const Entry& e) const;

 private:
  void parse();
  [[noreturn]] void fail(const std::string& problem) const;

  std::shared_ptr<const MappedFile> file_;
  std::vector<Entry> entries_;
  std::map<std::string, size_t, std::less<>> index_;
};

// Writes stored (uncompressed) zip archives, each entry's data aligned (torch.save aligns
// tensor data to 64 bytes) by padding the local header's extra field.
class Writer {
 public:
  // `zip64` writes ZIP64 records even for small archives (to exercise readers).
  explicit Writer(bool zip64 = false) : zip64_(zip64) {}
  void add(std::string name, std::span<const std::byte> data, size_t alignment = 64);
  std::vector<std::byte> finish() const;

 private:
  struct Record {
    std::string name;
    uint32_t crc32;
    uint64_t size;
    uint64_t local_header_offset;
  };
  bool zip64_;
  std::vector<std::byte> body_;  // local headers and data, in order
  std::vector<Record> records_;
};

}  // namespace oxi::zip
