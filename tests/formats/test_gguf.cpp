#include <gtest/gtest.h>

#include "lib/core/error.h"
#include "lib/formats/ggml_types.h"
#include "lib/formats/gguf.h"
#include "tests/common/test_data.h"
#include "tests/formats/formats_test_util.h"

namespace oxi {
namespace {

using kernels::DType;
using test::contains;
using test::put_le;
using test::put_str;

gguf::Writer sample_writer() {
  gguf::Writer w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.block_count", 2);
  w.set_i32("neg", -7);
  w.set_u64("big", 1ull << 40);
  w.set_f32("eps", 1e-5f);
  w.set_bool("flag", true);
  w.set_string_array("tokens", {"a", "b", "\xe2\x96\x81x"});
  w.set_f32_array("scores", {0.5f, -1.0f});
  w.set_i32_array("types", {1, 2, 3});
  gguf::Value u8;
  u8.type = gguf::ValueType::UINT8;
  u8.data = uint64_t{200};
  w.set("u8", u8);
  gguf::Value f64;
  f64.type = gguf::ValueType::FLOAT64;
  f64.data = 2.5;
  w.set("f64", f64);
  gguf::Value arr;
  arr.type = gguf::ValueType::ARRAY;
  arr.array_type = gguf::ValueType::INT64;
  arr.data = gguf::Value::Array{std::vector<int64_t>{-1, 1ll << 50}};
  w.set("i64s", arr);
  w.add_tensor("tok", DType::F32, {3, 4}, test::float_bytes(test::random_floats(12, 1)));
  w.add_tensor("q", DType::Q8_0, {2, 32}, test::pattern_bytes(68, 3));
  w.add_tensor("h", DType::F16, {5}, test::pattern_bytes(10, 5));
  return w;
}

TEST(Gguf, RoundTripsMetadataAndTensors) {
  const auto bytes = sample_writer().to_bytes();
  gguf::Reader r(test::in_memory(bytes, "sample.gguf"));
  EXPECT_EQ(r.version(), 3u);
  EXPECT_EQ(r.alignment(), 32u);
  EXPECT_EQ(r.get_string("general.architecture"), "llama");
  EXPECT_EQ(r.get_u32("llama.block_count"), 2u);
  EXPECT_EQ(r.get_i64("neg"), -7);
  EXPECT_EQ(r.get_u64("big"), 1ull << 40);
  EXPECT_FLOAT_EQ(r.get_f32("eps"), 1e-5f);
  EXPECT_TRUE(r.get_bool("flag"));
  EXPECT_EQ(r.get_string_array("tokens"), (std::vector<std::string>{"a", "b", "\xe2\x96\x81x"}));
  EXPECT_EQ(r.get_f32_array("scores"), (std::vector<float>{0.5f, -1.0f}));
  EXPECT_EQ(r.get_i32_array("types"), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(r.get_u32("u8"), 200u);
  EXPECT_FLOAT_EQ(r.get_f32("f64"), 2.5f);
  EXPECT_EQ(r.find("i64s")->array_size(), 2u);
  EXPECT_THROW(r.get_i32_array("i64s"), Error);  // 2^50 does not fit
  EXPECT_EQ(r.get_string_or("missing", "x"), "x");
  EXPECT_EQ(r.get_u64_or("missing", 9), 9u);
  EXPECT_THROW(r.get_u64_or("general.architecture", 9), Error);
  EXPECT_THROW(r.get_u64("neg"), Error);
  EXPECT_THROW(r.get_string("missing"), Error);
  try {
    r.get_u32("general.architecture");
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "sample.gguf")) << e.what();
    EXPECT_TRUE(contains(e.what(), "general.architecture")) << e.what();
  }
  ASSERT_EQ(r.tensors().size(), 3u);
  const TensorView& tok = r.tensor("tok");
  EXPECT_EQ(tok.shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(tok.data.size(), 48u);
  EXPECT_EQ(std::memcmp(tok.data.data(), test::float_bytes(test::random_floats(12, 1)).data(), 48),
            0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(tok.data.data()) % 32, 0u);
  EXPECT_EQ(r.tensor("q").dtype, DType::Q8_0);
  EXPECT_EQ(r.tensor("q").data.size(), 68u);
  EXPECT_EQ(r.tensor("h").shape, (std::vector<int64_t>{5}));
  EXPECT_THROW(r.tensor("nope"), Error);
}

TEST(Gguf, CustomAlignmentAndFileIo) {
  test::TempDir dir;
  auto w = sample_writer();
  w.set_alignment(64);
  w.write(dir / "a.gguf");
  gguf::Reader r(dir / "a.gguf");
  EXPECT_EQ(r.alignment(), 64u);
  EXPECT_EQ(r.data_offset() % 64, 0u);
  for (const auto& t : r.tensors()) {
    EXPECT_EQ(static_cast<size_t>(t.data.data() - r.file()->bytes().data()) % 64, 0u);
  }
  EXPECT_THROW(w.set_alignment(48), Error);
}

// Tensors produced while the file is written: the same bytes as given ones, in memory and in
// the file; a producer's wrong size or failure leaves no file (nor its .part).
TEST(Gguf, ProducedTensorsStreamIntoTheFile) {
  test::TempDir dir;
  const std::vector<std::byte> q = test::pattern_bytes(68, 3);
  gguf::Writer given = sample_writer();
  given.add_tensor("late", DType::Q8_0, {2, 32}, q);
  gguf::Writer produced = sample_writer();
  int calls = 0;
  produced.add_tensor("late", DType::Q8_0, {2, 32}, [&] {
    ++calls;
    return q;
  });
  EXPECT_EQ(calls, 0);
  produced.write(dir / "p.gguf");
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(std::filesystem::exists(dir / "p.gguf.part"));
  const std::vector<std::byte> want = given.to_bytes();
  EXPECT_EQ(test::read_file_bytes(dir / "p.gguf"),
            std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(want.data()),
                                 reinterpret_cast<const uint8_t*>(want.data()) + want.size()));
  EXPECT_EQ(produced.to_bytes(), want);

