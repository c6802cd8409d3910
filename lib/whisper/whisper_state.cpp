#include "lib/whisper/whisper_state.h"

#include <algorithm>

#include "kernels/formats/fp16.h"
#include "kernels/formats/quant.h"
#include "lib/core/error.h"
#include "lib/core/span_math.h"

namespace oxi::whisper {
WhisperState::WhisperState(std::shared_ptr<const WhisperModel> model, backends::Backend& backend)
    : model_(std::move(model)), backend_(backend) {
  const WhisperConfig& c = model_->config();
  for (auto* layers : {&self_k_, &self_v_, &cross_k_, &cross_v_}) layers->resize(c.n_text_layer);
  for (auto* layers : {&self_k16_, &self_v16_, &cross_k16_, &cross_v16_})
    layers->resize(c.n_text_layer);
}

void WhisperState::set_kv_cache(kernels::DType type) {
  if (type != kernels::DType::F32 && type != kernels::DType::F16)
    throw Error("WhisperState::set_kv_cache",
                "the KV cache is f32 or f16, not " + std::string(kernels::name(type)));
  if (kv_f16_ == (type == kernels::DType::F16)) return;
  kv_f16_ = type == kernels::DType::F16;
  // Everything cached so far is of the other type: drop it (decode() needs a new encode()).
  drop_caches();
}

void WhisperState::drop_caches() {
  for (auto* layers : {&self_k_, &self_v_, &cross_k_, &cross_v_})
    for (auto& layer : *layers) std::vector<float>().swap(layer);
  for (auto* layers : {&self_k16_, &self_v16_, &cross_k16_, &cross_v16_})
    for (auto& layer : *layers) std::vector<uint16_t>().swap(layer);
  self_kv_rows_ = 0;
  n_audio_positions_ = 0;
}

void WhisperState::release_working_memory() {
  drop_caches();
  for (auto* buffer :
       {&encoder_output_, &dec_x_, &dec_h_, &dec_q_, &dec_attn_, &dec_mlp_, &logits_, &kv_rows_})
    std::vector<float>().swap(*buffer);
  std::vector<std::vector<float>>().swap(alignment_);
  if (encoder_) encoder_->release_working_memory();
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

// Each decoder layer's cross-attention keys (no bias) and values of the encoder output. An f16
// cache is filled a block of positions at a time, so the f32 products never take the whole
// window's memory.
void WhisperState::compute_cross_kv() {
  const WhisperConfig& c = config();
  const size_t n = n_audio_positions_, d = c.n_text_state;
  for (size_t il = 0; il < static_cast<size_t>(c.n_text_layer); ++il) {
    const AttentionWeights& cross = model_->weights().decoder_blocks[il].cross_attn;
    if (!kv_f16_) {
      cross_k_[il].resize(n * d);
      cross_v_[il].resize(n * d);
      backend_.matmul(cross.key, encoder_output_, n, cross_k_[il]);
      backend_.matmul(cross.value, encoder_output_, n, cross_v_[il],
                      optional_bias(cross.value_bias));
      continue;
    }
    constexpr size_t kBlock = 128;
    cross_k16_[il].resize(n * d);
    cross_v16_[il].resize(n * d);
    kv_rows_.resize(std::min(n, kBlock) * d);
    for (size_t p0 = 0; p0 < n; p0 += kBlock) {
      const size_t rows = std::min(kBlock, n - p0);
      const auto audio = std::span<const float>(encoder_output_).subspan(p0 * d, rows * d);
      const auto out = std::span(kv_rows_).first(rows * d);
      backend_.matmul(cross.key, audio, rows, out);
      kernels::quantize_row(kernels::DType::F16, out.data(), cross_k16_[il].data() + p0 * d,
                            rows * d);
      backend_.matmul(cross.value, audio, rows, out, optional_bias(cross.value_bias));
      kernels::quantize_row(kernels::DType::F16, out.data(), cross_v16_[il].data() + p0 * d,
                            rows * d);
    }
  }
}

float WhisperState::cross_key(size_t il, size_t i) const {
  return kv_f16_ ? kernels::f16_to_f32(cross_k16_[il][i]) : cross_k_[il][i];
}

// The self-attention cache grows with the positions decoded, doubling up to n_text_ctx: a live
// stream's passes decode a few dozen tokens, and a cache sized for the whole text context
// (448 positions) was most of what each further stream cost in resident memory.
void WhisperState::reserve_self_kv(size_t positions) {
  const WhisperConfig& c = config();
  const size_t d = c.n_text_state, have = self_kv_rows_;
  if (positions <= have) return;
  const size_t grown = std::min<size_t>(std::max({positions, 2 * have, size_t{32}}),
                                        static_cast<size_t>(c.n_text_ctx));
  for (size_t il = 0; il < self_k_.size(); ++il) {
    if (kv_f16_) {
      self_k16_[il].resize(grown * d);
      self_v16_[il].resize(grown * d);
    } else {
      self_k_[il].resize(grown * d);
      self_v_[il].resize(grown * d);
    }
  }
  self_kv_rows_ = grown;
}

}  // namespace oxi::whisper
