#include <gtest/gtest.h>

#include <cstdlib>

#include "lib/core/error.h"
#include "lib/formats/pickle.h"
#include "lib/formats/torch_zip.h"
#include "lib/formats/zip.h"
#include "tests/common/test_data.h"
#include "tests/formats/formats_test_util.h"

namespace oxi {
namespace {

using kernels::DType;
using test::contains;

torch::Writer state_dict_writer() {
  torch::Writer w;
  w.add_tensor("encoder.conv1.weight", DType::F16, {4, 3, 2}, test::pattern_bytes(48, 1));
  w.add_tensor("encoder.ln.bias", DType::F32, {4}, test::float_bytes({1, 2, 3, 4}));
  w.add_tensor("big", DType::I8, {300, 233}, test::pattern_bytes(300 * 233, 3));
  w.add_tensor("scalar", DType::BF16, {}, test::pattern_bytes(2, 4));
  return w;
}

TEST(Torch, ReadsWhatItWrites) {
  torch::Archive a(test::in_memory(state_dict_writer().to_bytes(), "m.pt"));
  EXPECT_EQ(a.archive_name(), "archive");
  ASSERT_EQ(a.tensors().size(), 4u);
  const TensorView w = a.tensor("encoder.conv1.weight");
  EXPECT_EQ(w.dtype, DType::F16);
  EXPECT_EQ(w.shape, (std::vector<int64_t>{4, 3, 2}));
  EXPECT_EQ(w.data.size(), 48u);
  const auto expected = test::pattern_bytes(48, 1);
  EXPECT_TRUE(std::equal(w.data.begin(), w.data.end(), expected.begin()));
  EXPECT_EQ(a.tensor("big").shape, (std::vector<int64_t>{300, 233}));
  EXPECT_EQ(a.tensor("scalar").shape, std::vector<int64_t>{});
  EXPECT_EQ(a.tensor("scalar").data.size(), 2u);
  EXPECT_EQ(a.root().kind, pickle::Object::Kind::Dict);
}

TEST(Torch, NestedWhisperLayout) {
  torch::Writer w;
  w.add_tensor("decoder.token_embedding.weight", DType::F16, {8, 4}, test::pattern_bytes(64, 2));
  w.nest_under("model_state_dict");
  w.add_int_dict("dims", {{"n_mels", 80},
                          {"n_vocab", 51865},
                          {"n_audio_ctx", 1500},
                          {"neg", -5},
                          {"huge", 1ll << 40}});
  w.set_archive_name("tiny");
  torch::Archive a(test::in_memory(w.to_bytes(), "tiny.pt"));
  EXPECT_EQ(a.archive_name(), "tiny");
  const pickle::Object* dims = a.root().get("dims");
  ASSERT_NE(dims, nullptr);
  EXPECT_EQ(dims->get("n_mels")->integer, 80);
  EXPECT_EQ(dims->get("n_vocab")->integer, 51865);
  EXPECT_EQ(dims->get("neg")->integer, -5);
  EXPECT_EQ(dims->get("huge")->integer, 1ll << 40);
  const pickle::Object* sd = a.root().get("model_state_dict");
  ASSERT_NE(sd, nullptr);
  const pickle::Object* t = sd->get("decoder.token_embedding.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(a.entry_of(*t, "x").shape, (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(a.tensor("model_state_dict.decoder.token_embedding.weight").data.size(), 64u);
}

// Wraps a hand-written pickle into a torch-style zip with one 64-byte storage.
std::vector<std::byte> archive_with_pickle(const std::string& pkl) {
  zip::Writer z;
  std::vector<std::byte> p(pkl.size());
  std::memcpy(p.data(), pkl.data(), pkl.size());
  z.add("archive/data.pkl", p);
  z.add("archive/data/0", test::pattern_bytes(64, 0));
  return z.finish();
}

std::string load_error(const std::string& pkl) {
  try {
    torch::Archive a(test::in_memory(archive_with_pickle(pkl), "evil.pt"));
    for (const auto& t : a.tensors()) t.view("evil.pt");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string str_op(const std::string& s) {
  return "\x8c" + std::string(1, static_cast<char>(s.size())) + s;
}

// {'t': _rebuild_tensor_v2(storage(FloatStorage, '0', numel 16), offset, size, stride, False, {})}
std::string tensor_pickle(const std::string& size_stride, int offset = 0) {
  return std::string("\x80\x02}(") + str_op("t") + "ctorch._utils\n_rebuild_tensor_v2\n((" +
         str_op("storage") + "ctorch\nFloatStorage\n" + str_op("0") + str_op("cpu") + "K\x10tQK" +
         std::string(1, static_cast<char>(offset)) + size_stride + "\x89}tRu.";
}

TEST(Torch, RejectsWhatItMustNotRun) {
  EXPECT_TRUE(
      contains(load_error("\x80\x02\x63os\nsystem\n."), "global 'os.system' is not allowed"));
  EXPECT_TRUE(contains(load_error("\x80\x02}\x81."), "unsupported opcode 0x81"));
  EXPECT_TRUE(contains(load_error("\x80\x02."), "stack"));
  EXPECT_TRUE(contains(load_error("\x80\x02h\x05."), "memo entry 5"));
  EXPECT_TRUE(contains(load_error("\x80\x09}."), "protocol 9"));
  EXPECT_TRUE(contains(load_error("\x80\x02\x8c\x05"
                                  "ab"),
                       "runs past the end"));
  EXPECT_EQ(load_error(tensor_pickle("K\x04K\x04\x86K\x04K\x01\x86")), "");
  // A transposed view: strides (1, 4).
  EXPECT_TRUE(
      contains(load_error(tensor_pickle("K\x04K\x04\x86K\x01K\x04\x86")), "not contiguous"));
  // 16 floats from offset 4 overrun the 16-element storage.
  EXPECT_TRUE(
      contains(load_error(tensor_pickle("K\x04K\x04\x86K\x04K\x01\x86", 4)), "past the end"));
}

TEST(Torch, EveryTruncationFailsCleanly) {
  const auto bytes = state_dict_writer().to_bytes();
  for (size_t n = 0; n < bytes.size(); n += (n < 2000 || n + 2000 > bytes.size()) ? 1 : 97) {
    std::vector<std::byte> cut(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_THROW(torch::Archive(test::in_memory(cut)), Error) << n;
  }
}

// The real thing, when python3-torch is installed: torch.load reads our writer's output and
// we read torch.save's.
TEST(Torch, InteroperatesWithPyTorch) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch";
  }
  test::TempDir dir;
  torch::Writer w;
  w.add_tensor("a", DType::F32, {2, 3}, test::float_bytes({1, 2, 3, 4, 5, 6}));
  w.add_tensor("b", DType::F16, {4}, test::pattern_bytes(8, 1));
  w.nest_under("model_state_dict");
  w.add_int_dict("dims", {{"n_mels", 80}});
  w.write(dir / "ours.pt");
  const std::string script =
      "import torch, collections\n"
      "d = torch.load('" +
      (dir / "ours.pt").string() +
      "', weights_only=True)\n"
      "assert d['dims']['n_mels'] == 80\n"
      "a = d['model_state_dict']['a']\n"
      "assert a.dtype == torch.float32 and a.shape == (2, 3) and a[1, 2].item() == 6.0\n"
      "assert d['model_state_dict']['b'].dtype == torch.float16\n"
      "sd = collections.OrderedDict()\n"
      "sd['x'] = torch.arange(12, dtype=torch.float32).reshape(3, 4)\n"
      "sd['y'] = torch.ones(5, dtype=torch.bfloat16)\n"
      "sd['z'] = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()\n"
      "sd['s'] = sd['x'][1]\n"
      "torch.save(sd, '" +
      (dir / "theirs.bin").string() + "')\n";
  std::vector<std::byte> sb(script.size());
  std::memcpy(sb.data(), script.data(), script.size());
  test::write_bytes(dir / "t.py", sb);
  ASSERT_EQ(std::system(("/usr/bin/python3 " + (dir / "t.py").string()).c_str()), 0);
  torch::Archive a(dir / "theirs.bin");
  const TensorView x = a.tensor("x");
  EXPECT_EQ(x.shape, (std::vector<int64_t>{3, 4}));
  float v[12];
  std::memcpy(v, x.data.data(), 48);
  EXPECT_EQ(v[11], 11.0f);
  EXPECT_EQ(a.tensor("y").dtype, DType::BF16);
  EXPECT_THROW(a.tensor("z"), Error);  // a transposed view
  const TensorView s = a.tensor("s");  // a row: shares x's storage at offset 4
  std::memcpy(v, s.data.data(), 16);
  EXPECT_EQ(v[0], 4.0f);
}

}  // namespace
}  // namespace oxi
