#include <gtest/gtest.h>

#include "lib/core/error.h"
#include "lib/formats/safetensors.h"
#include "tests/common/test_data.h"
#include "tests/formats/formats_test_util.h"

namespace oxi {
namespace {

using kernels::DType;
using test::contains;

std::vector<std::byte> sample() {
  safetensors::Writer w;
  w.set_metadata("format", "pt");
  w.add_tensor("w", DType::F32, {2, 3}, test::float_bytes({1, 2, 3, 4, 5, 6}));
  w.add_tensor("h", DType::F16, {4}, test::pattern_bytes(8, 1));
  w.add_tensor("b", DType::BF16, {1, 2}, test::pattern_bytes(4, 2));
  w.add_raw_tensor("mask", "BOOL", {3}, test::pattern_bytes(3, 3));
  w.add_tensor("e", DType::I64, {0}, {});
  return w.to_bytes();
}

std::string header_error(const std::string& header, size_t data_bytes = 16) {
  std::vector<std::byte> b;
  test::put_le<uint64_t>(b, header.size());
  for (char c : header) b.push_back(static_cast<std::byte>(c));
  b.resize(b.size() + data_bytes);
  try {
    safetensors::File f(test::in_memory(b, "x.safetensors"));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, RoundTrip) {
  safetensors::File f(test::in_memory(sample(), "m.safetensors"));
  ASSERT_EQ(f.metadata().size(), 1u);
  EXPECT_EQ(f.metadata()[0].second, "pt");
  ASSERT_EQ(f.tensors().size(), 5u);
  const TensorView w = f.tensor("w");
  EXPECT_EQ(w.dtype, DType::F32);
  EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 3}));
  float v[6];
  std::memcpy(v, w.data.data(), 24);
  EXPECT_EQ(v[5], 6.0f);
  EXPECT_EQ(f.tensor("b").dtype, DType::BF16);
  EXPECT_EQ(f.tensor("e").data.size(), 0u);
  EXPECT_EQ(f.find_tensor("mask")->dtype_name, "bool");
  try {
    f.tensor("mask");
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "m.safetensors: tensor 'mask': dtype BOOL")) << e.what();
  }
}

TEST(Safetensors, RejectsBadHeaders) {
  EXPECT_TRUE(contains(header_error("{"), "not valid JSON"));
  EXPECT_TRUE(contains(header_error("[]"), "not a JSON object"));
  EXPECT_TRUE(contains(header_error(R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}})"),
                       "need 4 x 4"));
  EXPECT_TRUE(contains(header_error(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[8,40]}})"),
                       "outside"));
  EXPECT_TRUE(contains(header_error(R"({"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})"),
                       "not an unsigned"));
  EXPECT_TRUE(contains(
      header_error(R"({"t":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})"),
      "overflows"));
  EXPECT_TRUE(contains(header_error(R"({"t":{"shape":[1],"data_offsets":[0,4]}})"), "dtype"));
  EXPECT_TRUE(contains(header_error(R"({"__metadata__":{"a":1}})"), "not a string"));
  EXPECT_TRUE(contains(header_error(std::string(100, '[')), "nests too deeply"));
  EXPECT_EQ(header_error(R"({"t":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})"), "");
  std::vector<std::byte> b;
  test::put_le<uint64_t>(b, 1000);
  EXPECT_THROW(safetensors::File(test::in_memory(b)), Error);
}

TEST(Safetensors, EveryTruncationFailsCleanly) {
  const auto bytes = sample();
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<std::byte> cut(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_THROW(safetensors::File(test::in_memory(cut)), Error) << n;
  }
}

}  // namespace
}  // namespace oxi
