// zip::Writer: stored entries only, optionally with ZIP64 records.
#include <cstring>
#include <limits>

#include "lib/core/error.h"
#include "lib/formats/crc32.h"
#include "lib/formats/zip.h"

namespace oxi::zip {

namespace {

template <class T>
void put(std::vector<std::byte>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

void put_bytes(std::vector<std::byte>& out, const void* p, size_t n) {
  const size_t at = out.size();
  out.resize(at + n);
  if (n) std::memcpy(out.data() + at, p, n);
}

constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01
constexpr uint32_t kSaturated = 0xFFFFFFFF;

}  // namespace

void Writer::add(std::string name, std::span<const std::byte> data, size_t alignment) {
  if (!zip64_ && (data.size() >= kSaturated || body_.size() >= kSaturated)) {
    throw Error("zip writer", "entry '" + name + "' needs ZIP64 (construct Writer(true))");
  }
  if (name.size() > 0xFFFF) throw Error("zip writer", "entry name too long");
  const uint64_t offset = body_.size();
  const uint32_t crc = formats::crc32(data);
  const uint16_t zip64_extra = zip64_ ? 20 : 0;
  size_t pad = 0;
  if (alignment > 1) {
    const size_t base = offset + 30 + name.size() + zip64_extra + 4;
    pad = (alignment - base % alignment) % alignment;
  }
  const uint16_t extra_len = static_cast<uint16_t>(zip64_extra + (alignment > 1 ? 4 + pad : 0));

  put<uint32_t>(body_, 0x04034b50);
  put<uint16_t>(body_, zip64_ ? 45 : 20);
  put<uint16_t>(body_, 0);  // flags
  put<uint16_t>(body_, 0);  // stored
  put<uint16_t>(body_, 0);
  put<uint16_t>(body_, kDosDate);
  put<uint32_t>(body_, crc);
  put<uint32_t>(body_, zip64_ ? kSaturated : static_cast<uint32_t>(data.size()));
  put<uint32_t>(body_, zip64_ ? kSaturated : static_cast<uint32_t>(data.size()));
  put<uint16_t>(body_, static_cast<uint16_t>(name.size()));
  put<uint16_t>(body_, extra_len);
  put_bytes(body_, name.data(), name.size());
  if (zip64_) {
    put<uint16_t>(body_, 0x0001);
    put<uint16_t>(body_, 16);
    put<uint64_t>(body_, data.size());
    put<uint64_t>(body_, data.size());
  }
  if (alignment > 1) {
    put<uint16_t>(body_, 0x4246);  // "FB": torch's padding field
    put<uint16_t>(body_, static_cast<uint16_t>(pad));
    body_.resize(body_.size() + pad, std::byte{'Z'});
  }
  put_bytes(body_, data.data(), data.size());
  records_.push_back({std::move(name), crc, data.size(), offset});
}

std::vector<std::byte> Writer::finish() const {
  std::vector<std::byte> out = body_;
  const uint64_t cd_offset = out.size();
  for (const Record& r : records_) {
    put<uint32_t>(out, 0x02014b50);
    put<uint16_t>(out, zip64_ ? 45 : 20);
    put<uint16_t>(out, zip64_ ? 45 : 20);
    put<uint16_t>(out, 0);
    put<uint16_t>(out, 0);
    put<uint16_t>(out, 0);
    put<uint16_t>(out, kDosDate);
    put<uint32_t>(out, r.crc32);
    put<uint32_t>(out, zip64_ ? kSaturated : static_cast<uint32_t>(r.size));
    put<uint32_t>(out, zip64_ ? kSaturated : static_cast<uint32_t>(r.size));
    put<uint16_t>(out, static_cast<uint16_t>(r.name.size()));
    put<uint16_t>(out, zip64_ ? 28 : 0);
    put<uint16_t>(out, 0);  // comment
    put<uint16_t>(out, 0);  // disk
    put<uint16_t>(out, 0);
    put<uint32_t>(out, 0);
    put<uint32_t>(out, zip64_ ? kSaturated : static_cast<uint32_t>(r.local_header_offset));
    put_bytes(out, r.name.data(), r.name.size());
    if (zip64_) {
      put<uint16_t>(out, 0x0001);
      put<uint16_t>(out, 24);
      put<uint64_t>(out, r.size);
      put<uint64_t>(out, r.size);
      put<uint64_t>(out, r.local_header_offset);
    }
  }
  const uint64_t cd_size = out.size() - cd_offset;
  const uint64_t n = records_.size();
  if (zip64_) {
    const uint64_t end64_offset = out.size();
    put<uint32_t>(out, 0x06064b50);
    put<uint64_t>(out, 44);
    put<uint16_t>(out, 45);
    put<uint16_t>(out, 45);
    put<uint32_t>(out, 0);
    put<uint32_t>(out, 0);
    put<uint64_t>(out, n);
    put<uint64_t>(out, n);
    put<uint64_t>(out, cd_size);
    put<uint64_t>(out, cd_offset);
    put<uint32_t>(out, 0x07064b50);
    put<uint32_t>(out, 0);
    put<uint64_t>(out, end64_offset);
    put<uint32_t>(out, 1);
  } else if (n > 0xFFFF || cd_offset + cd_size >= kSaturated) {
    throw Error("zip writer", "archive needs ZIP64 (construct Writer(true))");
  }
  put<uint32_t>(out, 0x06054b50);
  put<uint16_t>(out, 0);
  put<uint16_t>(out, 0);
  put<uint16_t>(out, zip64_ ? 0xFFFF : static_cast<uint16_t>(n));
  put<uint16_t>(out, zip64_ ? 0xFFFF : static_cast<uint16_t>(n));
  put<uint32_t>(out, zip64_ ? kSaturated : static_cast<uint32_t>(cd_size));
  put<uint32_t>(out, zip64_ ? kSaturated : static_cast<uint32_t>(cd_offset));
  put<uint16_t>(out, 0);
  return out;
}

}  // namespace oxi::zip
