// Normalisations over f32 rows: RMSNorm, LayerNorm, GroupNorm.
#pragma once

#include <cstddef>
#include <span>

namespace oxi::kernels {

// y = x / sqrt(mean(x^2) + eps) * weight. An empty weight means 1. y may alias x.
void rms_norm(std::span<const float> x, std::span<const float> weight, float eps,
              std::span<float> y) noexcept;

// y = (x - mean) / sqrt(var + eps) * weight + bias (biased variance). Empty weight / bias mean
// 1 / 0. y may alias x.
void layer_norm(std::span<const float> x, std::span<const float> weight,
                std::span<const float> bias, float eps, std::span<float> y) noexcept;

// x is [channels][x.size() / channels]; the channels split into `groups` equal runs, each
// normalised over all its elements, then scaled by weight[c] and shifted by bias[c] per channel
// (empty = 1 / 0). y may alias x.
void group_norm(std::span<const float> x, size_t channels, size_t groups,
                std::span<const float> weight, std::span<const float> bias, float eps,
                std::span<float> y) noexcept;

}  // namespace oxi::kernels
