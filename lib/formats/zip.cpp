// zip::Archive: finds the end-of-central-directory record (and its ZIP64 form), then indexes
// every entry, checking each local header and data range against the file size.
#include "lib/formats/zip.h"

#include <algorithm>
#include <cstring>

#include "lib/core/error.h"
#include "lib/formats/byte_cursor.h"
#include "lib/formats/crc32.h"
#include "lib/formats/inflate.h"

namespace oxi::zip {

namespace {

using formats::ByteCursor;

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50;
constexpr uint32_t kEnd64LocatorSig = 0x07064b50;
constexpr size_t kEndSize = 22;
constexpr size_t kLocatorSize = 20;

uint32_t u32_at(std::span<const std::byte> b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

}  // namespace

Archive::Archive(const std::filesystem::path& path) : Archive(MappedFile::open(path)) {}

Archive::Archive(std::shared_ptr<const MappedFile> file) : file_(std::move(file)) {
  parse();
}

void Archive::fail(const std::string& problem) const {
  throw Error(path().string(), problem);
}

void Archive::parse() {
  const auto bytes = file_->bytes();
  const std::string ctx = path().string();
  if (bytes.size() < kEndSize) fail("not a zip archive (too short)");

  // The end record sits within the last 22 + 65535 (comment) bytes; search backwards.
  size_t end_pos = bytes.size() - kEndSize;
  const size_t lowest = end_pos > 0xFFFF ? end_pos - 0xFFFF : 0;
  while (u32_at(bytes, end_pos) != kEndSig) {
    if (end_pos == lowest) fail("not a zip archive (no end of central directory record)");
    --end_pos;
  }
  ByteCursor end(bytes, ctx, end_pos + 4);
  const uint16_t disk = end.read<uint16_t>("end record");
  const uint16_t cd_disk = end.read<uint16_t>("end record");
  end.read<uint16_t>("end record");
  uint64_t count = end.read<uint16_t>("end record");
  uint64_t cd_size = end.read<uint32_t>("end record");
  uint64_t cd_offset = end.read<uint32_t>("end record");
  if (disk != 0 || cd_disk != 0) fail("multi-disk zip archives are not supported");

  if (end_pos >= kLocatorSize && u32_at(bytes, end_pos - kLocatorSize) == kEnd64LocatorSig) {
    ByteCursor loc(bytes, ctx, end_pos - kLocatorSize + 4);
    loc.read<uint32_t>("ZIP64 locator");
    const uint64_t end64_pos = loc.read<uint64_t>("ZIP64 locator");
    if (end64_pos > bytes.size() || bytes.size() - end64_pos < 56) {
      fail("ZIP64 end record offset " + std::to_string(end64_pos) + " is outside the file");
    }
    ByteCursor e64(bytes, ctx, end64_pos);
    if (e64.read<uint32_t>("ZIP64 end record") != kEnd64Sig) fail("bad ZIP64 end record");
    e64.take(8 + 2 + 2, "ZIP64 end record");
    if (e64.read<uint32_t>("ZIP64 end record") != 0 ||
        e64.read<uint32_t>("ZIP64 end record") != 0) {
      fail("multi-disk zip archives are not supported");
    }
    e64.read<uint64_t>("ZIP64 end record");
    count = e64.read<uint64_t>("ZIP64 end record");
    cd_size = e64.read<uint64_t>("ZIP64 end record");
    cd_offset = e64.read<uint64_t>("ZIP64 end record");
  }
  if (cd_offset > bytes.size() || cd_size > bytes.size() - cd_offset) {
    fail("central directory (offset " + std::to_string(cd_offset) + ", " + std::to_string(cd_size) +
         " bytes) is outside the file");
  }
  if (count > cd_size / 46) {
    fail("entry count " + std::to_string(count) + " cannot fit in the central directory");
  }

  ByteCursor cd(bytes.subspan(0, cd_offset + cd_size), ctx, cd_offset);
  entries_.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    if (cd.read<uint32_t>("central directory entry") != kCentralHeaderSig) {
      fail("bad central directory entry " + std::to_string(i));
    }
    Entry e;
    cd.take(4, "central directory entry");  // versions
    e.flags = cd.read<uint16_t>("central directory entry");
    e.method = cd.read<uint16_t>("central directory entry");
    cd.take(4, "central directory entry");  // time, date
    e.crc32 = cd.read<uint32_t>("central directory entry");
    e.compressed_size = cd.read<uint32_t>("central directory entry");
    e.size = cd.read<uint32_t>("central directory entry");
    const uint16_t name_len = cd.read<uint16_t>("central directory entry");
    const uint16_t extra_len = cd.read<uint16_t>("central directory entry");
    const uint16_t comment_len = cd.read<uint16_t>("central directory entry");
    cd.take(2 + 2 + 4, "central directory entry");  // disk, attributes
    uint64_t local_offset = cd.read<uint32_t>("central directory entry");
    e.name = std::string(cd.take_chars(name_len, "entry name"));
    ByteCursor extra(cd.take(extra_len, "entry extra field"), ctx);
    while (extra.remaining() >= 4) {
      const uint16_t id = extra.read<uint16_t>("extra field");
      const uint16_t len = extra.read<uint16_t>("extra field");
      ByteCursor field(extra.take(len, "extra field '" + e.name + "'"), ctx);
      if (id != 0x0001) continue;
      // ZIP64: only the fields whose 32-bit slot is saturated are present, in this order.
      if (e.size == 0xFFFFFFFF) e.size = field.read<uint64_t>("ZIP64 size of '" + e.name + "'");
      if (e.compressed_size == 0xFFFFFFFF) {
        e.compressed_size = field.read<uint64_t>("ZIP64 size of '" + e.name + "'");
      }
      if (local_offset == 0xFFFFFFFF) {
        local_offset = field.read<uint64_t>("ZIP64 offset of '" + e.name + "'");
      }
    }
    cd.take(comment_len, "entry comment");

    if (local_offset > bytes.size() || bytes.size() - local_offset < 30) {
      fail("entry '" + e.name + "' local header is outside the file");
    }
    ByteCursor local(bytes, ctx, local_offset);
    if (local.read<uint32_t>("local header") != kLocalHeaderSig) {
      fail("entry '" + e.name + "' has a bad local header");
    }
    local.take(22, "local header");
    const uint16_t local_name_len = local.read<uint16_t>("local header");
    const uint16_t local_extra_len = local.read<uint16_t>("local header");
    e.data_offset = local_offset + 30 + local_name_len + local_extra_len;
    if (e.data_offset > bytes.size() || e.compressed_size > bytes.size() - e.data_offset) {
      fail("entry '" + e.name + "' data (offset " + std::to_string(e.data_offset) + ", " +
           std::to_string(e.compressed_size) + " bytes) extends past the end of the file");
    }
    if (e.method == 0 && e.compressed_size != e.size) {
      fail("stored entry '" + e.name + "' has different compressed and uncompressed sizes");
    }
    if (!index_.emplace(e.name, entries_.size()).second) {
      fail("duplicate entry name '" + e.name + "'");
    }
    entries_.push_back(std::move(e));
  }
}

const Entry* Archive::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

const Entry& Archive::entry(std::string_view name) const {
  if (const Entry* e = find(name)) return *e;
  fail("no entry '" + std::string(name) + "' in the archive");
}

std::span<const std::byte> Archive::stored(std::string_view name) const {
  return stored(entry(name));
}

std::span<const std::byte> Archive::stored(const Entry& e) const {
  if (e.flags & 1) fail("entry '" + e.name + "' is encrypted");
  if (e.method != 0) {
    fail("entry '" + e.name + "' is compressed (method " + std::to_string(e.method) +
         "); only stored entries can be used in place");
  }
  return file_->bytes().subspan(e.data_offset, e.size);
}

std::vector<std::byte> Archive::read(std::string_view name) const {
  return read(entry(name));
}

std::vector<std::byte> Archive::read(const Entry& e) const {
  std::vector<std::byte> out;
  if (e.method == 0) {
    const auto s = stored(e);
    out.assign(s.begin(), s.end());
  } else if (e.method == 8) {
    if (e.flags & 1) fail("entry '" + e.name + "' is encrypted");
    out = formats::inflate_raw(file_->bytes().subspan(e.data_offset, e.compressed_size), e.size,
                               path().string() + ": entry '" + e.name + "'");
  } else {
    fail("entry '" + e.name + "' uses compression method " + std::to_string(e.method) +
         " (only stored and deflate are supported)");
  }
  if (formats::crc32(out) != e.crc32) fail("entry '" + e.name + "' fails its CRC-32 check");
  return out;
}

}  // namespace oxi::zip
