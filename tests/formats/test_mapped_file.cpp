// MappedFile's copy_out / release_pages: the same bytes as the view, from a mapped file and
// from memory; ranges outside the file refused.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "lib/core/error.h"
#include "lib/formats/mapped_file.h"
#include "tests/common/test_data.h"

namespace oxi {
namespace {

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>((i * 131 + i / 4096) & 0xFF);
  return bytes;
}

TEST(MappedFile, CopyOutAndReleaseKeepTheBytes) {
  const test::TempDir dir;
  const size_t n = 5 * 4096 + 123;  // several pages and a partial one
  const std::vector<uint8_t> bytes = pattern(n);
  test::write_file_bytes(dir / "f.bin", bytes);
  const auto mapped = MappedFile::open(dir / "f.bin");
  const auto in_memory = MappedFile::from_bytes(std::span(bytes), "memory");
  for (const auto& file : {mapped, in_memory}) {
    for (const auto& [offset, count] :
         {std::pair<size_t, size_t>{0, n}, {4000, 9000}, {n - 1, 1}, {n, 0}, {17, 0}}) {
      std::vector<std::byte> out(count + 1, std::byte{0xAA});
      file->copy_out(offset, count, out.data());
      EXPECT_EQ(std::memcmp(out.data(), bytes.data() + offset, count), 0) << offset;
      EXPECT_EQ(out[count], std::byte{0xAA}) << "wrote past the range";
    }
    std::byte b{};
    EXPECT_THROW(file->copy_out(n, 1, &b), Error);
    EXPECT_THROW(file->copy_out(n + 1, 0, &b), Error);
    EXPECT_THROW(file->copy_out(1, ~size_t{0}, &b), Error);  // offset + n overflows

    // Released pages read back the same (from the page cache); an in-memory buffer is kept.
    const std::span<const std::byte> view = file->bytes();
    EXPECT_EQ(std::memcmp(view.data(), bytes.data(), n), 0);
    file->release_pages(100, 3 * 4096);
    file->release_pages(0, n);
    file->release_pages(n, 5);  // outside: nothing
    EXPECT_EQ(std::memcmp(view.data(), bytes.data(), n), 0);
  }
}

}  // namespace
}  // namespace oxi