  gguf::Writer short_one = sample_writer();
  short_one.add_tensor("late", DType::Q8_0, {2, 32}, [&] { return test::pattern_bytes(67, 3); });
  try {
    short_one.write(dir / "s.gguf");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "tensor 'late': produced 67 bytes, expected 68")) << e.what();
  }
  gguf::Writer failing = sample_writer();
  failing.add_tensor("late", DType::Q8_0, {2, 32},
                     []() -> std::vector<std::byte> { throw Error("x", "cannot make it"); });
  EXPECT_THROW(failing.write(dir / "f.gguf"), Error);
  for (const char* name : {"s.gguf", "s.gguf.part", "f.gguf", "f.gguf.part"})
    EXPECT_FALSE(std::filesystem::exists(dir / name)) << name;
  EXPECT_THROW(given.add_tensor("bad", DType::Q8_0, {2, 32}, test::pattern_bytes(60, 1)), Error);
  EXPECT_NO_THROW(given.add_tensor("bad", DType::Q8_0, {2, 32}, q));  // the failed one not kept
}

TEST(Gguf, ReadsVersion2AndRejectsVersion1) {
  auto bytes = sample_writer().to_bytes();
  bytes[4] = std::byte{2};
  EXPECT_EQ(gguf::Reader(test::in_memory(bytes)).version(), 2u);
  bytes[4] = std::byte{1};
  try {
    gguf::Reader r(test::in_memory(bytes, "old.gguf"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "old.gguf: GGUF version 1 is not supported")) << e.what();
  }
  bytes[4] = std::byte{9};
  EXPECT_THROW(gguf::Reader(test::in_memory(bytes)), Error);
  bytes[0] = std::byte{'X'};
  EXPECT_THROW(gguf::Reader(test::in_memory(bytes)), Error);
}

