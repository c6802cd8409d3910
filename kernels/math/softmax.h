// Numerically stable softmax: the maximum is subtracted before exponentiating.
#pragma once

#include <span>

namespace oxi::kernels {

// In place over one row. An empty row is left alone.
void softmax(std::span<float> x) noexcept;

}  // namespace oxi::kernels
