// Whisper's audio encoder (openai-whisper model.py AudioEncoder), one window at a time:
//
//   x = GELU(conv1(mel))                 n_mels -> state, kernel 3, padding 1
//   x = GELU(conv2(x))                   kernel 3, stride 2, padding 1: n_frames -> n_frames / 2
//   x = x^T + positional_embedding       (positions, state)
//   x = x + SelfAttention(LN(x))         per block, non-causal; q, v, out have biases, k none
//   x = x + fc2(GELU(fc1(LN(x))))
//   out = LN_post(x)
//
// Then each decoder layer's cross-attention keys and values are computed once for the window.
#include <algorithm>
#include <string>

#include "kernels/math/activation.h"
#include "kernels/math/conv.h"
#include "lib/core/error.h"
#include "lib/whisper/whisper_state.h"

namespace oxi::whisper {
namespace {

const float* bias_ptr(std::span<const float> b) {
  return b.empty() ? nullptr : b.data();
}

void add_in_place(std::span<float> x, std::span<const float> y) {
  for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

// A 1-D convolution (kernel 3, padding 1) split over output channels across the backend's
// threads; each piece runs the im2col + GEMM kernel on its rows of the weight.
void conv1d_k3(backends::Backend& backend, std::span<const float> x, size_t c_in, size_t length,
               std::span<const float> weight, std::span<const float> bias, size_t c_out,
               size_t stride, std::span<float> y) {
  const kernels::Conv1dShape full{
      .c_in = c_in, .length = length, .c_out = c_out, .kernel = 3, .stride = stride, .padding = 1};
  const size_t out_length = full.out_length();
  constexpr size_t kChannelsPerPiece = 32;
  backend.parallel_for(c_out, kChannelsPerPiece, [&](size_t begin, size_t end) {
    kernels::Conv1dShape piece = full;
    piece.c_out = end - begin;
    std::vector<float> scratch(kernels::conv1d_scratch_floats(piece));
    kernels::conv1d(x, weight.subspan(begin * c_in * 3, piece.c_out * c_in * 3),
                    bias.subspan(begin, piece.c_out), piece,
                    y.subspan(begin * out_length, piece.c_out * out_length), scratch);
  });
}

}  // namespace

void WhisperState::encode(std::span<const float> mel, size_t n_frames) {
  const WhisperConfig& c = config();
  if (n_frames == 0 || n_frames > static_cast<size_t>(c.n_frames))
    throw Error("whisper encode", std::to_string(n_frames) + " mel frames; the model takes 1 to " +
                                      std::to_string(c.n_frames));
  if (mel.size() != static_cast<size_t>(c.n_mels) * n_frames)
    throw Error("whisper encode", "mel has " + std::to_string(mel.size()) + " values, expected " +
                                      std::to_string(c.n_mels) + " x " + std::to_string(n_frames));
  conv_stem(mel, n_frames);
  for (size_t il = 0; il < static_cast<size_t>(c.n_audio_layer); ++il) encoder_block(il);

  const WhisperWeights& w = model_->weights();
  const size_t n = n_audio_positions_, d = c.n_audio_state;
  encoder_output_.resize(n * d);
  layer_norm_rows(std::span(enc_x_).first(n * d), n, d, w.ln_post_weight, w.ln_post_bias,
                  encoder_output_);
  compute_cross_kv();
  alignment_.clear();
}

void WhisperState::conv_stem(std::span<const float> mel, size_t n_frames) {
  const WhisperConfig& c = config();
  const WhisperWeights& w = model_->weights();
  const size_t d = c.n_audio_state, n = (n_frames - 1) / 2 + 1;  // conv2's output length
  n_audio_positions_ = n;
  conv1_out_.resize(d * n_frames);
  conv2_out_.resize(d * n);
  // 1. x = GELU(conv1(mel)), GELU(conv2(x)): (state, positions)
  conv1d_k3(backend_, mel, c.n_mels, n_frames, w.conv1_weight, w.conv1_bias, d, 1, conv1_out_);
  kernels::gelu(conv1_out_, conv1_out_, kernels::GeluForm::erf);
  conv1d_k3(backend_, conv1_out_, d, n_frames, w.conv2_weight, w.conv2_bias, d, 2, conv2_out_);
  kernels::gelu(conv2_out_, conv2_out_, kernels::GeluForm::erf);
  // 2. x = x^T + positional_embedding[:positions]
  const size_t full = static_cast<size_t>(c.n_audio_ctx);
  for (auto* v : {&enc_x_, &enc_h_, &enc_q_, &enc_k_, &enc_v_, &enc_attn_}) v->resize(full * d);
  enc_mlp_.resize(full * c.n_audio_mlp);
  for (size_t t = 0; t < n; ++t)
    for (size_t ch = 0; ch < d; ++ch)
      enc_x_[t * d + ch] = conv2_out_[ch * n + t] + w.encoder_positions[t * d + ch];
}

void WhisperState::encoder_block(size_t il) {
  const WhisperConfig& c = config();
  const BlockWeights& b = model_->weights().encoder_blocks[il];
  const size_t n = n_audio_positions_, d = c.n_audio_state, mlp = c.n_audio_mlp;
  const auto rows = [&](std::vector<float>& v, size_t width) {
    return std::span(v).first(n * width);
  };
  const std::span<float> x = rows(enc_x_, d), h = rows(enc_h_, d), q = rows(enc_q_, d),
                         k = rows(enc_k_, d), v = rows(enc_v_, d), attn = rows(enc_attn_, d),
                         f = rows(enc_mlp_, mlp);

  // 1. h = LN(x); q, k, v = h Wq^T + bq, h Wk^T, h Wv^T + bv
  layer_norm_rows(x, n, d, b.attn_ln_weight, b.attn_ln_bias, h);
  backend_.matmul(b.attn.query, h, n, q, bias_ptr(b.attn.query_bias));
  backend_.matmul(b.attn.key, h, n, k);
  backend_.matmul(b.attn.value, h, n, v, bias_ptr(b.attn.value_bias));
  // 2. attn = softmax(q k^T / sqrt(head_dim)) v, every position sees every position
  backends::AttentionArgs a;
  a.q = q;
  a.k = k;
  a.v = v;
  a.out = attn;
  a.q_stride = a.kv_stride = a.out_stride = d;
  a.n_queries = a.n_kv = n;
  a.n_heads = a.n_kv_heads = c.n_audio_head;
  a.head_dim = c.audio_head_dim();
  a.causal = false;
  backend_.attention(a);
  // 3. x = x + attn Wo^T + bo
  backend_.matmul(b.attn.out, attn, n, h, bias_ptr(b.attn.out_bias));
  add_in_place(x, h);
  // 4. x = x + fc2(GELU(fc1(LN(x))))
  layer_norm_rows(x, n, d, b.mlp_ln_weight, b.mlp_ln_bias, h);
  backend_.matmul(b.fc1, h, n, f, bias_ptr(b.fc1_bias));
  kernels::gelu(f, f, kernels::GeluForm::erf);
  backend_.matmul(b.fc2, f, n, h, bias_ptr(b.fc2_bias));
  add_in_place(x, h);
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
    backend_.matmul(cross.value, encoder_output_, n, cross_v_[il], bias_ptr(cross.value_bias));
  }
}

}  // namespace oxi::whisper
