#include "lib/formats/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/core/error.h"

namespace oxi {

namespace {

// Closes the descriptor on every path out of the constructor; the mapping outlives it.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
  FdGuard guard{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (guard.fd < 0) throw Error(path.string(), std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(guard.fd, &st) != 0) {
    throw Error(path.string(), std::string("cannot stat: ") + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) throw Error(path.string(), "is a directory, not a file");
  size_ = static_cast<size_t>(st.st_size);
  if (size_ == 0) return;
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, guard.fd, 0);
  if (p == MAP_FAILED)
    throw Error(path.string(), std::string("cannot map: ") + std::strerror(errno));
  data_ = static_cast<const std::byte*>(p);
  mapped_ = true;
  fd_ = guard.fd;
  guard.fd = -1;
}

MappedFile::MappedFile(std::vector<std::byte> bytes, std::filesystem::path name)
    : path_(std::move(name)) {
  size_ = bytes.size();
  if (size_ == 0) return;
  owned_.reset(static_cast<std::byte*>(::operator new[](size_, std::align_val_t{64})));
  std::memcpy(owned_.get(), bytes.data(), size_);
  data_ = owned_.get();
}

MappedFile::~MappedFile() {
  if (mapped_) ::munmap(const_cast<std::byte*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

void MappedFile::copy_out(size_t offset, size_t n, std::byte* dst) const {
  if (offset > size_ || n > size_ - offset)
    throw Error(path_.string(), "copy of " + std::to_string(n) + " bytes at " +
                                    std::to_string(offset) + " is outside the file's " +
                                    std::to_string(size_) + " bytes");
  if (!mapped_) {
    if (n > 0) std::memcpy(dst, data_ + offset, n);
    return;
  }
  while (n > 0) {
    const ssize_t got = ::pread(fd_, dst, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw Error(path_.string(), "read at " + std::to_string(offset) + " failed: " +
                                      (got < 0 ? std::strerror(errno) : "unexpected end of file"));
    dst += got;
    offset += static_cast<size_t>(got);
    n -= static_cast<size_t>(got);
  }
}

void MappedFile::release_pages(size_t offset, size_t n) const {
  if (!mapped_ || offset > size_ || n > size_ - offset) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(data_ + offset);
  const uintptr_t first = (begin + page - 1) / page * page, last = (begin + n) / page * page;
  // A private read-only mapping: dropping never-written pages loses nothing.
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

std::shared_ptr<const MappedFile> MappedFile::open(const std::filesystem::path& path) {
  return std::make_shared<const MappedFile>(path);
}

std::shared_ptr<const MappedFile> MappedFile::from_bytes(std::vector<std::byte> bytes,
                                                         std::filesystem::path name) {
  return std::make_shared<const MappedFile>(std::move(bytes), std::move(name));
}

std::shared_ptr<const MappedFile> MappedFile::from_bytes(std::span<const uint8_t> bytes,
                                                         std::filesystem::path name) {
  std::vector<std::byte> copy(bytes.size());
  if (!bytes.empty()) std::memcpy(copy.data(), bytes.data(), bytes.size());
  return from_bytes(std::move(copy), std::move(name));
}

}  // namespace oxi
