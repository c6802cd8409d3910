// Silero VAD v5 models with random weights, written with the project's safetensors writer, so
// the VAD tests cover the math and the loader without the shared data.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kernels/formats/dtype.h"

namespace oxi::test {

struct VadTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// Every tensor of the real model, by name, with random values (deterministic in `seed`) scaled
// so activations neither vanish nor saturate.
std::map<std::string, VadTensor> random_vad_tensors(uint32_t seed);

// Writes `tensors` as float32 safetensors; a tensor named in `retyped` as that type instead (its
// shape's byte count, filled from the start of its float32 bytes: a malformed file for tests).
void write_vad_model(const std::map<std::string, VadTensor>& tensors,
                     const std::filesystem::path& path,
                     const std::map<std::string, kernels::DType>& retyped = {});

}  // namespace oxi::test
