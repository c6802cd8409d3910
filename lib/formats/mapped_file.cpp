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
