// A tensor as a model file lists it, usable or not: safetensors and torch files can hold
// dtypes (bool, u8) and layouts (strided views) that oxinfer's TensorView cannot take, and
// those are reported by name only when a caller asks for that tensor.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/core/error.h"
#include "lib/formats/tensor_view.h"

namespace oxi::formats {

struct TensorEntry {
  std::string name;
  std::string dtype_name;  // "f32", "q4_K", "bf16", or the file's own spelling ("bool", "u8")
  std::optional<kernels::DType> dtype;
  std::vector<int64_t> shape;  // outermost first
  uint64_t nbytes = 0;
  std::span<const std::byte> data;  // the tensor's bytes when usable()
  std::string problem;              // why it cannot be used; empty when usable

  bool usable() const { return problem.empty(); }

  // Throws oxi::Error(context, "tensor 'name': problem") when the tensor is not usable.
  TensorView view(std::string_view context) const {
    if (!usable()) throw Error(context, "tensor '" + name + "': " + problem);
    return TensorView{name, *dtype, shape, data};
  }
};

}  // namespace oxi::formats
