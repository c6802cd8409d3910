// .npy parsing from hand-built images, and .npz through Whisper's mel_filters.npz.
#include "lib/formats/npy.h"

#include <gtest/gtest.h>

#include <cstring>

#include "lib/core/error.h"
#include "tests/common/test_data.h"

namespace oxi::npy {
namespace {

// An .npy image as numpy writes it: header padded with spaces and '\n' to a multiple of 64.
std::vector<std::byte> npy_image(int major, const std::string& dict, const void* data,
                                 size_t data_bytes) {
  const size_t length_width = major == 1 ? 2 : 4;
  std::string header = dict;
  const size_t prefix = 8 + length_width;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::vector<std::byte> out;
  const auto put = [&](const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    out.insert(out.end(), b, b + n);
  };
  put("\x93NUMPY", 6);
  const uint8_t version[2] = {static_cast<uint8_t>(major), 0};
  put(version, 2);
  const uint32_t len = static_cast<uint32_t>(header.size());
  put(&len, length_width);  // little-endian host
  put(header.data(), header.size());
  put(data, data_bytes);
  return out;
}

TEST(Npy, Float32Version1) {
  const float values[6] = {1.5f, -2.0f, 3.25f, 0.0f, 1e-7f, 7.0f};
  const auto image = npy_image(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                               values, sizeof(values));
  const Array a = parse(image, "test.npy");
  EXPECT_EQ(a.descr, "<f4");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.numel(), 6);
  EXPECT_EQ(a.to_f32(), std::vector<float>(values, values + 6));
}

TEST(Npy, Int64Version2AndScalarVersion3) {
  const int64_t values[3] = {-1, 1LL << 40, 7};
  const Array a = parse(npy_image(2, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }",
                                  values, sizeof(values)),
                        "v2.npy");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(a.to_i64(), (std::vector<int64_t>{-1, 1LL << 40, 7}));
  EXPECT_EQ(a.to_f64()[1], 1099511627776.0);

  const double pi = 3.14159;
  const Array s = parse(
      npy_image(3, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", &pi, sizeof(pi)),
      "v3.npy");
  EXPECT_TRUE(s.shape.empty());
  EXPECT_EQ(s.to_f64(), std::vector<double>{pi});
}

TEST(Npy, BigEndianHalfUnsignedAndBool) {
  const uint8_t be_f8[8] = {0x40, 0x09, 0x21, 0xFB, 0x54, 0x44, 0x2D, 0x18};  // pi, big-endian
  EXPECT_EQ(
      parse(npy_image(1, "{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }", be_f8, 8),
            "be.npy")
          .to_f64()[0],
      3.141592653589793);
  const uint16_t halves[3] = {0x3C00, 0xC000, 0x0001};  // 1, -2, smallest subnormal
  const auto h = parse(npy_image(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }",
                                 halves, sizeof(halves)),
                       "h.npy")
                     .to_f32();
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], -2.0f);
  EXPECT_EQ(h[2], std::ldexp(1.0f, -24));
  const uint16_t u[2] = {65535, 3};
  EXPECT_EQ(parse(npy_image(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", u, 4),
                  "u.npy")
                .to_i64(),
            (std::vector<int64_t>{65535, 3}));
  const uint8_t b[2] = {0, 1};
  EXPECT_EQ(parse(npy_image(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", b, 2),
                  "b.npy")
                .to_f32(),
            (std::vector<float>{0.0f, 1.0f}));
}

TEST(Npy, RejectsBadInput) {
  const float values[4] = {};
  const auto good = npy_image(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
                              values, sizeof(values));
  // Every truncation is an error, never a crash.
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_THROW(parse(std::span(good).first(n), "cut.npy"), Error) << n;
  }
  auto bad_magic = good;
  bad_magic[1] = std::byte{'X'};
  EXPECT_THROW(parse(bad_magic, "m.npy"), Error);
  EXPECT_THROW(parse(npy_image(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                               values, sizeof(values)),
                     "f.npy"),
               Error);
  EXPECT_THROW(parse(npy_image(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }",
                               values, sizeof(values)),
                     "c.npy"),
               Error);
  EXPECT_THROW(parse(npy_image(1,
                               "{'descr': [('a', '<f4')], 'fortran_order': False, "
                               "'shape': (2,), }",
                               values, sizeof(values)),
                     "s.npy"),
               Error);
  EXPECT_THROW(parse(npy_image(1,
                               "{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (99999999999, 99999999999), }",
                               values, sizeof(values)),
                     "big.npy"),
               Error);
  try {
    parse(std::span(good).first(good.size() - 1), "named.npy");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("named.npy"), std::string::npos) << e.what();
  }
}

TEST(Npy, LoadsFileAndNpz) {
  test::TempDir dir;
  const float values[2] = {4.0f, 5.0f};
  const auto image = npy_image(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                               values, sizeof(values));
  std::vector<uint8_t> bytes(image.size());
  std::memcpy(bytes.data(), image.data(), image.size());
  test::write_file_bytes(dir / "a.npy", bytes);
  EXPECT_EQ(load(dir / "a.npy").to_f32(), (std::vector<float>{4.0f, 5.0f}));
  EXPECT_THROW(load(dir / "missing.npy"), Error);
}

TEST(Npy, WhisperMelFiltersNpz) {
  OXI_REQUIRE_SHARED_DATA(data);
  const auto arrays = load_npz(data / "whisper" / "mel_filters.npz");  // deflated entries
  ASSERT_EQ(arrays.size(), 2u);
  EXPECT_EQ(arrays.at("mel_80").shape, (std::vector<int64_t>{80, 201}));
  EXPECT_EQ(arrays.at("mel_128").shape, (std::vector<int64_t>{128, 201}));
  EXPECT_EQ(arrays.at("mel_80").descr, "<f4");
  // Row 0 of a Slaney bank: the first triangle peaks at bin 1 (40 Hz) with height 2 / width.
  const auto mel80 = arrays.at("mel_80").to_f32();
  EXPECT_EQ(mel80[0], 0.0f);
  EXPECT_GT(mel80[1], 0.0f);
}

}  // namespace
}  // namespace oxi::npy
