#include <gtest/gtest.h>

#include <cstdlib>

#include "lib/core/error.h"
#include "lib/formats/crc32.h"
#include "lib/formats/inflate.h"
#include "lib/formats/zip.h"
#include "tests/common/test_data.h"
#include "tests/formats/formats_test_util.h"

namespace oxi {
namespace {

using test::contains;

std::vector<std::byte> text_bytes(std::string_view s) {
  std::vector<std::byte> b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

TEST(Zip, Crc32MatchesKnownValue) {
  EXPECT_EQ(formats::crc32(text_bytes("123456789")), 0xCBF43926u);
}

class ZipRoundTrip : public ::testing::TestWithParam<bool> {};

TEST_P(ZipRoundTrip, StoredEntriesAreAlignedViews) {
  zip::Writer w(GetParam());
  const auto a = test::pattern_bytes(1000, 1);
  const auto b = test::pattern_bytes(3, 2);
  w.add("dir/a.bin", a);
  w.add("b", b, 1);
  w.add("empty", {});
  zip::Archive z(test::in_memory(w.finish(), "t.zip"));
  ASSERT_EQ(z.entries().size(), 3u);
  const auto sa = z.stored("dir/a.bin");
  EXPECT_TRUE(std::equal(sa.begin(), sa.end(), a.begin(), a.end()));
  EXPECT_EQ(static_cast<size_t>(sa.data() - z.file()->bytes().data()) % 64, 0u);
  EXPECT_EQ(z.read("b"), b);
  EXPECT_TRUE(z.read("empty").empty());
  EXPECT_THROW(z.stored("nope"), Error);
}

INSTANTIATE_TEST_SUITE_P(PlainAndZip64, ZipRoundTrip, ::testing::Values(false, true));

TEST(Zip, InflatesFixedHuffmanStream) {
  // zlib.compressobj(9, DEFLATED, -15) of "hello hello hello hello, deflate!"
  const uint8_t raw[] = {0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x57, 0xc8, 0x40, 0x27, 0x75,
                         0x14, 0x52, 0x52, 0xd3, 0x72, 0x12, 0x4b, 0x52, 0x15, 0x01};
  const auto out = formats::inflate_raw(std::as_bytes(std::span(raw)), 33, "t");
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(out.data()), out.size()),
            "hello hello hello hello, deflate!");
  EXPECT_THROW(formats::inflate_raw(std::as_bytes(std::span(raw)), 10, "t"), Error);
  EXPECT_THROW(formats::inflate_raw(std::as_bytes(std::span(raw).first(10)), 33, "t"), Error);
}

TEST(Zip, ReadsDeflatedEntriesOfPythonZipfile) {
  if (std::system("/usr/bin/python3 -c 'import zipfile, zlib' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no /usr/bin/python3 with zipfile";
  }
  test::TempDir dir;
  const std::string script =
      "import zipfile\n"
      "z = zipfile.ZipFile('" +
      (dir / "d.zip").string() +
      "', 'w', zipfile.ZIP_DEFLATED)\n"
      "z.writestr('a.txt', bytes((i * 7 + i // 13) % 251 for i in range(30000)) + b'abc' * 999)\n"
      "z.writestr('b.txt', b'')\n"
      "z.writestr(zipfile.ZipInfo('c.txt'), b'stored', compress_type=zipfile.ZIP_STORED)\n"
      "z.close()\n";
  test::write_bytes(dir / "make.py", text_bytes(script));
  ASSERT_EQ(std::system(("/usr/bin/python3 " + (dir / "make.py").string()).c_str()), 0);
  zip::Archive z(dir / "d.zip");
  const auto a = z.read("a.txt");
  ASSERT_EQ(a.size(), 30000u + 2997u);
  for (size_t i = 0; i < 30000; ++i) ASSERT_EQ(static_cast<int>(a[i]), (i * 7 + i / 13) % 251);
  EXPECT_TRUE(z.read("b.txt").empty());
  try {
    z.stored("a.txt");
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "compressed (method 8)")) << e.what();
  }
  EXPECT_EQ(z.stored("c.txt").size(), 6u);
}

TEST(Zip, ReadsSharedNpz) {
  OXI_REQUIRE_SHARED_DATA(data);
  const auto path = data / "whisper" / "mel_filters.npz";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no mel_filters.npz";
  zip::Archive z(path);
  const auto mel80 = z.read("mel_80.npy");
  EXPECT_EQ(mel80.size(), 64448u);
  EXPECT_EQ(std::memcmp(mel80.data(), "\x93NUMPY", 6), 0);
  EXPECT_EQ(z.read("mel_128.npy").size(), 103040u);
}

TEST(Zip, RejectsGarbage) {
  EXPECT_THROW(zip::Archive(test::in_memory(text_bytes("not a zip at all, really not"))), Error);
  zip::Writer w;
  w.add("x", test::pattern_bytes(100, 1));
  auto bytes = w.finish();
  bytes.resize(bytes.size() - 1);  // breaks the end record
  EXPECT_THROW(zip::Archive(test::in_memory(bytes)), Error);
}

}  // namespace
}  // namespace oxi
