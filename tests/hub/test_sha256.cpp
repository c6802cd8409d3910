// SHA-256 against the FIPS 180-4 / NIST example vectors, whole and in odd-sized pieces.
#include <gtest/gtest.h>

#include <string>

#include "lib/core/error.h"
#include "lib/hub/sha256.h"
#include "tests/common/test_data.h"

namespace oxi::hub {
namespace {

TEST(Sha256, EmptyMessage) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, Abc) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, TwoBlockMessage448Bits) {
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, OneMillionA) {
  const std::string expected = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
  EXPECT_EQ(sha256_hex(std::string(1'000'000, 'a')), expected);
  // The same message fed in uneven pieces exercises the block buffering.
  Sha256 hasher;
  const std::string piece(997, 'a');
  size_t fed = 0;
  while (fed < 1'000'000) {
    const size_t take = std::min(piece.size(), 1'000'000 - fed);
    hasher.update(piece.data(), take);
    fed += take;
  }
  EXPECT_EQ(hasher.finish_hex(), expected);
}

TEST(Sha256, PaddingBoundaries) {
  // Lengths around 55/56/64 bytes change how the padding spills into a second block.
  for (size_t length : {55u, 56u, 63u, 64u, 65u, 119u, 120u}) {
    const std::string message(length, 'x');
    Sha256 bytewise;
    for (char c : message) bytewise.update(&c, 1);
    EXPECT_EQ(bytewise.finish_hex(), sha256_hex(message)) << "length " << length;
  }
  EXPECT_EQ(sha256_hex(std::string(64, 'a')),
            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST(Sha256, File) {
  test::TempDir dir;
  test::write_file_bytes(dir / "abc", {'a', 'b', 'c'});
  EXPECT_EQ(sha256_file_hex(dir / "abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_THROW(sha256_file_hex(dir / "missing"), Error);
}

}  // namespace
}  // namespace oxi::hub
