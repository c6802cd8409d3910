// LayerNorm (eps 1e-5, nn.LayerNorm's default in openai-whisper and HF) of each `width`-long
// row of x into y, rows split over the backend's threads. Shared by the encoder and decoder.
#pragma once

#include <cstddef>
#include <span>

#include "backends/backend.h"

namespace oxi::whisper {

void layer_norm_rows(backends::Backend& backend, std::span<const float> x, size_t rows,
                     size_t width, std::span<const float> weight, std::span<const float> bias,
                     std::span<float> y);

}  // namespace oxi::whisper
