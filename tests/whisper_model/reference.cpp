#include "tests/whisper_model/reference.h"

#include <cmath>
#include <string>

namespace oxi::whisper::test {
namespace {

using Matrix = std::vector<double>;  // row-major (rows, cols)

double gelu(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

// y = x W^T + b: x (n, in), W (out, in).
Matrix linear(const TinyWhisper& m, const std::string& name, const Matrix& x, size_t n, bool bias) {
  const TinyTensor& w = m.tensors.at(name + ".weight");
  const size_t out = w.shape[0], in = w.shape[1];
  Matrix y(n * out);
  for (size_t t = 0; t < n; ++t)
    for (size_t o = 0; o < out; ++o) {
      double s = bias ? m.at(name + ".bias")[o] : 0.0;
      for (size_t i = 0; i < in; ++i) s += x[t * in + i] * w.values[o * in + i];
      y[t * out + o] = s;
    }
  return y;
}

Matrix layer_norm(const TinyWhisper& m, const std::string& name, const Matrix& x, size_t n) {
  const std::vector<float>& g = m.at(name + ".weight");
  const std::vector<float>& b = m.at(name + ".bias");
  const size_t d = g.size();
  Matrix y(x.size());
  for (size_t t = 0; t < n; ++t) {
    double mean = 0, var = 0;
    for (size_t i = 0; i < d; ++i) mean += x[t * d + i];
    mean /= d;
    for (size_t i = 0; i < d; ++i) var += (x[t * d + i] - mean) * (x[t * d + i] - mean);
    var /= d;
    for (size_t i = 0; i < d; ++i)
      y[t * d + i] = (x[t * d + i] - mean) / std::sqrt(var + 1e-5) * g[i] + b[i];
  }
  return y;
}

// MultiHeadAttention: queries from x (nq rows), keys/values from kv (nk rows); query t sees
// keys 0..t when causal.
Matrix attention(const TinyWhisper& m, const std::string& p, const Matrix& x, size_t nq,
                 const Matrix& kv, size_t nk, bool causal,
                 std::vector<std::vector<double>>* last_weights) {
  const size_t d = m.dims.n_state, heads = m.dims.n_head, hd = d / heads;
  const Matrix q = linear(m, p + ".query", x, nq, true);
  const Matrix k = linear(m, p + ".key", kv, nk, false);
  const Matrix v = linear(m, p + ".value", kv, nk, true);
  Matrix out(nq * d, 0.0);
  if (last_weights) last_weights->assign(heads, {});
  for (size_t h = 0; h < heads; ++h)
    for (size_t t = 0; t < nq; ++t) {
      const size_t visible = causal ? t + 1 : nk;
      std::vector<double> w(visible);
      double mx = -INFINITY, sum = 0;
      for (size_t s = 0; s < visible; ++s) {
        double dot = 0;
        for (size_t i = 0; i < hd; ++i) dot += q[t * d + h * hd + i] * k[s * d + h * hd + i];
        w[s] = dot / std::sqrt(static_cast<double>(hd));
        mx = std::max(mx, w[s]);
      }
      for (double& e : w) sum += (e = std::exp(e - mx));
      for (double& e : w) e /= sum;
      for (size_t s = 0; s < visible; ++s)
        for (size_t i = 0; i < hd; ++i) out[t * d + h * hd + i] += w[s] * v[s * d + h * hd + i];
      if (last_weights && t + 1 == nq) (*last_weights)[h] = w;
    }
  return linear(m, p + ".out", out, nq, true);
}

void add(Matrix& x, const Matrix& y) {
  for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

Matrix mlp(const TinyWhisper& m, const std::string& p, const Matrix& x, size_t n) {
  Matrix h = linear(m, p + "mlp.0", layer_norm(m, p + "mlp_ln", x, n), n, true);
  for (double& e : h) e = gelu(e);
  return linear(m, p + "mlp.2", h, n, true);
}

// Conv1d, kernel 3, padding 1: x (c_in, len) -> (c_out, out_len), then GELU.
Matrix conv_gelu(const TinyWhisper& m, const std::string& name, const Matrix& x, size_t c_in,
                 size_t len, size_t stride) {
  const std::vector<float>& w = m.at(name + ".weight");
  const std::vector<float>& b = m.at(name + ".bias");
  const size_t c_out = b.size(), out_len = (len - 1) / stride + 1;
  Matrix y(c_out * out_len);
  for (size_t o = 0; o < c_out; ++o)
    for (size_t t = 0; t < out_len; ++t) {
      double s = b[o];
      for (size_t c = 0; c < c_in; ++c)
        for (size_t k = 0; k < 3; ++k) {
          const long pos = static_cast<long>(t * stride + k) - 1;
          if (pos >= 0 && pos < static_cast<long>(len))
            s += w[(o * c_in + c) * 3 + k] * x[c * len + pos];
        }
      y[o * out_len + t] = gelu(s);
    }
  return y;
}

}  // namespace

std::vector<double> reference_encoder(const TinyWhisper& m, const std::vector<float>& mel,
                                      int n_frames) {
  const TinyDims& d = m.dims;
  const size_t s = d.n_state;
  const Matrix x0(mel.begin(), mel.end());
  const Matrix c1 = conv_gelu(m, "encoder.conv1", x0, d.n_mels, n_frames, 1);
  const Matrix c2 = conv_gelu(m, "encoder.conv2", c1, s, n_frames, 2);
  const size_t n = (n_frames - 1) / 2 + 1;
  const std::vector<float>& pos = m.at("encoder.positional_embedding");
  Matrix x(n * s);
  for (size_t t = 0; t < n; ++t)
    for (size_t c = 0; c < s; ++c) x[t * s + c] = c2[c * n + t] + pos[t * s + c];
  for (int l = 0; l < d.n_audio_layer; ++l) {
    const std::string p = "encoder.blocks." + std::to_string(l) + ".";
    const Matrix h = layer_norm(m, p + "attn_ln", x, n);
    add(x, attention(m, p + "attn", h, n, h, n, false, nullptr));
    add(x, mlp(m, p, x, n));
  }
  return layer_norm(m, "encoder.ln_post", x, n);
}

std::vector<double> reference_logits(const TinyWhisper& m, const std::vector<double>& audio,
                                     const std::vector<int32_t>& tokens,
                                     std::vector<std::vector<std::vector<double>>>* cross) {
  const TinyDims& d = m.dims;
  const size_t s = d.n_state, n = tokens.size(), n_audio = audio.size() / s;
  const std::vector<float>& emb = m.at("decoder.token_embedding.weight");
  const std::vector<float>& pos = m.at("decoder.positional_embedding");
  Matrix x(n * s);
  for (size_t t = 0; t < n; ++t)
    for (size_t c = 0; c < s; ++c) x[t * s + c] = emb[tokens[t] * s + c] + pos[t * s + c];
  if (cross) cross->assign(d.n_text_layer, {});
  for (int l = 0; l < d.n_text_layer; ++l) {
    const std::string p = "decoder.blocks." + std::to_string(l) + ".";
    Matrix h = layer_norm(m, p + "attn_ln", x, n);
    add(x, attention(m, p + "attn", h, n, h, n, true, nullptr));
    h = layer_norm(m, p + "cross_attn_ln", x, n);
    add(x, attention(m, p + "cross_attn", h, n, audio, n_audio, false,
                     cross ? &(*cross)[l] : nullptr));
    add(x, mlp(m, p, x, n));
  }
  const Matrix last(x.end() - static_cast<long>(s), x.end());
  const Matrix h = layer_norm(m, "decoder.ln", last, 1);
  std::vector<double> logits(d.n_vocab);
  for (int v = 0; v < d.n_vocab; ++v) {
    double sum = 0;
    for (size_t c = 0; c < s; ++c) sum += h[c] * emb[v * s + c];
    logits[v] = sum;
  }
  return logits;
}

}  // namespace oxi::whisper::test