// Builds a header by hand so tests can express files the writer refuses to produce.
struct RawGguf {
  std::vector<std::byte> b;
  RawGguf(uint64_t n_tensors, uint64_t n_kv) {
    for (char c : std::string("GGUF")) b.push_back(static_cast<std::byte>(c));
    put_le<uint32_t>(b, 3);
    put_le<uint64_t>(b, n_tensors);
    put_le<uint64_t>(b, n_kv);
  }
  void kv_u32(const std::string& k, uint32_t v) {
    put_str(b, k);
    put_le<uint32_t>(b, 4);
    put_le<uint32_t>(b, v);
  }
  void tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t off) {
    put_str(b, name);
    put_le<uint32_t>(b, static_cast<uint32_t>(ne.size()));
    for (uint64_t n : ne) put_le<uint64_t>(b, n);
    put_le<uint32_t>(b, type);
    put_le<uint64_t>(b, off);
  }
  void pad_and_data(size_t n) {
    b.resize((b.size() + 31) / 32 * 32);
    b.resize(b.size() + n);
  }
  std::string error() const {
    try {
      gguf::Reader r(test::in_memory(b, "raw.gguf"));
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
};

TEST(Gguf, RejectsMalformedHeaders) {
  {
    RawGguf g(0, 2);
    g.kv_u32("a", 1);
    g.kv_u32("a", 2);
    g.b.resize(g.b.size() + 64);  // room for what the counts promise
    EXPECT_TRUE(contains(g.error(), "duplicate metadata key 'a'")) << g.error();
  }
  {
    RawGguf g(0, 1);
    put_str(g.b, "nested");
    put_le<uint32_t>(g.b, 9);
    put_le<uint32_t>(g.b, 9);
    put_le<uint64_t>(g.b, 1);
    g.b.resize(g.b.size() + 64);  // room for what the counts promise
    EXPECT_TRUE(contains(g.error(), "nested arrays")) << g.error();
  }
  {
    RawGguf g(0, 1);
    put_str(g.b, "\xff\xfe");
    put_le<uint32_t>(g.b, 4);
    put_le<uint32_t>(g.b, 0);
    g.b.resize(g.b.size() + 64);  // room for what the counts promise
    EXPECT_TRUE(contains(g.error(), "not valid UTF-8")) << g.error();
  }
  {
    RawGguf g(0, 1);
    put_le<uint64_t>(g.b, 1ull << 60);  // key length
    g.b.resize(g.b.size() + 64);        // room for what the counts promise
    EXPECT_TRUE(contains(g.error(), "past the end of the file")) << g.error();
  }
  {
    RawGguf g(0, 1ull << 40);
    g.b.resize(g.b.size() + 64);  // room for what the counts promise
    EXPECT_TRUE(contains(g.error(), "metadata count")) << g.error();
  }
  {
    RawGguf g(0, 1);
    put_str(g.b, "arr");
    put_le<uint32_t>(g.b, 9);
    put_le<uint32_t>(g.b, 8);
    put_le<uint64_t>(g.b, 1ull << 62);
    g.b.resize(g.b.size() + 64);  // room for what the counts promise
    EXPECT_TRUE(contains(g.error(), "array length")) << g.error();
  }
  {
    RawGguf g(0, 1);
    put_str(g.b, "t");
    put_le<uint32_t>(g.b, 77);
    g.b.resize(g.b.size() + 64);  // room for what the counts promise
    EXPECT_TRUE(contains(g.error(), "unknown value type 77")) << g.error();
  }
  {
    RawGguf g(0, 1);
    g.kv_u32("general.alignment", 48);
    g.b.resize(g.b.size() + 64);  // room for what the counts promise
    EXPECT_TRUE(contains(g.error(), "power of two")) << g.error();
  }
}

TEST(Gguf, RejectsMalformedTensorInfos) {
  {
    RawGguf g(1, 0);
    g.tensor("t", {1, 1, 1, 1, 1}, 0, 0);
    g.pad_and_data(32);
    EXPECT_TRUE(contains(g.error(), "5 dimensions")) << g.error();
  }
  {
    RawGguf g(1, 0);
    g.tensor("t", {4}, 16, 0);
    g.pad_and_data(32);
    EXPECT_TRUE(contains(g.error(), "type 16 (iq2_xxs)")) << g.error();
  }
  {
    RawGguf g(1, 0);
    g.tensor("t", {4}, 0, 8);
    g.pad_and_data(64);
    EXPECT_TRUE(contains(g.error(), "not a multiple of the alignment")) << g.error();
  }
  {
    RawGguf g(1, 0);
    g.tensor("t", {16}, 0, 32);
    g.pad_and_data(64);
    EXPECT_TRUE(contains(g.error(), "extends past the end")) << g.error();
  }
  {
    RawGguf g(1, 0);
    g.tensor("t", {1ull << 32, 1ull << 32}, 0, 0);
    g.pad_and_data(32);
    EXPECT_TRUE(contains(g.error(), "overflows")) << g.error();
  }
  {
    RawGguf g(1, 0);
    g.tensor("t", {1ull << 62}, 0, 0);
    g.pad_and_data(32);
    EXPECT_TRUE(contains(g.error(), "overflows")) << g.error();
  }
  {
    RawGguf g(1, 0);
    g.tensor("t", {31}, 8, 0);
    g.pad_and_data(64);
    EXPECT_TRUE(contains(g.error(), "whole number of q8_0 blocks")) << g.error();
  }
  {
    RawGguf g(2, 0);
    g.tensor("t", {8}, 0, 0);
    g.tensor("t", {8}, 0, 0);  // overlapping is fine, a duplicate name is not
    g.pad_and_data(32);
    EXPECT_TRUE(contains(g.error(), "duplicate tensor name 't'")) << g.error();
  }
  {
    RawGguf g(2, 0);
    g.tensor("a", {8}, 0, 0);
    g.tensor("b", {8}, 0, 0);
    g.pad_and_data(32);
    EXPECT_EQ(g.error(), "");
  }
}

TEST(Gguf, EveryTruncationFailsCleanly) {
  const auto bytes = sample_writer().to_bytes();
  // The last tensor's data may lose its padding without harm; anything shorter must fail.
  for (size_t n = 0; n + 32 < bytes.size(); ++n) {
    std::vector<std::byte> cut(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_THROW(gguf::Reader(test::in_memory(cut, "cut.gguf")), Error) << n;
  }
}

TEST(Gguf, ReadsSharedVocabFiles) {
  OXI_REQUIRE_SHARED_DATA(data);
  const auto vocab = data / "vocab";
  if (!std::filesystem::is_directory(vocab)) GTEST_SKIP() << "no vocab dir";
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(vocab)) {
    if (entry.path().extension() != ".gguf") continue;
    gguf::Reader r(entry.path());
    EXPECT_GE(r.version(), 2u);
    EXPECT_FALSE(r.get_string_array("tokenizer.ggml.tokens").empty()) << entry.path();
    ++n;
  }
  EXPECT_GT(n, 0);
  gguf::Reader llama(vocab / "ggml-vocab-llama-spm.gguf");
  EXPECT_EQ(llama.get_string("general.architecture"), "llama");
  EXPECT_EQ(llama.get_string("tokenizer.ggml.model"), "llama");
}

}  // namespace
}  // namespace oxi
