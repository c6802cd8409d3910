#include "tests/vad/random_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "lib/formats/safetensors.h"
#include "tests/common/test_data.h"

namespace oxi::test {

std::map<std::string, VadTensor> random_vad_tensors(uint32_t seed) {
  std::map<std::string, VadTensor> t;
  const auto add = [&](const std::string& name, std::vector<int64_t> shape, float scale) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    std::vector<float> v = random_floats(n, seed++, -scale, scale);
    t[name] = {std::move(shape), std::move(v)};
  };
  // Uniform(-s, s) has variance s^2 / 3: s = sqrt(3 / fan_in) keeps unit variance per layer.
  const auto s = [](double fan_in) { return static_cast<float>(std::sqrt(3.0 / fan_in)); };
  add("stft_conv.weight", {258, 1, 256}, s(256) * 4);
  add("conv1.weight", {128, 129, 3}, s(129 * 3));
  add("conv1.bias", {128}, 0.1f);
  add("conv2.weight", {64, 128, 3}, s(128 * 3) * 2);
  add("conv2.bias", {64}, 0.1f);
  add("conv3.weight", {64, 64, 3}, s(64 * 3) * 2);
  add("conv3.bias", {64}, 0.1f);
  add("conv4.weight", {128, 64, 3}, s(64 * 3) * 2);
  add("conv4.bias", {128}, 0.1f);
  add("lstm_cell.weight_ih", {512, 128}, s(128));
  add("lstm_cell.weight_hh", {512, 128}, s(128));
  add("lstm_cell.bias_ih", {512}, 0.1f);
  add("lstm_cell.bias_hh", {512}, 0.1f);
  add("final_conv.weight", {1, 128, 1}, s(128) * 2);
  add("final_conv.bias", {1}, 0.1f);
  return t;
}

void write_vad_model(const std::map<std::string, VadTensor>& tensors,
                     const std::filesystem::path& path,
                     const std::map<std::string, kernels::DType>& retyped) {
  safetensors::Writer writer;
  for (const auto& [name, tensor] : tensors) {
    const auto r = retyped.find(name);
    const kernels::DType type = r == retyped.end() ? kernels::DType::F32 : r->second;
    std::vector<std::byte> bytes(kernels::row_bytes(type, tensor.values.size()));
    const size_t n = std::min(bytes.size(), tensor.values.size() * sizeof(float));
    if (n > 0) std::memcpy(bytes.data(), tensor.values.data(), n);
    writer.add_tensor(name, type, tensor.shape, std::move(bytes));
  }
  writer.write(path);
}

}  // namespace oxi::test
