#include "lib/whisper/whisper_state.h"

#include "kernels/math/norm.h"

namespace oxi::whisper {

namespace {
constexpr float kLayerNormEps = 1e-5f;  // nn.LayerNorm's default, in openai-whisper and HF
}

WhisperState::WhisperState(std::shared_ptr<const WhisperModel> model, backends::Backend& backend)
    : model_(std::move(model)), backend_(backend) {
  const WhisperConfig& c = model_->config();
  const size_t text_rows = static_cast<size_t>(c.n_text_ctx) * c.n_text_state;
  self_k_.assign(c.n_text_layer, std::vector<float>(text_rows));
  self_v_.assign(c.n_text_layer, std::vector<float>(text_rows));
  cross_k_.resize(c.n_text_layer);
  cross_v_.resize(c.n_text_layer);
}

void WhisperState::layer_norm_rows(std::span<const float> x, size_t rows, size_t width,
                                   std::span<const float> weight, std::span<const float> bias,
                                   std::span<float> y) {
  backend_.parallel_for(rows, 16, [&](size_t begin, size_t end) {
    for (size_t r = begin; r < end; ++r)
      kernels::layer_norm(x.subspan(r * width, width), weight, bias, kLayerNormEps,
                          y.subspan(r * width, width));
  });
}

}  // namespace oxi::whisper
