#include "lib/vad/silero_vad_model.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <system_error>

#include "lib/core/error.h"
#include "lib/formats/safetensors.h"
#include "lib/hub/hub.h"
#include "lib/hub/repo_spec.h"

namespace oxi::vad {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFileName = "silero_vad_16k.safetensors";

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// Reads tensors of the exact shape the architecture fixes: a file of another shape is another
// model, and running it would read past the views.
class TensorReader {
 public:
  TensorReader(const safetensors::File& file, std::vector<std::vector<float>>& copies)
      : file_(file), copies_(copies) {}

  std::span<const float> floats(const std::string& name, const std::vector<int64_t>& shape) {
    const std::string context = file_.path().string();
    const TensorView t = file_.tensor(name);
    if (t.dtype != kernels::DType::F32)
      throw Error(context, "tensor '" + name + "' is not float32 (F32)");
    if (t.shape != shape)
      throw Error(context, "tensor '" + name + "' has shape " + shape_text(t.shape) +
                               ", expected " + shape_text(shape));
    const size_t n = static_cast<size_t>(t.numel());
    // safetensors does not promise alignment; a misaligned tensor is copied once.
    if (reinterpret_cast<uintptr_t>(t.data.data()) % alignof(float) == 0)
      return {reinterpret_cast<const float*>(t.data.data()), n};
    std::vector<float>& copy = copies_.emplace_back(n);
    std::memcpy(copy.data(), t.data.data(), n * sizeof(float));
    return copy;
  }

  ConvWeights conv(const std::string& prefix, size_t c_in, size_t c_out, size_t stride) {
    const auto in = static_cast<int64_t>(c_in), out = static_cast<int64_t>(c_out);
    return {.weight = floats(prefix + ".weight", {out, in, 3}),
            .bias = floats(prefix + ".bias", {out}),
            .c_in = c_in,
            .c_out = c_out,
            .kernel = 3,
            .stride = stride,
            .padding = 1};
  }

 private:
  const safetensors::File& file_;
  std::vector<std::vector<float>>& copies_;
};

}  // namespace

std::shared_ptr<const SileroVadModel> SileroVadModel::load(const fs::path& path) {
  const safetensors::File file(path);  // throws "PATH: ..." for anything but safetensors
  std::shared_ptr<SileroVadModel> model(new SileroVadModel());
  model->path_ = path;
  model->file_ = file.file();
  TensorReader r(file, model->float_copies_);
  SileroVadWeights& w = model->weights_;
  constexpr auto H = static_cast<int64_t>(kHidden);
  w.stft_basis = r.floats("stft_conv.weight", {2 * kBins, 1, kFilterLength});
  w.conv1 = r.conv("conv1", kBins, 128, 1);
  w.conv2 = r.conv("conv2", 128, 64, 2);
  w.conv3 = r.conv("conv3", 64, 64, 2);
  w.conv4 = r.conv("conv4", 64, kHidden, 1);
  w.lstm_weight_ih = r.floats("lstm_cell.weight_ih", {4 * H, H});
  w.lstm_weight_hh = r.floats("lstm_cell.weight_hh", {4 * H, H});
  w.lstm_bias_ih = r.floats("lstm_cell.bias_ih", {4 * H});
  w.lstm_bias_hh = r.floats("lstm_cell.bias_hh", {4 * H});
  w.final_weight = r.floats("final_conv.weight", {1, H, 1});
  w.final_bias = r.floats("final_conv.bias", {1});
  return model;
}

std::shared_ptr<const SileroVadModel> SileroVadModel::load_spec(std::string_view spec,
                                                                const hub::HubOptions& options) {
  return load(resolve_model_file(spec, options));
}

fs::path resolve_model_file(std::string_view spec, const hub::HubOptions& options) {
  fs::path path(spec);
  std::error_code ec;
  const bool local = !spec.empty() && fs::exists(path, ec);
  if (!local) {
    const std::optional<hub::RepoSpec> repo = hub::try_parse_repo_spec(spec);
    if (!repo)
      throw Error(spec, "no such file or directory, and not a Hugging Face repo id (org/name)");
    path = hub::download(*repo, {"*.safetensors"}, options);
  }
  if (!fs::is_directory(path, ec)) return path;
  // A directory (or repo snapshot): the 16 kHz file by its release name, else its only
  // .safetensors file.
  if (fs::is_regular_file(path / kFileName, ec)) return path / kFileName;
  std::vector<fs::path> candidates;
  for (const auto& entry : fs::directory_iterator(path, ec))
    if (entry.path().extension() == ".safetensors") candidates.push_back(entry.path());
  if (candidates.size() == 1) return candidates.front();
  throw Error(path.string(), std::string("no ") + kFileName +
                                 (candidates.empty() ? " and no other .safetensors file"
                                                     : " and several other .safetensors files"));
}

}  // namespace oxi::vad
