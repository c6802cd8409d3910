// Whisper's text decoder (openai-whisper model.py TextDecoder) over a KV cache:
//
//   x = token_embedding[tokens] + positional_embedding[n_past ..]
//   x = x + SelfAttention(LN(x))          causal, keys/values appended to the cache
//   x = x + CrossAttention(LN(x), audio)  keys/values of the encoder output, made in encode()
//   x = x + fc2(GELU(fc1(LN(x))))
//   logits = LN(x) token_embedding^T      (the output projection is the tied embedding)
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/formats/quant.h"
#include "kernels/math/activation.h"
#include "lib/core/error.h"
#include "lib/core/span_math.h"
#include "lib/whisper/layer_norm_rows.h"
#include "lib/whisper/whisper_state.h"

namespace oxi::whisper {
std::span<const float> WhisperState::decode(std::span<const int32_t> tokens, size_t n_past,
                                            bool all_logits) {
  const WhisperConfig& c = config();
  const WhisperWeights& w = model_->weights();
  const size_t n = tokens.size(), d = c.n_text_state;
  if (n_audio_positions_ == 0) throw Error("whisper decode", "decode() before encode()");
  if (n == 0 || n_past + n > static_cast<size_t>(c.n_text_ctx))
    throw Error("whisper decode", std::to_string(n) + " tokens at position " +
                                      std::to_string(n_past) + " do not fit the text context of " +
                                      std::to_string(c.n_text_ctx));
  for (int32_t t : tokens)
    if (t < 0 || t >= c.n_vocab)
      throw Error("whisper decode", "token id " + std::to_string(t) +
                                        " outside the vocabulary of " + std::to_string(c.n_vocab));

  reserve_self_kv(n_past + n);
  for (auto* v : {&dec_x_, &dec_h_, &dec_q_, &dec_attn_}) v->resize(n * d);
  dec_mlp_.resize(n * c.n_text_mlp);
  if (record_alignment_) alignment_.resize(n_past + n);

  // 1. x = token_embedding[tokens] + positional_embedding[n_past + t]
  for (size_t t = 0; t < n; ++t) {
    const std::span<float> row = std::span(dec_x_).subspan(t * d, d);
    dequantize_matrix_row(w.token_embedding, static_cast<size_t>(tokens[t]), row);
    const float* pos = w.decoder_positions.data() + (n_past + t) * d;
    for (size_t i = 0; i < d; ++i) row[i] += pos[i];
  }
  // 2. the blocks
  for (size_t il = 0; il < static_cast<size_t>(c.n_text_layer); ++il) decoder_block(il, n, n_past);
  // 3. logits = LN(x) token_embedding^T, for the last token or all of them
  const size_t first = all_logits ? 0 : n - 1, rows = n - first;
  layer_norm_rows(backend_, std::span(dec_x_).subspan(first * d, rows * d), rows, d, w.ln_weight,
                  w.ln_bias, dec_h_);
  logits_.resize(rows * static_cast<size_t>(c.n_vocab));
  backend_.matmul(w.token_embedding, std::span(dec_h_).first(rows * d), rows, logits_);
  return logits_;
}

void WhisperState::decoder_block(size_t il, size_t n, size_t n_past) {
  const WhisperConfig& c = config();
  const BlockWeights& b = model_->weights().decoder_blocks[il];
  const size_t d = c.n_text_state, n_audio = n_audio_positions_;
  const std::span<float> x(dec_x_), h(dec_h_), q(dec_q_), attn(dec_attn_), f(dec_mlp_);
  // New keys and values go straight into their rows of an f32 cache; an f16 cache gets them
  // rounded from kv_rows_.
  if (kv_f16_) kv_rows_.resize(2 * n * d);
  const std::span<float> k = kv_f16_ ? std::span(kv_rows_).first(n * d)
                                     : std::span(self_k_[il]).subspan(n_past * d, n * d);
  const std::span<float> v = kv_f16_ ? std::span(kv_rows_).subspan(n * d, n * d)
                                     : std::span(self_v_[il]).subspan(n_past * d, n * d);

  backends::AttentionArgs a;
  a.q = q;
  a.out = attn;
  a.q_stride = a.kv_stride = a.out_stride = d;
  a.n_queries = n;
  a.n_heads = a.n_kv_heads = c.n_text_head;
  a.head_dim = c.text_head_dim();

  // 1. x = x + SelfAttention(LN(x)): causal over cache rows 0 .. n_past + n
  layer_norm_rows(backend_, x, n, d, b.attn_ln_weight, b.attn_ln_bias, h);
  backend_.matmul(b.attn.query, h, n, q, optional_bias(b.attn.query_bias));
  backend_.matmul(b.attn.key, h, n, k);
  backend_.matmul(b.attn.value, h, n, v, optional_bias(b.attn.value_bias));
  if (kv_f16_) {
    kernels::quantize_row(kernels::DType::F16, k.data(), self_k16_[il].data() + n_past * d, n * d);
    kernels::quantize_row(kernels::DType::F16, v.data(), self_v16_[il].data() + n_past * d, n * d);
    a.k_f16 = std::span<const uint16_t>(self_k16_[il]).first((n_past + n) * d);
    a.v_f16 = std::span<const uint16_t>(self_v16_[il]).first((n_past + n) * d);
  } else {
    a.k = std::span<const float>(self_k_[il]).first((n_past + n) * d);
    a.v = std::span<const float>(self_v_[il]).first((n_past + n) * d);
  }
  a.n_kv = n_past + n;
  a.first_query_pos = n_past;
  a.causal = true;
  backend_.attention(a);
  backend_.matmul(b.attn.out, attn, n, h, optional_bias(b.attn.out_bias));
  add_in_place(x, h);

  // 2. x = x + CrossAttention(LN(x)) over the encoder output's keys and values
  layer_norm_rows(backend_, x, n, d, b.cross_attn_ln_weight, b.cross_attn_ln_bias, h);
  backend_.matmul(b.cross_attn.query, h, n, q, optional_bias(b.cross_attn.query_bias));
  a.k = cross_k_[il];
  a.v = cross_v_[il];
  a.k_f16 = cross_k16_[il];
  a.v_f16 = cross_v16_[il];
  a.n_kv = n_audio;
  a.first_query_pos = 0;
  a.causal = false;
  backend_.attention(a);
  if (record_alignment_) record_cross_weights(il, n, n_past);
  backend_.matmul(b.cross_attn.out, attn, n, h, optional_bias(b.cross_attn.out_bias));
  add_in_place(x, h);

  // 3. x = x + fc2(GELU(fc1(LN(x))))
  layer_norm_rows(backend_, x, n, d, b.mlp_ln_weight, b.mlp_ln_bias, h);
  backend_.matmul(b.fc1, h, n, f, optional_bias(b.fc1_bias));
  kernels::gelu(f, f, kernels::GeluForm::erf);
  backend_.matmul(b.fc2, f, n, h, optional_bias(b.fc2_bias));
  add_in_place(x, h);
}

// softmax(q k^T / sqrt(head_dim)) of this layer's alignment heads, recomputed from the queries
// in dec_q_ (the backend's attention does not return its weights).
void WhisperState::record_cross_weights(size_t il, size_t n, size_t n_past) {
  const WhisperConfig& c = config();
  const size_t d = c.n_text_state, hd = c.text_head_dim(), n_audio = n_audio_positions_;
  const size_t n_heads = c.alignment_heads.size();
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  for (size_t t = 0; t < n; ++t) {
    std::vector<float>& out = alignment_[n_past + t];
    out.resize(n_heads * n_audio);
    for (size_t ah = 0; ah < n_heads; ++ah) {
      const auto [layer, head] = c.alignment_heads[ah];
      if (static_cast<size_t>(layer) != il) continue;
      const float* q = dec_q_.data() + t * d + static_cast<size_t>(head) * hd;
      float* row = out.data() + ah * n_audio;
      double max_score = -INFINITY;
      std::vector<double> scores(n_audio);
      for (size_t p = 0; p < n_audio; ++p) {
        const size_t k = p * d + static_cast<size_t>(head) * hd;
        double s = 0.0;
        for (size_t i = 0; i < hd; ++i) s += static_cast<double>(q[i]) * cross_key(il, k + i);
        scores[p] = s * scale;
        max_score = std::max(max_score, scores[p]);
      }
      double sum = 0.0;
      for (double& s : scores) sum += (s = std::exp(s - max_score));
      for (size_t p = 0; p < n_audio; ++p) row[p] = static_cast<float>(scores[p] / sum);
    }
  }
}

}  // namespace oxi::whisper
