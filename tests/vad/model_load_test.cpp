// SileroVadModel::load on broken files: every failure is an oxi::Error naming the file and the
// problem, never a crash or a model that reads past its weights.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "lib/core/error.h"
#include "lib/vad/silero_vad_model.h"
#include "tests/common/test_data.h"
#include "tests/vad/random_model.h"

namespace oxi::vad {
namespace {

// The message of the oxi::Error that loading `path` throws ("" when it loads).
std::string load_error(const std::filesystem::path& path) {
  try {
    SileroVadModel::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SileroVadModelLoad, LoadsACompleteFile) {
  test::TempDir dir;
  test::write_vad_model(test::random_vad_tensors(1), dir / "ok.safetensors");
  const auto model = SileroVadModel::load(dir / "ok.safetensors");
  EXPECT_EQ(model->weights().stft_basis.size(), 258u * 256u);
  EXPECT_EQ(model->weights().conv2.stride, 2u);
  EXPECT_EQ(model->path(), dir / "ok.safetensors");
}

TEST(SileroVadModelLoad, MissingTensorNamesFileAndTensor) {
  test::TempDir dir;
  auto tensors = test::random_vad_tensors(1);
  tensors.erase("conv2.bias");
  const auto path = dir / "missing.safetensors";
  test::write_vad_model(tensors, path);
  const std::string e = load_error(path);
  EXPECT_NE(e.find(path.string()), std::string::npos) << e;
  EXPECT_NE(e.find("conv2.bias"), std::string::npos) << e;
}

TEST(SileroVadModelLoad, WrongShapeNamesFileTensorAndShapes) {
  test::TempDir dir;
  auto tensors = test::random_vad_tensors(1);
  tensors["conv1.weight"] = {{128, 129, 5}, std::vector<float>(128 * 129 * 5, 0.0f)};
  const auto path = dir / "shape.safetensors";
  test::write_vad_model(tensors, path);
  const std::string e = load_error(path);
  EXPECT_NE(e.find(path.string()), std::string::npos) << e;
  EXPECT_NE(e.find("conv1.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("[128, 129, 5]"), std::string::npos) << e;
  EXPECT_NE(e.find("[128, 129, 3]"), std::string::npos) << e;
}

TEST(SileroVadModelLoad, NotSafetensorsNamesFile) {
  test::TempDir dir;
  const auto path = dir / "text.safetensors";
  std::ofstream(path) << "this is not a model file at all, just some words";
  const std::string e = load_error(path);
  EXPECT_FALSE(e.empty());
  EXPECT_NE(e.find(path.string()), std::string::npos) << e;
}

TEST(SileroVadModelLoad, MissingFileNamesFile) {
  test::TempDir dir;
  const auto path = dir / "absent.safetensors";
  const std::string e = load_error(path);
  EXPECT_NE(e.find(path.string()), std::string::npos) << e;
}

TEST(SileroVadModelLoad, ResolvesADirectory) {
  test::TempDir dir;
  test::write_vad_model(test::random_vad_tensors(1), dir / "silero_vad_16k.safetensors");
  hub::HubOptions offline;
  offline.offline = true;
  EXPECT_EQ(resolve_model_file(dir.path().string(), offline), dir / "silero_vad_16k.safetensors");
  const auto model = SileroVadModel::load_spec(dir.path().string(), offline);
  EXPECT_EQ(model->path(), dir / "silero_vad_16k.safetensors");
  // Neither a path nor a repo id.
  EXPECT_THROW(resolve_model_file((dir / "no" / "such" / "thing").string(), offline), Error);
}

}  // namespace
}  // namespace oxi::vad
