#include "lib/whisper/whisper_state.h"

#include <algorithm>

#include "lib/core/error.h"
#include "lib/core/span_math.h"

namespace oxi::whisper {
WhisperState::WhisperState(std::shared_ptr<const WhisperModel> model, backends::Backend& backend)
    : model_(std::move(model)), backend_(backend) {
  const WhisperConfig& c = model_->config();
  self_k_.resize(c.n_text_layer);
  self_v_.resize(c.n_text_layer);
  cross_k_.resize(c.n_text_layer);
  cross_v_.resize(c.n_text_layer);
}

void WhisperState::share_encoder(std::shared_ptr<const EncoderBatcher> encoder) {
  if (encoder && &encoder->model() != model_.get())
    throw Error("WhisperState::share_encoder", "the encoder serves another model");
  shared_encoder_ = std::move(encoder);
  if (shared_encoder_) encoder_.reset();
}

void WhisperState::encode(std::span<const float> mel, size_t n_frames) {
  if (shared_encoder_) {
    shared_encoder_->encode(mel, n_frames, encoder_output_, backend_);
  } else {
    if (!encoder_) encoder_ = std::make_unique<WhisperEncoder>(model_);
    const WhisperEncoder::Window window{mel, n_frames, &encoder_output_};
    encoder_->encode(std::span(&window, 1), backend_);
  }
  n_audio_positions_ = WhisperEncoder::positions(n_frames);
  compute_cross_kv();
  alignment_.clear();
}

// Each decoder layer's cross-attention keys (no bias) and values of the encoder output.
void WhisperState::compute_cross_kv() {
  const WhisperConfig& c = config();
  const size_t n = n_audio_positions_, d = c.n_text_state;
  for (size_t il = 0; il < static_cast<size_t>(c.n_text_layer); ++il) {
    const AttentionWeights& cross = model_->weights().decoder_blocks[il].cross_attn;
    cross_k_[il].resize(n * d);
    cross_v_[il].resize(n * d);
    backend_.matmul(cross.key, encoder_output_, n, cross_k_[il]);
    backend_.matmul(cross.value, encoder_output_, n, cross_v_[il], optional_bias(cross.value_bias));
  }
}

// The self-attention cache grows with the positions decoded, doubling up to n_text_ctx: a live
// stream's passes decode a few dozen tokens, and a cache sized for the whole text context
// (448 positions) was most of what each further stream cost in resident memory.
void WhisperState::reserve_self_kv(size_t positions) {
  const WhisperConfig& c = config();
  const size_t d = c.n_text_state, have = self_k_.empty() ? 0 : self_k_[0].size() / d;
  if (positions <= have) return;
  const size_t grown = std::min<size_t>(std::max({positions, 2 * have, size_t{32}}),
                                        static_cast<size_t>(c.n_text_ctx));
  for (size_t il = 0; il < self_k_.size(); ++il) {
    self_k_[il].resize(grown * d);
    self_v_[il].resize(grown * d);
  }
}

}  // namespace oxi::whisper
