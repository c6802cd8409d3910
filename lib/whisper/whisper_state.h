// WhisperState: one audio stream's working memory for a shared WhisperModel — the encoder
// output of the current window, the decoder's cross-attention keys/values (computed once per
// encode()), and the decoder's self-attention KV cache. The encoder's own working memory is a
// WhisperEncoder: the state's private one, or an EncoderBatcher shared with other streams.
//
//   state.encode(mel.data, mel.n_frames);            // a window of n_mels x n_frames features
//   logits = state.decode(prompt, 0);                 // <|startoftranscript|><|en|>... at 0..
//   logits = state.decode({{next}}, prompt.size());   // then one token at a time
//
// The decoder's caches are f32 by default (logits as the reference computes them); f16 halves
// what each stream holds (as whisper.cpp keeps them), for many concurrent streams.
//
// Not thread-safe: one state per stream (and one Backend per thread, see backend.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "kernels/formats/dtype.h"
#include "lib/whisper/encoder_batcher.h"
#include "lib/whisper/whisper_encoder.h"
#include "lib/whisper/whisper_model.h"

namespace oxi::whisper {

class WhisperState {
 public:
  WhisperState(std::shared_ptr<const WhisperModel> model, backends::Backend& backend);

  const WhisperModel& model() const { return *model_; }
  const WhisperConfig& config() const { return model_->config(); }

  // Runs the encoder on `mel` (n_mels x n_frames, row-major) and prepares the cross-attention
  // keys and values. n_frames <= config().n_frames; a shorter window (short audio, or a model
  // trained on shorter chunks) uses the first ceil(n_frames / 2) encoder positions. Throws
  // oxi::Error on a size mismatch.
  void encode(std::span<const float> mel, size_t n_frames);
  // Encode through `encoder` (shared with other streams of the same model, which batches
  // concurrent passes) instead of a private WhisperEncoder. Throws oxi::Error when it serves
  // another model.
  void share_encoder(std::shared_ptr<const EncoderBatcher> encoder);
  // The element type of the cross-attention keys/values and the self-attention cache: F32
  // (default) or F16. Takes effect at the next encode(); anything else throws oxi::Error.
  void set_kv_cache(kernels::DType type);
  kernels::DType kv_cache() const { return kv_f16_ ? kernels::DType::F16 : kernels::DType::F32; }
  // Gives back everything a pass allocates (encoder output, caches, decoder buffers, the private
  // encoder's working memory): the state then holds nothing until the next encode(), which
  // decode() needs first again. For streams that idle between passes (live mode).
  void release_working_memory();
  // (n_audio_positions(), n_audio_state) of the last encode(); empty before.
  std::span<const float> encoder_output() const { return encoder_output_; }
  size_t n_audio_positions() const { return n_audio_positions_; }

  // Runs `tokens` at positions n_past .. n_past + size - 1 over the cache (positions >= n_past
  // of earlier calls are overwritten, so rewinding is just a smaller n_past). Returns the logits
  // (n_vocab) of the last token, or of all tokens ((size, n_vocab)) when all_logits. The span
  // stays valid until the next call. Throws oxi::Error before any encode(), past n_text_ctx,
  // or for ids outside the vocabulary.
  std::span<const float> decode(std::span<const int32_t> tokens, size_t n_past,
                                bool all_logits = false);

  // Keep the cross-attention weights of config().alignment_heads (word timestamps).
  void set_record_alignment(bool record) { record_alignment_ = record; }
  // When recording: entry p holds the weights of the token decoded at position p, flattened as
  // [alignment head, in config().alignment_heads order][audio position < n_audio_positions()],
  // each head's row a softmax (sums to 1). Shrinks to n_past + size on every decode().
  const std::vector<std::vector<float>>& alignment_weights() const { return alignment_; }

 private:
  void compute_cross_kv();
  // Frees both cache types' keys and values; decode() then needs a new encode().
  void drop_caches();
  // Grows self_k_ / self_v_ to hold at least `positions` rows (<= n_text_ctx).
  void reserve_self_kv(size_t positions);
  // whisper_decoder.cpp
  void decoder_block(size_t il, size_t n, size_t n_past);
  void record_cross_weights(size_t il, size_t n, size_t n_past);
  // Element i of layer il's cross-attention keys, whatever the cache type.
  float cross_key(size_t il, size_t i) const;

  std::shared_ptr<const WhisperModel> model_;
  backends::Backend& backend_;

  // Encoder: a private one (made at the first encode()) unless one is shared.
  std::unique_ptr<WhisperEncoder> encoder_;
  std::shared_ptr<const EncoderBatcher> shared_encoder_;
  std::vector<float> encoder_output_;  // (n_audio_positions_, state), after ln_post
  size_t n_audio_positions_ = 0;

  // Decoder. Per layer, the caches of the type in use (the other type's vectors stay empty).
  bool kv_f16_ = false;
  size_t self_kv_rows_ = 0;                            // positions the self-attention cache holds
  std::vector<std::vector<float>> cross_k_, cross_v_;  // (n_audio_positions_, state)
  std::vector<std::vector<float>> self_k_, self_v_;    // (self_kv_rows_, state)
  std::vector<std::vector<uint16_t>> cross_k16_, cross_v16_, self_k16_, self_v16_;
  std::vector<float> dec_x_, dec_h_, dec_q_, dec_attn_, dec_mlp_, logits_;  // per decode() size
  std::vector<float> kv_rows_;  // f16 caches: new keys / values in f32 before they are rounded

  bool record_alignment_ = false;
  std::vector<std::vector<float>> alignment_;
};

}  // namespace oxi::whisper
