#include "lib/formats/weight_builder.h"

#include "kernels/formats/quant.h"
#include "lib/core/error.h"

namespace oxi::formats {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void dequantize_matrix_row(const backends::WeightMatrix& w, size_t row, std::span<float> out) {
  kernels::dequantize_matrix_row(w.dtype, w.data, w.row_bytes, row, out.data(), w.cols);
}

WeightBuilder::WeightBuilder(TensorFinder find, WeightCopies& copies, std::string context)
    : find_(std::move(find)), copies_(copies), context_(std::move(context)) {}

bool WeightBuilder::has(const std::string& name) const {
  return !name.empty() && find_(name).has_value();
}

TensorView WeightBuilder::require(const std::string& name) const {
  std::optional<TensorView> t = name.empty() ? std::nullopt : find_(name);
  if (!t) throw Error(context_, "missing tensor '" + name + "'");
  if (!kernels::row_decoder(t->dtype))
    throw Error(context_, "tensor '" + name + "' has unsupported dtype " +
                              std::string(kernels::name(t->dtype)));
  return *t;
}

backends::WeightMatrix WeightBuilder::matrix(const std::string& name, size_t rows, size_t cols,
                                             std::optional<kernels::DType> quantize_to) {
  const TensorView t = require(name);
  if (t.shape.size() != 2 || static_cast<size_t>(t.shape[0]) != rows ||
      static_cast<size_t>(t.shape[1]) != cols)
    throw Error(context_, "tensor '" + name + "' has shape " + shape_text(t.shape) +
                              ", expected [" + std::to_string(rows) + ", " + std::to_string(cols) +
                              "]");
  backends::WeightMatrix w{t.dtype, t.data.data(), rows, cols, kernels::row_bytes(t.dtype, cols)};
  if (quantize_to && !kernels::info(t.dtype).quantized &&
      kernels::row_bytes(*quantize_to, cols) != 0)
    return convert(w, *quantize_to);
  if (!kernels::weight_supported(t.dtype))
    throw Error(context_, "tensor '" + name + "' has dtype " + std::string(kernels::name(t.dtype)) +
                              ", which no matmul kernel takes");
  return w;
}

std::span<const float> WeightBuilder::floats(const std::string& name, size_t n, float offset) {
  const TensorView t = require(name);
  if (static_cast<size_t>(t.numel()) != n)
    throw Error(context_, "tensor '" + name + "' has shape " + shape_text(t.shape) + " (" +
                              std::to_string(t.numel()) + " elements), expected " +
                              std::to_string(n) + " elements");
  std::vector<float> v(n);
  kernels::dequantize_row(t.dtype, t.data.data(), v.data(), n);
  if (offset != 0.0f)
    for (float& x : v) x += offset;
  return copies_.floats.emplace_back(std::move(v));
}

std::span<const float> WeightBuilder::keep(std::vector<float> values) {
  return copies_.floats.emplace_back(std::move(values));
}

// A copy of `w` in `dtype`, row by row through f32.
backends::WeightMatrix WeightBuilder::convert(const backends::WeightMatrix& w,
                                              kernels::DType dtype) {
  const size_t row_bytes = kernels::row_bytes(dtype, w.cols);
  std::vector<std::byte>& bytes = copies_.bytes.emplace_back(w.rows * row_bytes);
  std::vector<float> row(w.cols);
  for (size_t r = 0; r < w.rows; ++r) {
    dequantize_matrix_row(w, r, row);
    kernels::quantize_row(dtype, row.data(), bytes.data() + r * row_bytes, w.cols);
  }
  return {dtype, bytes.data(), w.rows, w.cols, row_bytes};
}

}  // namespace oxi::formats
