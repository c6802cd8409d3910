// whisper.cpp model files: the real tiny headers from shared data, and synthetic files with
// tensors built here.
#include "lib/formats/whisper_ggml.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "lib/core/error.h"
#include "lib/formats/npy.h"
#include "lib/whisper/whisper_vocab.h"
#include "tests/common/test_data.h"

namespace oxi::whisper_ggml {
namespace {

class FileBuilder {
 public:
  void i32(int32_t v) { raw(&v, 4); }
  void u32(uint32_t v) { raw(&v, 4); }
  void f32(float v) { raw(&v, 4); }
  void str(const std::string& s) { raw(s.data(), s.size()); }
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
  }
  std::vector<uint8_t> bytes;
};

// Header (12) + ne + name + data of the first two synthetic tensors.
constexpr size_t kFirstTensorBytes = 12 + 8 + 20 + 24;
constexpr size_t kSecondTensorBytes = 12 + 4 + 18 + 8;

struct Synthetic {
  std::vector<uint8_t> bytes;
  size_t tensors_offset = 0;
};

// A tiny model: 2x3 mel filters, 3 tokens, then an f32 matrix, an f16 vector and a q8_0 matrix.
Synthetic synthetic_model() {
  FileBuilder b;
  b.u32(kMagic);
  const int32_t hparams[11] = {51865, 1500, 384, 6, 4, 448, 384, 6, 4, 2, 1};
  for (int32_t v : hparams) b.i32(v);
  b.i32(2);
  b.i32(3);
  for (int i = 0; i < 6; ++i) b.f32(0.5f * i);
  b.i32(3);
  for (const std::string token : {"!", " the", ""}) {
    b.u32(static_cast<uint32_t>(token.size()));
    b.str(token);
  }
  Synthetic s;
  s.tensors_offset = b.bytes.size();
  const auto tensor_header = [&](std::vector<int32_t> ne, const std::string& name, int32_t type) {
    b.i32(static_cast<int32_t>(ne.size()));
    b.i32(static_cast<int32_t>(name.size()));
    b.i32(type);
    for (int32_t d : ne) b.i32(d);
    b.str(name);
  };
  tensor_header({3, 2}, "encoder.conv1.weight", 0);  // PyTorch shape [2, 3]
  for (int i = 0; i < 6; ++i) b.f32(static_cast<float>(i));
  tensor_header({4}, "encoder.conv1.bias", 1);
  const uint16_t halves[4] = {0x3C00, 0x4000, 0x4200, 0x4400};  // 1, 2, 3, 4
  b.raw(halves, sizeof(halves));
  tensor_header({32, 2}, "decoder.token_embedding.weight", 8);  // two q8_0 blocks of 34 bytes
  for (int i = 0; i < 68; ++i) b.raw(&i, 1);
  s.bytes = std::move(b.bytes);
  return s;
}

TEST(WhisperGgml, SyntheticTensors) {
  test::TempDir dir;
  const Synthetic s = synthetic_model();
  test::write_file_bytes(dir / "model.bin", s.bytes);
  const Reader r(dir / "model.bin");
  EXPECT_EQ(r.hparams().n_mels, 2);
  EXPECT_EQ(r.hparams().weight_type(), 1);
  EXPECT_EQ(r.mel_filters().n_mel, 2);
  EXPECT_EQ(r.mel_filters().n_fft, 3);
  EXPECT_EQ(r.mel_filters().data, (std::vector<float>{0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f}));
  EXPECT_EQ(r.vocab(), (std::vector<std::string>{"!", " the", ""}));
  ASSERT_EQ(r.tensors().size(), 3u);

  const TensorView& w = r.tensor("encoder.conv1.weight");
  EXPECT_EQ(w.dtype, kernels::DType::F32);
  EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(w.data.size(), 24u);
  float w5;
  std::memcpy(&w5, w.data.data() + 20, 4);
  EXPECT_EQ(w5, 5.0f);

  const TensorView& bias = r.tensor("encoder.conv1.bias");
  EXPECT_EQ(bias.dtype, kernels::DType::F16);
  EXPECT_EQ(bias.shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(bias.data.size(), 8u);

  const TensorView& emb = r.tensor("decoder.token_embedding.weight");
  EXPECT_EQ(emb.dtype, kernels::DType::Q8_0);
  EXPECT_EQ(emb.shape, (std::vector<int64_t>{2, 32}));
  ASSERT_EQ(emb.data.size(), 68u);
  EXPECT_EQ(std::to_integer<int>(emb.data[67]), 67);
  EXPECT_EQ(r.find_tensor("missing"), nullptr);
  EXPECT_THROW(r.tensor("missing"), Error);
}

TEST(WhisperGgml, TruncatedFilesThrow) {
  test::TempDir dir;
  const Synthetic s = synthetic_model();
  // Every cut inside the header, the vocabulary and the tensor table is reported (a cut exactly
  // between tensors is a valid file with fewer tensors).
  size_t checked = 0;
  for (size_t n = 0; n < s.bytes.size(); ++n) {
    if (n == s.tensors_offset || n == s.tensors_offset + kFirstTensorBytes ||
        n == s.tensors_offset + kFirstTensorBytes + kSecondTensorBytes) {
      continue;
    }
    test::write_file_bytes(dir / "cut.bin",
                           std::vector<uint8_t>(s.bytes.begin(), s.bytes.begin() + n));
    EXPECT_THROW(Reader(dir / "cut.bin"), Error) << "cut at " << n;
    ++checked;
  }
  EXPECT_GT(checked, 200u);
  // The cuts between tensors.
  test::write_file_bytes(dir / "two.bin",
                         std::vector<uint8_t>(s.bytes.begin(), s.bytes.begin() + s.tensors_offset +
                                                                   kFirstTensorBytes));
  EXPECT_EQ(Reader(dir / "two.bin").tensors().size(), 1u);
}

TEST(WhisperGgml, CorruptedFilesThrow) {
  test::TempDir dir;
  const Synthetic s = synthetic_model();
  const auto expect_error = [&](size_t offset, int32_t value, const std::string& why) {
    auto bytes = s.bytes;
    std::memcpy(bytes.data() + offset, &value, 4);
    test::write_file_bytes(dir / "bad.bin", bytes);
    try {
      Reader r(dir / "bad.bin");
      ADD_FAILURE() << why << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("bad.bin"), std::string::npos) << e.what();
    }
  };
  expect_error(0, 0x46554747, "magic");
  expect_error(4, -5, "negative n_vocab");
  expect_error(4 + 4 * 10, 4, "removed ggml type as ftype");
  expect_error(48, 1 << 30, "huge mel count");
  const size_t vocab_offset = 4 + 44 + 8 + 24;
  expect_error(vocab_offset, 1 << 30, "huge vocabulary");
  expect_error(vocab_offset + 4, 1 << 30, "huge token");
  const size_t t = s.tensors_offset;
  expect_error(t, 7, "too many dims");
  expect_error(t, 0, "zero dims");
  expect_error(t + 4, 1 << 20, "huge name");
  expect_error(t + 8, 5, "removed ggml type");
  expect_error(t + 8, 999, "unknown ggml type");
  expect_error(t + 12, -3, "negative dimension");
  expect_error(t + 12, 1 << 30, "tensor larger than the file");
  const size_t q8 = t + kFirstTensorBytes + kSecondTensorBytes;
  expect_error(q8 + 12, 31, "q8_0 row not a whole block");
  // The second tensor once more at the end.
  auto dup = s.bytes;
  dup.insert(dup.end(), s.bytes.begin() + static_cast<ptrdiff_t>(t + kFirstTensorBytes),
             s.bytes.begin() + static_cast<ptrdiff_t>(t + kFirstTensorBytes + kSecondTensorBytes));
  test::write_file_bytes(dir / "dup.bin", dup);
  EXPECT_THROW(Reader(dir / "dup.bin"), Error);
}

void check_tiny(const std::filesystem::path& path, bool english) {
  const Reader r(path);
  const HParams& h = r.hparams();
  EXPECT_EQ(h.n_vocab, english ? 51864 : 51865);
  EXPECT_EQ(h.is_multilingual(), !english);
  EXPECT_EQ(h.n_audio_ctx, 1500);
  EXPECT_EQ(h.n_audio_state, 384);
  EXPECT_EQ(h.n_audio_head, 6);
  EXPECT_EQ(h.n_audio_layer, 4);
  EXPECT_EQ(h.n_text_ctx, 448);
  EXPECT_EQ(h.n_text_state, 384);
  EXPECT_EQ(h.n_text_head, 6);
  EXPECT_EQ(h.n_text_layer, 4);
  EXPECT_EQ(h.n_mels, 80);
  EXPECT_EQ(h.weight_type(), 1);  // f16
  EXPECT_TRUE(r.tensors().empty());

  // The vocabulary holds the BPE ranks; the special tokens come from the standard layout.
  const auto layout = whisper::whisper_vocab_for_size(h.n_vocab);
  ASSERT_TRUE(layout.has_value());
  // The BPE ranks (multilingual: 50257, the last an empty placeholder); whisper.cpp's English
  // files add "<|endoftext|>".
  EXPECT_EQ(r.vocab().size(), 50257u);
  EXPECT_EQ(r.vocab().back(), english ? "<|endoftext|>" : "");
  EXPECT_EQ(r.vocab()[0], "!");
  if (english) {
    EXPECT_EQ(r.vocab()[262], " the");  // GPT-2's id
  }

  const auto mel80 = npy::load_npz(path.parent_path() / "mel_filters.npz").at("mel_80").to_f32();
  ASSERT_EQ(r.mel_filters().n_mel, 80);
  ASSERT_EQ(r.mel_filters().n_fft, 201);
  ASSERT_EQ(r.mel_filters().data.size(), mel80.size());
  float max_diff = 0.0f;
  for (size_t i = 0; i < mel80.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(r.mel_filters().data[i] - mel80[i]));
  }
  EXPECT_LE(max_diff, 1e-6f);
}

TEST(WhisperGgml, TinyMultilingualHeader) {
  OXI_REQUIRE_SHARED_DATA(data);
  check_tiny(data / "whisper" / "for-tests-ggml-tiny.bin", false);
}

TEST(WhisperGgml, TinyEnglishHeader) {
  OXI_REQUIRE_SHARED_DATA(data);
  check_tiny(data / "whisper" / "for-tests-ggml-tiny.en.bin", true);
}

}  // namespace
}  // namespace oxi::whisper_ggml
