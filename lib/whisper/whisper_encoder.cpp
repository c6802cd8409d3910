// Whisper's audio encoder (openai-whisper model.py AudioEncoder), for a batch of windows:
//
//   x = GELU(conv1(mel))                 n_mels -> state, kernel 3, padding 1
//   x = GELU(conv2(x))                   kernel 3, stride 2, padding 1: n_frames -> n_frames / 2
//   x = x^T + positional_embedding       (positions, state)
//   x = x + SelfAttention(LN(x))         per block, non-causal; q, v, out have biases, k none
//   x = x + fc2(GELU(fc1(LN(x))))
//   out = LN_post(x)
//
// The rows of all windows are stacked, so every matrix product covers the whole batch;
// attention runs per window.
#include "lib/whisper/whisper_encoder.h"

#include <string>

#include "kernels/math/activation.h"
#include "kernels/math/conv.h"
#include "lib/core/error.h"
#include "lib/core/span_math.h"
#include "lib/whisper/layer_norm_rows.h"

namespace oxi::whisper {
namespace {

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

WhisperEncoder::WhisperEncoder(std::shared_ptr<const WhisperModel> model)
    : model_(std::move(model)) {
  if (!model_) throw Error("WhisperEncoder", "no model");
}

void WhisperEncoder::release_working_memory() {
  for (std::vector<float>* v : {&conv1_out_, &conv2_out_, &x_, &h_, &q_, &k_, &v_, &attn_, &mlp_})
    std::vector<float>().swap(*v);
}

void WhisperEncoder::check(const WhisperConfig& c, const Window& w) {
  if (w.n_frames == 0 || w.n_frames > static_cast<size_t>(c.n_frames))
    throw Error("whisper encode", std::to_string(w.n_frames) +
                                      " mel frames; the model takes 1 to " +
                                      std::to_string(c.n_frames));
  if (w.mel.size() != static_cast<size_t>(c.n_mels) * w.n_frames)
    throw Error("whisper encode", "mel has " + std::to_string(w.mel.size()) + " values, expected " +
                                      std::to_string(c.n_mels) + " x " +
                                      std::to_string(w.n_frames));
  if (!w.out) throw Error("whisper encode", "no output buffer");
}

// The MLP's hidden layer is 4x the width: over a whole batch (1500 positions of a base window)
// it was the encoder's largest buffer, kept by every pooled encoder. Chunks of kMlpRows, with
// a short tail merged into the chunk before it, so that every chunk takes the GEMM path.
size_t WhisperEncoder::mlp_chunk_rows(size_t rows_left) {
  return rows_left < 2 * kMlpRows ? rows_left : kMlpRows;
}

void WhisperEncoder::encode(std::span<const Window> windows, backends::Backend& backend) {
  const WhisperConfig& c = model_->config();
  for (const Window& w : windows) check(c, w);
  first_row_.assign(1, 0);
  for (const Window& w : windows) first_row_.push_back(first_row_.back() + positions(w.n_frames));
  const size_t rows = first_row_.back(), d = c.n_audio_state;
  for (auto* v : {&x_, &h_, &q_, &k_, &v_, &attn_}) v->resize(rows * d);
  mlp_.resize(std::min(rows, 2 * kMlpRows) * c.n_audio_mlp);

  for (size_t i = 0; i < windows.size(); ++i) conv_stem(windows[i], first_row_[i], backend);
  for (size_t il = 0; il < static_cast<size_t>(c.n_audio_layer); ++il) block(il, windows, backend);
  const WhisperWeights& w = model_->weights();
  for (size_t i = 0; i < windows.size(); ++i) {
    const size_t n = first_row_[i + 1] - first_row_[i];
    windows[i].out->resize(n * d);
    layer_norm_rows(backend, std::span(x_).subspan(first_row_[i] * d, n * d), n, d,
                    w.ln_post_weight, w.ln_post_bias, *windows[i].out);
  }
}

void WhisperEncoder::conv_stem(const Window& window, size_t first_row, backends::Backend& backend) {
  const WhisperConfig& c = model_->config();
  const WhisperWeights& w = model_->weights();
  const size_t d = c.n_audio_state, frames = window.n_frames, n = positions(frames);
  conv1_out_.resize(d * frames);
  conv2_out_.resize(d * n);
  // 1. x = GELU(conv1(mel)), GELU(conv2(x)): (state, positions)
  conv1d_k3(backend, window.mel, c.n_mels, frames, w.conv1_weight, w.conv1_bias, d, 1, conv1_out_);
  kernels::gelu(conv1_out_, conv1_out_, kernels::GeluForm::erf);
  conv1d_k3(backend, conv1_out_, d, frames, w.conv2_weight, w.conv2_bias, d, 2, conv2_out_);
  kernels::gelu(conv2_out_, conv2_out_, kernels::GeluForm::erf);
  // 2. x = x^T + positional_embedding[:positions], at the window's rows of the batch
  float* x = x_.data() + first_row * d;
  for (size_t t = 0; t < n; ++t)
    for (size_t ch = 0; ch < d; ++ch)
      x[t * d + ch] = conv2_out_[ch * n + t] + w.encoder_positions[t * d + ch];
}

void WhisperEncoder::block(size_t il, std::span<const Window> windows, backends::Backend& backend) {
  const WhisperConfig& c = model_->config();
  const BlockWeights& b = model_->weights().encoder_blocks[il];
  const size_t n = first_row_.back(), d = c.n_audio_state;
  const std::span<float> x(x_), h(h_), q(q_), k(k_), v(v_), attn(attn_), f(mlp_);

  // 1. h = LN(x); q, k, v = h Wq^T + bq, h Wk^T, h Wv^T + bv   (all windows at once)
  layer_norm_rows(backend, x, n, d, b.attn_ln_weight, b.attn_ln_bias, h);
  backend.matmul(b.attn.query, h, n, q, optional_bias(b.attn.query_bias));
  backend.matmul(b.attn.key, h, n, k);
  backend.matmul(b.attn.value, h, n, v, optional_bias(b.attn.value_bias));
  // 2. attn = softmax(q k^T / sqrt(head_dim)) v: every position sees every position of its
  //    own window
  for (size_t i = 0; i < windows.size(); ++i) {
    const size_t r0 = first_row_[i], rn = first_row_[i + 1] - r0;
    backends::AttentionArgs a;
    a.q = q.subspan(r0 * d, rn * d);
    a.k = k.subspan(r0 * d, rn * d);
    a.v = v.subspan(r0 * d, rn * d);
    a.out = attn.subspan(r0 * d, rn * d);
    a.q_stride = a.kv_stride = a.out_stride = d;
    a.n_queries = a.n_kv = rn;
    a.n_heads = a.n_kv_heads = c.n_audio_head;
    a.head_dim = c.audio_head_dim();
    a.causal = false;
    backend.attention(a);
  }
  // 3. x = x + attn Wo^T + bo
  backend.matmul(b.attn.out, attn, n, h, optional_bias(b.attn.out_bias));
  add_in_place(x, h);
  // 4. x = x + fc2(GELU(fc1(LN(x)))), kMlpRows positions at a time (each chunk's fc2 output
  //    replaces its own rows of h, which fc1 has read)
  layer_norm_rows(backend, x, n, d, b.mlp_ln_weight, b.mlp_ln_bias, h);
  for (size_t r0 = 0; r0 < n;) {
    const size_t rn = mlp_chunk_rows(n - r0), m = c.n_audio_mlp;
    const std::span<float> hr = h.subspan(r0 * d, rn * d), fr = f.first(rn * m);
    backend.matmul(b.fc1, hr, rn, fr, optional_bias(b.fc1_bias));
    kernels::gelu(fr, fr, kernels::GeluForm::erf);
    backend.matmul(b.fc2, fr, rn, hr, optional_bias(b.fc2_bias));
    r0 += rn;
  }
  add_in_place(x, h);
}

}  // namespace oxi::whisper
