// Malformed Whisper checkpoints: the tiny model as a whisper.cpp ggml file with each int32
// field of its header, vocabulary and tensor table edited in turn (zero, negative, off by one,
// huge) or the file cut there, as an OpenAI .pt with each of its dims edited, and as an HF
// directory with each key of its JSON files edited.
// Each must load, encode a window and decode a step, or fail with oxi::Error; a crash, a
// sanitizer report or another exception fails the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "kernels/formats/dtype.h"
#include "lib/core/error.h"
#include "lib/whisper/whisper_model.h"
#include "lib/whisper/whisper_state.h"
#include "tests/common/json_edits.h"
#include "tests/common/test_data.h"
#include "tests/whisper_model/tiny_whisper.h"

namespace oxi::whisper::test {
namespace {

size_t g_loaded = 0;  // edited files that loaded and ran

bool verbose() {  // OXI_FUZZ_VERBOSE=1 prints each error
  return std::getenv("OXI_FUZZ_VERBOSE") != nullptr;
}

void load_and_run(const std::filesystem::path& path, backends::Backend& backend) {
  try {
    const auto model = WhisperModel::load(path);
    const WhisperConfig& c = model->config();
    WhisperState state(model, backend);
    // At most the tiny model's window: an edited file may claim a huge one (n_audio_ctx 2^20
    // with the positional embedding computed, as a .pt may leave it out), whose attention
    // would take hours; a shorter window runs the same code.
    const size_t frames = std::min<size_t>(static_cast<size_t>(c.n_frames), 100);
    state.encode(oxi::test::random_floats(static_cast<size_t>(c.n_mels) * frames, 5), frames);
    const WhisperVocab& v = model->vocab();
    const std::vector<int32_t> prompt = {v.sot, v.transcribe, v.no_timestamps};
    (void)state.decode(prompt, 0);
    (void)model->decode_text(prompt);
    ++g_loaded;
  } catch (const Error& e) {
    if (verbose()) std::printf("  %s\n", e.what());
  }
}

int32_t read_i32(const std::vector<uint8_t>& f, size_t at) {
  int32_t v = 0;
  std::memcpy(&v, f.data() + at, 4);
  return v;
}

// Offsets of the int32 fields of a ggml file, found by walking it as whisper_ggml.h lays it
// out: the 11 hparams, the mel filterbank's n_mel / n_fft, the token count and the first
// tokens' lengths, and every tensor's n_dims, name length, type and sizes.
std::vector<size_t> ggml_int_fields(const std::vector<uint8_t>& f) {
  std::vector<size_t> at;
  for (size_t i = 0; i < 11; ++i) at.push_back(4 + 4 * i);
  size_t p = 48;
  at.push_back(p);
  at.push_back(p + 4);
  p += 8 + 4 * static_cast<size_t>(read_i32(f, p)) * static_cast<size_t>(read_i32(f, p + 4));
  at.push_back(p);
  const int32_t n_tokens = read_i32(f, p);
  p += 4;
  for (int32_t t = 0; t < n_tokens; ++t) {
    if (t < 3 || t == n_tokens - 1) at.push_back(p);
    p += 4 + static_cast<size_t>(read_i32(f, p));
  }
  while (p + 12 <= f.size()) {
    const int32_t n_dims = read_i32(f, p), name_len = read_i32(f, p + 4);
    const auto type = static_cast<kernels::DType>(read_i32(f, p + 8));
    for (int32_t i = 0; i < 3 + n_dims; ++i) at.push_back(p + 4 * i);
    size_t numel = 1;
    for (int32_t i = 0; i < n_dims; ++i) numel *= static_cast<size_t>(read_i32(f, p + 12 + 4 * i));
    p += 12 + 4 * static_cast<size_t>(n_dims) + static_cast<size_t>(name_len) +
         kernels::row_bytes(type, numel);
  }
  EXPECT_EQ(p, f.size()) << "the walk must end at the end of the file";
  return at;
}

class WhisperFuzz : public ::testing::Test {
 protected:
  void SetUp() override {
    tiny_ = make_tiny_whisper(7);
    g_loaded = 0;
  }
  void expect_loads(const std::filesystem::path& path) {
    load_and_run(path, *backend_);
    ASSERT_EQ(g_loaded, 1u) << "the unedited model must load";
    g_loaded = 0;
  }
  TinyWhisper tiny_;
  oxi::test::TempDir dir_;
  std::unique_ptr<backends::Backend> backend_ = backends::make_cpu_backend(1);
};

TEST_F(WhisperFuzz, GgmlFieldEditsLoadOrFailWithAnError) {
  write_ggml(tiny_, dir_ / "seed.bin", kernels::DType::Q8_0);
  expect_loads(dir_ / "seed.bin");
  const std::vector<uint8_t> seed = oxi::test::read_file_bytes(dir_ / "seed.bin");
  const std::vector<size_t> fields = ggml_int_fields(seed);
  size_t runs = 0;
  for (size_t at : fields) {
    const int32_t x = read_i32(seed, at);
    for (int32_t y : {0, 1, -1, x - 1, x + 1, 2 * x, 1 << 20, INT_MAX, INT_MIN}) {
      if (y == x) continue;
      std::vector<uint8_t> m = seed;
      std::memcpy(m.data() + at, &y, 4);
      oxi::test::write_file_bytes(dir_ / "m.bin", m);
      SCOPED_TRACE("field at " + std::to_string(at) + " = " + std::to_string(y));
      ASSERT_NO_THROW(load_and_run(dir_ / "m.bin", *backend_));
      ++runs;
    }
    oxi::test::write_file_bytes(dir_ / "m.bin",
                                std::vector<uint8_t>(seed.begin(), seed.begin() + at));
    SCOPED_TRACE("cut at " + std::to_string(at));
    ASSERT_NO_THROW(load_and_run(dir_ / "m.bin", *backend_));
  }
  std::printf("[ fuzz ] %zu fields, %zu edits, %zu loaded\n", fields.size(), runs, g_loaded);
}

// An OpenAI .pt whose dims disagree with its tensors or are out of range: each size edited in
// turn (the tensors stay those of the unedited model).
TEST_F(WhisperFuzz, OpenaiDimsEditsLoadOrFailWithAnError) {
  std::filesystem::create_directories(dir_ / "pt");
  write_openai_pt(tiny_, dir_ / "pt" / "tiny.pt");
  expect_loads(dir_ / "pt" / "tiny.pt");
  int TinyDims::*const fields[] = {
      &TinyDims::n_mels, &TinyDims::n_vocab,       &TinyDims::n_audio_ctx, &TinyDims::n_state,
      &TinyDims::n_head, &TinyDims::n_audio_layer, &TinyDims::n_text_ctx,  &TinyDims::n_text_layer};
  size_t runs = 0;
  for (int TinyDims::*field : fields) {
    const int x = tiny_.dims.*field;
    for (int y : {0, 1, -1, x - 1, x + 1, 2 * x, 1 << 20, (1 << 20) + 1, INT_MAX, INT_MIN}) {
      if (y == x) continue;
      TinyWhisper edited = tiny_;
      edited.dims.*field = y;
      const std::filesystem::path dir = dir_ / ("pt" + std::to_string(runs));
      std::filesystem::create_directories(dir);
      write_openai_pt(edited, dir / "tiny.pt");
      SCOPED_TRACE("dims field " + std::to_string(x) + " -> " + std::to_string(y));
      ASSERT_NO_THROW(load_and_run(dir / "tiny.pt", *backend_));
      std::filesystem::remove_all(dir);
      ++runs;
    }
  }
  std::printf("[ fuzz ] %zu dims edits, %zu loaded\n", runs, g_loaded);
}

TEST_F(WhisperFuzz, HfDirectoryEditsLoadOrFailWithAnError) {
  write_hf_dir(tiny_, dir_ / "hf");
  expect_loads(dir_ / "hf");
  size_t runs = 0;
  for (const char* file :
       {"config.json", "generation_config.json", "preprocessor_config.json", "added_tokens.json"}) {
    const std::filesystem::path path = dir_ / "hf" / file;
    if (!std::filesystem::exists(path)) continue;
    std::string original;
    {
      std::ifstream in(path, std::ios::binary);
      original.assign(std::istreambuf_iterator<char>(in), {});
    }
    oxi::test::for_each_json_edit(
        nlohmann::json::parse(original), [&](const nlohmann::json& m, const std::string& what) {
          std::ofstream(path, std::ios::binary | std::ios::trunc) << m.dump();
          SCOPED_TRACE(std::string(file) + ": " + what);
          ASSERT_NO_THROW(load_and_run(dir_ / "hf", *backend_));
          ++runs;
        });
    for (const std::string& text : {std::string("{"), std::string("[]"), std::string("")}) {
      std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
      SCOPED_TRACE(std::string(file) + " not JSON");
      ASSERT_NO_THROW(load_and_run(dir_ / "hf", *backend_));
    }
    std::ofstream(path, std::ios::binary | std::ios::trunc) << original;
  }
  std::printf("[ fuzz ] %zu HF edits, %zu loaded\n", runs, g_loaded);
}

}  // namespace
}  // namespace oxi::whisper::test
