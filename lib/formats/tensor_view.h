// A named, typed view of tensor bytes inside a mapped model file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kernels/formats/dtype.h"

namespace oxi {

struct TensorView {
  std::string name;
  kernels::DType dtype = kernels::DType::F32;
  // Row-major, outermost dimension first (PyTorch order). GGUF's ne[] is reversed into this:
  // a GGUF matrix with ne = {cols, rows} has shape {rows, cols}.
  std::vector<int64_t> shape;
  std::span<const std::byte> data;  // exactly row_bytes(dtype, numel) bytes, inside the mapping

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

}  // namespace oxi
