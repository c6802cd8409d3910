// Element-wise helpers the models' forward passes use between backend calls: residual adds and
// optional biases (a checkpoint without a bias tensor gives an empty span).
#pragma once

#include <cstddef>
#include <span>

namespace oxi {

// The bias pointer for Backend::matmul: nullptr when the checkpoint has no bias.
inline const float* optional_bias(std::span<const float> bias) {
  return bias.empty() ? nullptr : bias.data();
}

// x += y, element by element (the residual connection).
inline void add_in_place(std::span<float> x, std::span<const float> y) {
  for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

}  // namespace oxi
