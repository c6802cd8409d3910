#include <gtest/gtest.h>

#include "lib/core/error.h"
#include "lib/formats/gguf.h"
#include "lib/formats/hf_dir.h"
#include "lib/formats/model_file.h"
#include "lib/formats/safetensors.h"
#include "lib/formats/torch_zip.h"
#include "tests/common/test_data.h"
#include "tests/formats/formats_test_util.h"

namespace oxi {
namespace {

using kernels::DType;
using test::contains;

void write_text(const std::filesystem::path& p, const std::string& s) {
  std::vector<std::byte> b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  test::write_bytes(p, b);
}

TEST(HfDir, SingleSafetensorsWithConfigs) {
  test::TempDir dir;
  write_text(dir / "config.json", R"({"model_type":"llama","hidden_size":8})");
  write_text(dir / "tokenizer.json", "{}");
  write_text(dir / "merges.txt", "#version\n");
  safetensors::Writer w;
  w.add_tensor("lm_head.weight", DType::F32, {2, 2}, test::float_bytes({1, 2, 3, 4}));
  w.write(dir / "model.safetensors");
  const hf::Directory d = hf::open_directory(dir.path());
  EXPECT_EQ(d.config["hidden_size"], 8);
  EXPECT_TRUE(d.tokenizer_json.has_value());
  EXPECT_TRUE(d.merges_txt.has_value());
  EXPECT_FALSE(d.vocab_json.has_value());
  EXPECT_TRUE(d.generation_config.is_null());
  EXPECT_EQ(d.weights_format, "safetensors");
  EXPECT_EQ(d.tensor("lm_head.weight").shape, (std::vector<int64_t>{2, 2}));
  EXPECT_THROW(d.tensor("missing"), Error);
}

TEST(HfDir, MergesSafetensorsShards) {
  test::TempDir dir;
  safetensors::Writer a, b;
  a.add_tensor("x", DType::F32, {1}, test::float_bytes({1}));
  b.add_tensor("y", DType::F16, {2}, test::pattern_bytes(4, 1));
  a.write(dir / "model-00001-of-00002.safetensors");
  b.write(dir / "model-00002-of-00002.safetensors");
  write_text(dir / "model.safetensors.index.json",
             R"({"metadata":{"total_size":8},"weight_map":{"x":"model-00001-of-00002.safetensors",)"
             R"("y":"model-00002-of-00002.safetensors"}})");
  const hf::Directory d = hf::open_directory(dir.path());
  EXPECT_EQ(d.weight_files.size(), 2u);
  EXPECT_EQ(d.tensor("y").dtype, DType::F16);
  const formats::ModelFile m = formats::open_model_file(dir / "model.safetensors.index.json");
  EXPECT_EQ(m.format, "safetensors-sharded");
  EXPECT_EQ(m.tensors.size(), 2u);

  write_text(dir / "model.safetensors.index.json",
             R"({"weight_map":{"z":"model-00001-of-00002.safetensors"}})");
  EXPECT_THROW(hf::open_directory(dir.path()), Error);
  write_text(dir / "model.safetensors.index.json", R"({"weight_map":{"z":"../etc/passwd"}})");
  EXPECT_THROW(hf::open_directory(dir.path()), Error);
}

TEST(HfDir, TorchShardsAndDuplicates) {
  test::TempDir dir;
  torch::Writer a, b;
  a.add_tensor("x", DType::F32, {1}, test::float_bytes({1}));
  b.add_tensor("x", DType::F32, {1}, test::float_bytes({2}));
  a.write(dir / "pytorch_model-00001-of-00002.bin");
  b.write(dir / "pytorch_model-00002-of-00002.bin");
  write_text(dir / "pytorch_model.bin.index.json",
             R"({"weight_map":{"x":"pytorch_model-00001-of-00002.bin"}})");
  write_text(dir / "preprocessor_config.json", R"({"feature_size":80})");
  // Both shards are loaded; the second repeats 'x'.
  write_text(dir / "pytorch_model.bin.index.json",
             R"({"weight_map":{"x":"pytorch_model-00001-of-00002.bin",)"
             R"("w":"pytorch_model-00002-of-00002.bin"}})");
  try {
    hf::open_directory(dir.path());
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "tensor 'x' also appears")) << e.what();
  }
}

TEST(ModelFile, OpensEveryFormat) {
  test::TempDir dir;
  gguf::Writer g;
  g.set_string("general.architecture", "llama");
  g.set_string_array("tokens", {"a", "b"});
  g.set_f32("eps", 1e-5f);
  g.add_tensor("t", DType::Q4_0, {1, 32}, test::pattern_bytes(18, 1));
  g.write(dir / "m.gguf");
  const formats::ModelFile mg = formats::open_model_file(dir / "m.gguf");
  EXPECT_EQ(mg.format, "gguf");
  EXPECT_EQ(mg.version, "3");
  ASSERT_EQ(mg.metadata.size(), 3u);
  EXPECT_EQ(mg.metadata[2].value.dump(), "1e-05");  // f32 printed in its shortest form
  EXPECT_EQ(mg.metadata[1].type, "array[string]");
  EXPECT_EQ(mg.metadata[1].value.size(), 2u);
  EXPECT_EQ(mg.tensors[0].dtype_name, "q4_0");

  torch::Writer t;
  t.add_tensor("w", DType::F32, {2}, test::float_bytes({1, 2}));
  t.nest_under("model_state_dict");
  t.add_int_dict("dims", {{"n_mels", 80}});
  t.write(dir / "m.pt");
  const formats::ModelFile mt = formats::open_model_file(dir / "m.pt");
  EXPECT_EQ(mt.format, "torch");
  ASSERT_EQ(mt.metadata.size(), 1u);
  EXPECT_EQ(mt.metadata[0].key, "dims.n_mels");
  EXPECT_EQ(mt.tensors[0].name, "model_state_dict.w");

  safetensors::Writer s;
  s.add_tensor("w", DType::F32, {1}, test::float_bytes({1}));
  s.write(dir / "weights.bin");  // detected by content, not extension
  EXPECT_EQ(formats::open_model_file(dir / "weights.bin").format, "safetensors");

  write_text(dir / "junk.txt", "hello there");
  try {
    formats::open_model_file(dir / "junk.txt");
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "junk.txt: unrecognized model file format")) << e.what();
  }
  EXPECT_THROW(formats::open_model_file(dir / "missing.gguf"), Error);
  EXPECT_EQ(formats::open_model_file(dir.path()).format, "hf-directory");
}

}  // namespace
}  // namespace oxi
