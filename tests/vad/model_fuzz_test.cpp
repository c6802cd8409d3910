// Malformed Silero VAD files: the random model with each tensor missing, of another type, of
// another shape or holding NaN / infinity; with each key of its safetensors header edited
// (tests/common/json_edits); and with random byte edits of the whole file. Each must load and
// give a probability for a few windows, or fail with an oxi::Error naming the file; a crash, a
// sanitizer report or another exception fails the test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/formats/dtype.h"
#include "lib/core/error.h"
#include "lib/vad/silero_vad.h"
#include "tests/common/byte_edits.h"
#include "tests/common/json_edits.h"
#include "tests/common/test_data.h"
#include "tests/vad/random_model.h"

namespace oxi::vad {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  size_t loaded = 0, refused = 0;
};

// Loads `path` and runs three windows of noise through it, or expects an oxi::Error that names
// the file. A loaded model's probabilities are in [0, 1], or NaN where its weights hold NaN.
void load_and_run(const fs::path& path, const std::string& what, Outcome& outcome) {
  SCOPED_TRACE(what);
  try {
    SileroVad vad(SileroVadModel::load(path));
    const std::vector<float> noise = test::random_floats(3 * kWindow, 5, -0.5f, 0.5f);
    for (size_t w = 0; w < 3; ++w) {
      const float p =
          vad.process(std::span<const float, kWindow>(noise.data() + w * kWindow, kWindow));
      EXPECT_TRUE(std::isnan(p) || (p >= 0.0f && p <= 1.0f)) << p;
    }
    ++outcome.loaded;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    if (std::getenv("OXI_FUZZ_VERBOSE")) std::printf("%s: %s\n", what.c_str(), e.what());
    ++outcome.refused;
  }
}

TEST(SileroVadFuzz, EachTensorMissingRetypedReshapedOrNonFinite) {
  test::TempDir dir;
  const auto tensors = test::random_vad_tensors(3);
  const fs::path path = dir / "edited.safetensors";
  Outcome outcome;
  test::write_vad_model(tensors, path);
  load_and_run(path, "unedited", outcome);
  ASSERT_EQ(outcome.loaded, 1u) << "the unedited model must load";

  for (const auto& [name, tensor] : tensors) {
    auto edited = tensors;
    edited.erase(name);
    test::write_vad_model(edited, path);
    load_and_run(path, name + " missing", outcome);

    for (kernels::DType type : {kernels::DType::F16, kernels::DType::BF16, kernels::DType::F64}) {
      test::write_vad_model(tensors, path, {{name, type}});
      load_and_run(path, name + " as " + std::string(kernels::name(type)), outcome);
    }

    // Each dim 0, one less, one more, doubled; a dim added and the last removed. The values
    // follow the shape (as many as it holds).
    std::vector<std::vector<int64_t>> shapes;
    for (size_t d = 0; d < tensor.shape.size(); ++d) {
      for (int64_t v :
           {int64_t{0}, tensor.shape[d] - 1, tensor.shape[d] + 1, 2 * tensor.shape[d]}) {
        auto s = tensor.shape;
        s[d] = v;
        shapes.push_back(s);
      }
    }
    auto longer = tensor.shape;
    longer.push_back(1);
    shapes.push_back(longer);
    shapes.push_back({tensor.shape.begin(), tensor.shape.end() - 1});
    for (const auto& shape : shapes) {
      size_t n = 1;
      for (int64_t v : shape) n *= static_cast<size_t>(v);
      edited = tensors;
      edited[name] = {shape, test::random_floats(n, 9)};
      test::write_vad_model(edited, path);
      std::string what = name + " shaped";
      for (int64_t v : shape) what.append(" ").append(std::to_string(v));
      load_and_run(path, what, outcome);
    }

    for (float bad :
         {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
      edited = tensors;
      edited[name].values[edited[name].values.size() / 2] = bad;
      test::write_vad_model(edited, path);
      load_and_run(path, name + " holding " + std::to_string(bad), outcome);
    }
  }
  std::printf("tensor edits: %zu loaded, %zu refused\n", outcome.loaded - 1, outcome.refused);
  // Only the non-finite values load: every other edit changes what the architecture fixes.
  EXPECT_EQ(outcome.loaded - 1, 2 * tensors.size());
}

TEST(SileroVadFuzz, EachHeaderKeyEdited) {
  test::TempDir dir;
  const fs::path original = dir / "original.safetensors", path = dir / "edited.safetensors";
  test::write_vad_model(test::random_vad_tensors(4), original);
  const std::vector<uint8_t> file = test::read_file_bytes(original);
  uint64_t header_size = 0;
  ASSERT_GE(file.size(), 8u);
  std::memcpy(&header_size, file.data(), 8);  // little-endian, as this machine is
  ASSERT_LE(8 + header_size, file.size());
  const auto header = nlohmann::json::parse(
      std::string(reinterpret_cast<const char*>(file.data()) + 8, header_size));
  const std::span<const uint8_t> data(file.data() + 8 + header_size, file.size() - 8 - header_size);

  Outcome outcome;
  size_t edits = 0;
  test::for_each_json_edit(header, [&](const nlohmann::json& edited, const std::string& what) {
    const std::string text = edited.dump();
    std::vector<uint8_t> bytes(8 + text.size());
    const uint64_t size = text.size();
    std::memcpy(bytes.data(), &size, 8);
    std::memcpy(bytes.data() + 8, text.data(), text.size());
    bytes.insert(bytes.end(), data.begin(), data.end());
    test::write_file_bytes(path, bytes);
    load_and_run(path, what, outcome);
    ++edits;
  });
  std::printf("header edits: %zu loaded, %zu refused\n", outcome.loaded, outcome.refused);
  EXPECT_GT(edits, 200u);
  EXPECT_GT(outcome.refused, edits / 2);
}

TEST(SileroVadFuzz, RandomByteEdits) {
  test::TempDir dir;
  const fs::path original = dir / "original.safetensors", path = dir / "edited.safetensors";
  test::write_vad_model(test::random_vad_tensors(5), original);
  const std::vector<uint8_t> file = test::read_file_bytes(original);
  std::mt19937 rng(11);
  Outcome outcome;
  for (int i = 0; i < 400; ++i) {
    // Half the edits fall in the header (its first 1.5 KB), where the structure is.
    std::vector<uint8_t> bytes;
    if (i % 2 == 0) {
      bytes = test::edit_bytes(std::vector<uint8_t>(file.begin(), file.begin() + 1536), rng);
      if (bytes.size() == 1536) bytes.insert(bytes.end(), file.begin() + 1536, file.end());
    } else {
      bytes = test::edit_bytes(file, rng);
    }
    test::write_file_bytes(path, bytes);
    load_and_run(path, "byte edits " + std::to_string(i), outcome);
  }
  std::printf("byte edits: %zu loaded, %zu refused\n", outcome.loaded, outcome.refused);
  EXPECT_GT(outcome.refused, 100u);
}

}  // namespace
}  // namespace oxi::vad
