// WeightBuilder: turns a checkpoint's tensors into the views a model's forward pass reads —
// matrices stay in the mapped file when a matmul kernel takes their dtype, and are re-encoded
// (e.g. --quant q8) or converted to f32 otherwise. Shared by every model family's loader, so
// every loader reports a missing tensor, a wrong shape or an unusable dtype the same way.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "kernels/formats/dtype.h"
#include "lib/formats/tensor_view.h"

namespace oxi::formats {

// Owned buffers behind views that could not stay in the mapped file. Moving a WeightCopies
// keeps every view valid (the inner vectors' buffers do not move).
struct WeightCopies {
  std::vector<std::vector<float>> floats;
  std::vector<std::vector<std::byte>> bytes;
};

// A tensor by the name a loader asks for, or nullopt when the checkpoint lacks it.
using TensorFinder = std::function<std::optional<TensorView>(const std::string& name)>;

class WeightBuilder {
 public:
  // `context` (usually the file or directory) prefixes every error.
  WeightBuilder(TensorFinder find, WeightCopies& copies, std::string context);

  bool has(const std::string& name) const;

  // A [rows, cols] matrix. A float matrix is re-encoded as `quantize_to` when given (and the
  // row length fits its blocks); quantized matrices are kept as they are.
  backends::WeightMatrix matrix(const std::string& name, size_t rows, size_t cols,
                                std::optional<kernels::DType> quantize_to = std::nullopt);

  // Any tensor of n elements (vectors, conv kernels, [n, 1] biases) as f32, with `offset`
  // added to every value (Gemma's HF norms store w for a scale of 1 + w).
  std::span<const float> floats(const std::string& name, size_t n, float offset = 0.0f);

  // Keeps a computed table alive beside the weights.
  std::span<const float> keep(std::vector<float> values);

  // The tensor, or oxi::Error naming it when it is missing or no row decoder takes its dtype.
  TensorView require(const std::string& name) const;

  const std::string& context() const { return context_; }

 private:
  backends::WeightMatrix convert(const backends::WeightMatrix& w, kernels::DType dtype);

  TensorFinder find_;
  WeightCopies& copies_;
  std::string context_;
};

// Row `row` of a matrix as f32 (embedding lookups).
void dequantize_matrix_row(const backends::WeightMatrix& w, size_t row, std::span<float> out);

// "[2, 3]"
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace oxi::formats
