// Malformed model files: tiny valid GGUF models of every architecture, each rewritten with one
// metadata value or one tensor changed (hyperparameters zero, off by one, huge or of another
// type; token arrays short, long or out of range; tensors missing, reshaped, retyped). Each
// must load and evaluate a short prompt, or fail with oxi::Error; a crash, a sanitizer report
// or another exception fails the test. The byte-level fuzzing of the GGUF reader is in
// tests/formats; this reaches what the reader accepts and the model loader must still refuse.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_backend.h"
#include "lib/core/error.h"
#include "lib/formats/gguf.h"
#include "lib/llm/model.h"
#include "lib/llm/session.h"
#include "tests/common/byte_edits.h"
#include "tests/common/json_edits.h"
#include "tests/common/test_data.h"
#include "tests/llm/tiny_model.h"

namespace oxi::llm::test {
namespace {

using gguf::Value;
using gguf::ValueType;
using kernels::DType;

// Loads `file`, tokenizes and decodes a text, evaluates a prompt and one more token.
// oxi::Error is the expected failure; anything else escapes.
// How many edited files loaded and ran (the rest failed with oxi::Error).
size_t g_loaded = 0;

// OXI_FUZZ_VERBOSE=1 prints each error and each edit that loaded.
bool verbose() {
  return std::getenv("OXI_FUZZ_VERBOSE") != nullptr;
}

void load_and_run(const std::filesystem::path& file, backends::Backend& backend) {
  try {
    const auto model = Model::load(file);
    const auto& tok = model->tokenizer();
    std::vector<int32_t> ids = tok.encode("Hello world, 123 <|x|>\n", tok.add_bos(), true);
    (void)tok.decode(ids);
    ids.push_back(model->config().n_vocab - 1);
    Session s(model, backend, 64);
    s.eval(ids);
    const int32_t next = 0;
    s.eval(std::span<const int32_t>(&next, 1));
    ++g_loaded;
  } catch (const Error& e) {
    if (verbose()) std::printf("  %s\n", e.what());
  }
}

// The values to try in place of a scalar.
std::vector<Value> scalar_edits(const Value& v) {
  std::vector<Value> out;
  auto with = [&](auto x) {
    Value e = v;
    e.data = x;
    out.push_back(e);
  };
  switch (v.type) {
    case ValueType::UINT8:
    case ValueType::UINT16:
    case ValueType::UINT32:
    case ValueType::UINT64: {
      const uint64_t x = std::get<uint64_t>(v.data);
      for (uint64_t y : {uint64_t{0}, uint64_t{1}, x - 1, x + 1, 2 * x, x / 2 + 1, uint64_t{3},
                         uint64_t{0xFFFF}, uint64_t{0xFFFFFFFF}, uint64_t{1} << 31})
        with(y);
      if (v.type == ValueType::UINT64) with(~uint64_t{0});
      break;
    }
    case ValueType::INT8:
    case ValueType::INT16:
    case ValueType::INT32:
    case ValueType::INT64: {
      const int64_t x = std::get<int64_t>(v.data);
      for (int64_t y : {int64_t{0}, int64_t{1}, int64_t{-1}, x - 1, x + 1, 2 * x, int64_t{3},
                        int64_t{std::numeric_limits<int32_t>::max()},
                        int64_t{std::numeric_limits<int32_t>::min()}})
        with(y);
      break;
    }
    case ValueType::FLOAT32:
    case ValueType::FLOAT64: {
      const double x = std::get<double>(v.data);
      for (double y : {0.0, -1.0, 2 * x, 1e30, -1e30, std::nan(""),
                       std::numeric_limits<double>::infinity(), 1e-30})
        with(y);
      break;
    }
    case ValueType::BOOL:
      with(!std::get<bool>(v.data));
      break;
    case ValueType::STRING:
      for (const char* s : {"", "x", "llama", "qwen2", "qwen3", "gemma3", "phi3", "gpt2", "bert",
                            "\xff\xfe", "{{", "{% for %}"})
        with(std::string(s));
      break;
    default:
      break;
  }
  // The same number as another type (a u32 field written as a string or a float).
  Value as_string = v;
  as_string.type = ValueType::STRING;
  as_string.data = std::string("7");
  if (v.type != ValueType::STRING) out.push_back(as_string);
  Value as_float = v;
  as_float.type = ValueType::FLOAT32;
  as_float.data = 7.5;
  if (v.type != ValueType::FLOAT32) out.push_back(as_float);
  return out;
}

// The values to try in place of an array: shorter, empty, longer, elements out of range.
std::vector<Value> array_edits(const Value& v) {
  std::vector<Value> out;
  const auto& arr = std::get<Value::Array>(v.data);
  std::visit(
      [&](const auto& xs) {
        using Vec = std::decay_t<decltype(xs)>;
        auto with = [&](Vec ys) {
          Value e = v;
          e.data = Value::Array(std::move(ys));
          out.push_back(std::move(e));
        };
        with(Vec{});
        if (!xs.empty()) {
          with(Vec(xs.begin(), xs.end() - 1));
          with(Vec(xs.begin(), xs.begin() + (xs.size() + 1) / 2));
          Vec longer = xs;
          longer.push_back(xs.back());
          with(longer);
          for (size_t at : {size_t{0}, xs.size() / 2, xs.size() - 1}) {
            using T = typename Vec::value_type;
            if constexpr (std::is_same_v<T, std::string>) {
              for (const char* s : {"", "\xff", "a b c", "<s>", "Ġ", "\xe2\x96\x81"}) {
                Vec ys = xs;
                ys[at] = s;
                with(ys);
              }
            } else if constexpr (std::is_floating_point_v<T>) {
              for (T y : {T(std::nan("")), std::numeric_limits<T>::infinity(), T(-1e30)}) {
                Vec ys = xs;
                ys[at] = y;
                with(ys);
              }
            } else {
              for (T y : {T(-1), T(0), T(7), std::numeric_limits<T>::max(),
                          std::numeric_limits<T>::min()}) {
                Vec ys = xs;
                ys[at] = y;
                with(ys);
              }
            }
          }
        }
      },
      arr);
  return out;
}

struct TensorCopy {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<std::byte> data;
};

struct GgufCopy {
  std::vector<std::pair<std::string, Value>> metadata;
  std::vector<TensorCopy> tensors;

