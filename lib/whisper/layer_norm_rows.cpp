#include "lib/whisper/layer_norm_rows.h"

#include "kernels/math/norm.h"

namespace oxi::whisper {

namespace {
constexpr float kLayerNormEps = 1e-5f;
}

void layer_norm_rows(backends::Backend& backend, std::span<const float> x, size_t rows,
                     size_t width, std::span<const float> weight, std::span<const float> bias,
                     std::span<float> y) {
  backend.parallel_for(rows, 16, [&](size_t begin, size_t end) {
    for (size_t r = begin; r < end; ++r)
      kernels::layer_norm(x.subspan(r * width, width), weight, bias, kLayerNormEps,
                          y.subspan(r * width, width));
  });
}

}  // namespace oxi::whisper