  explicit GgufCopy(const std::filesystem::path& file) {
    const gguf::Reader r(file);
    metadata = r.metadata();
    for (const auto& t : r.tensors())
      tensors.push_back({t.name, t.dtype, t.shape, {t.data.begin(), t.data.end()}});
  }

  // False when the writer refuses the edit (a value out of its type's range).
  bool write(const std::filesystem::path& file) const {
    gguf::Writer w;
    for (const auto& [key, value] : metadata)
      if (key != "general.alignment") w.set(key, value);
    for (const auto& t : tensors) w.add_tensor(t.name, t.dtype, t.shape, t.data);
    try {
      w.write(file);
    } catch (const Error&) {
      return false;
    }
    return true;
  }
};

// Bytes of a tensor of `shape` in `dtype` (a pattern that decodes to finite values).
std::vector<std::byte> filler(DType dtype, const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  const size_t bytes = kernels::row_bytes(dtype, static_cast<size_t>(n));
  std::vector<std::byte> out(bytes);
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<std::byte>((i * 7) & 0x3b);
  return out;
}

class ModelFuzz : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelFuzz, GgufMetadataEditsLoadOrFailWithAnError) {
  const TinyModel tiny = make_tiny_model(tiny_spec(GetParam(), false), DType::Q8_0, DType::F32, 3);
  oxi::test::TempDir dir;
  write_gguf(tiny, dir / "seed.gguf");
  const GgufCopy seed(dir / "seed.gguf");
  auto backend = backends::make_cpu_backend(1);
  g_loaded = 0;
  load_and_run(dir / "seed.gguf", *backend);
  ASSERT_EQ(g_loaded, 1u) << "the unedited model must load";
  g_loaded = 0;
  size_t runs = 0;
  for (size_t k = 0; k < seed.metadata.size(); ++k) {
    const auto& [key, value] = seed.metadata[k];
    std::vector<Value> edits =
        value.type == ValueType::ARRAY ? array_edits(value) : scalar_edits(value);
    for (const Value& e : edits) {
      GgufCopy m = seed;
      m.metadata[k].second = e;
      if (!m.write(dir / "m.gguf")) continue;
      SCOPED_TRACE(key);
      ASSERT_NO_THROW(load_and_run(dir / "m.gguf", *backend));
      ++runs;
    }
    GgufCopy m = seed;  // the key missing
    m.metadata.erase(m.metadata.begin() + k);
    ASSERT_TRUE(m.write(dir / "m.gguf"));
    SCOPED_TRACE("without " + key);
    ASSERT_NO_THROW(load_and_run(dir / "m.gguf", *backend));
  }
  std::printf("[ fuzz ] %zu metadata edits, %zu loaded\n", runs, g_loaded);
}

// Every tensor of `tiny` missing, reshaped and retyped in turn (the repacked layouts of
// q4_0 / q8_0 / q4_K see the edited shapes too).
void tensor_edits_load_or_fail(const TinyModel& tiny) {
  oxi::test::TempDir dir;
  write_gguf(tiny, dir / "seed.gguf");
  const GgufCopy seed(dir / "seed.gguf");
  auto backend = backends::make_cpu_backend(1);
  g_loaded = 0;
  size_t runs = 0;
  auto run = [&](const GgufCopy& m, const std::string& what) {
    ASSERT_TRUE(m.write(dir / "m.gguf"));
    SCOPED_TRACE(what);
    const size_t before = g_loaded;
    ASSERT_NO_THROW(load_and_run(dir / "m.gguf", *backend));
    if (verbose() && g_loaded > before) std::printf("loaded: %s\n", what.c_str());
    ++runs;
  };
  for (size_t t = 0; t < seed.tensors.size(); ++t) {
    const TensorCopy& orig = seed.tensors[t];
    {
      GgufCopy m = seed;
      m.tensors.erase(m.tensors.begin() + t);
      run(m, "without " + orig.name);
    }
    std::vector<std::vector<int64_t>> shapes = {orig.shape};  // retyped only
    std::vector<int64_t> s = orig.shape;
    std::reverse(s.begin(), s.end());
    shapes.push_back(s);
    int64_t numel = 1;
    for (int64_t d : orig.shape) numel *= d;
    shapes.push_back({numel});
    for (size_t d = 0; d < orig.shape.size(); ++d)
      for (int64_t delta : {-32, 32, -1}) {
        std::vector<int64_t> sh = orig.shape;
        sh[d] += delta;
        if (sh[d] > 0) shapes.push_back(sh);
      }
    std::vector<int64_t> more = orig.shape;
    more.push_back(1);
    shapes.push_back(more);
    for (const auto& sh : shapes) {
      for (DType dt : {orig.dtype, DType::F32, DType::F16, DType::Q4_0, DType::Q4_K, DType::I32}) {
        int64_t inner = sh.empty() ? 1 : sh.back();
        if (inner % static_cast<int64_t>(kernels::info(dt).block_elems) != 0) continue;
        GgufCopy m = seed;
        m.tensors[t].shape = sh;
        m.tensors[t].dtype = dt;
        m.tensors[t].data = filler(dt, sh);
        std::string what = orig.name + " as " + std::string(kernels::name(dt)) + " [";
        for (int64_t x : sh) what += std::to_string(x) + " ";
        what += "] from [";
        for (int64_t x : orig.shape) what += std::to_string(x) + " ";
        run(m, what + "]");
      }
    }
  }
  std::printf("[ fuzz ] %zu tensor edits, %zu loaded\n", runs, g_loaded);
}

TEST_P(ModelFuzz, GgufTensorEditsLoadOrFailWithAnError) {
  tensor_edits_load_or_fail(
      make_tiny_model(tiny_spec(GetParam(), false), DType::Q8_0, DType::F32, 3));
}

TEST(ModelFuzzKQuants, GgufTensorEditsLoadOrFailWithAnError) {
  tensor_edits_load_or_fail(make_tiny_model(tiny_spec("llama", true), DType::Q4_K, DType::F32, 3));
}

TEST_P(ModelFuzz, HfDirectoryEditsLoadOrFailWithAnError) {
  const TinyModel tiny = make_tiny_model(tiny_spec(GetParam(), false), DType::F16, DType::F32, 3);
  oxi::test::TempDir dir;
  write_hf_dir(tiny, dir.path());
  auto backend = backends::make_cpu_backend(1);
  g_loaded = 0;
  load_and_run(dir.path(), *backend);
  ASSERT_EQ(g_loaded, 1u) << "the unedited model must load";
  g_loaded = 0;
  size_t runs = 0;
  for (const char* file :
       {"config.json", "tokenizer_config.json", "generation_config.json", "tokenizer.json"}) {
    const std::filesystem::path path = dir / file;
    std::string original;
    {
      std::ifstream in(path, std::ios::binary);
      original.assign(std::istreambuf_iterator<char>(in), {});
    }
    const nlohmann::json doc = nlohmann::json::parse(original);
    oxi::test::for_each_json_edit(doc, [&](const nlohmann::json& m, const std::string& what) {
      std::ofstream(path, std::ios::binary | std::ios::trunc) << m.dump();
      if (verbose()) std::printf("edit: %s %s\n", file, what.c_str());
      SCOPED_TRACE(std::string(file) + ": " + what);
      ASSERT_NO_THROW(load_and_run(dir.path(), *backend));
      ++runs;
    });
    // Not JSON at all, or cut short.
    for (const std::string& text : {std::string("{"), original.substr(0, original.size() / 2),
                                    std::string("[]"), std::string("")}) {
      std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
      SCOPED_TRACE(std::string(file) + " cut");
      ASSERT_NO_THROW(load_and_run(dir.path(), *backend));
    }
    std::ofstream(path, std::ios::binary | std::ios::trunc) << original;
  }
  std::printf("[ fuzz ] %zu HF edits, %zu loaded\n", runs, g_loaded);
}

// --save-kv files: random byte edits of a saved state (and every cut of its header) loaded
// into a fresh session, which must then evaluate a token, or fail with oxi::Error and keep
// working.
TEST(ModelFuzzState, StateFileEditsLoadOrFailWithAnError) {
  const TinyModel tiny = make_tiny_model(tiny_spec("llama", false), DType::Q8_0, DType::F32, 3);
  oxi::test::TempDir dir;
  write_gguf(tiny, dir / "model.gguf");
  const auto model = Model::load(dir / "model.gguf");
  auto backend = backends::make_cpu_backend(1);
  {
    Session s(model, *backend, 32);
    const std::vector<int32_t> prompt = {1, 20, 30, 40, 50, 299};
    s.eval(prompt);
    s.save_state(dir / "seed.bin");
  }
  const std::vector<uint8_t> seed = oxi::test::read_file_bytes(dir / "seed.bin");
  size_t loaded = 0;
  auto run = [&](const std::vector<uint8_t>& bytes, const std::string& what) {
    oxi::test::write_file_bytes(dir / "m.bin", bytes);
    Session s(model, *backend, 32);
    const int32_t next = 7;
    s.eval(std::span<const int32_t>(&next, 1));
    try {
      s.load_state(dir / "m.bin");
      ++loaded;
    } catch (const Error& e) {
      if (verbose()) std::printf("  %s\n", e.what());
      ASSERT_EQ(s.n_past(), 1u) << what << ": a refused file left the session changed";
    }
    for (int32_t t : s.tokens()) ASSERT_TRUE(t >= 0 && t < 300) << what;
    s.eval(std::span<const int32_t>(&next, 1));
  };
  for (size_t n = 0; n < 64 && n < seed.size(); ++n)
    run(std::vector<uint8_t>(seed.begin(), seed.begin() + n), "cut at " + std::to_string(n));
  std::mt19937 rng(11);
  for (int i = 0; i < 2000; ++i) {
    run(oxi::test::edit_bytes(seed, rng), "round " + std::to_string(i));
    if (HasFatalFailure()) return;
  }
  std::printf("[ fuzz ] state edits, %zu loaded\n", loaded);
  EXPECT_GT(loaded, 0u);
}

INSTANTIATE_TEST_SUITE_P(Archs, ModelFuzz,
                         ::testing::Values("llama", "qwen2", "qwen3", "gemma3", "phi3"));

}  // namespace
}  // namespace oxi::llm::test
