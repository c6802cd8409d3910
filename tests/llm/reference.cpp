#include "tests/llm/reference.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace oxi::llm::test {

double round_to_f16(double x) {
  if (x == 0.0) return x;
  const int exponent = std::max(std::ilogb(x), -14);  // x in [2^e, 2^(e+1))
  const double quantum = std::ldexp(1.0, exponent - 10);
  return std::nearbyint(x / quantum) * quantum;
}

ReferenceModel::Vec ReferenceModel::get(const std::string& name) const {
  const auto& v = m_.values(name);
  return Vec(v.begin(), v.end());
}

ReferenceModel::Vec ReferenceModel::norm_weight(const std::string& name) const {
  Vec w = get(name);
  if (s_.gemma)
    for (double& x : w) x += 1.0;
  return w;
}

ReferenceModel::Vec ReferenceModel::rms_norm(const Vec& x, const Vec& w) const {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double inv = 1.0 / std::sqrt(ss / x.size() + s_.rms_eps);
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * w[i];
  return y;
}

ReferenceModel::Vec ReferenceModel::linear(const std::string& name, const Vec& x, size_t row0,
                                           size_t rows) const {
  const auto& w = m_.values(name);
  const size_t cols = x.size();
  Vec y(rows);
  for (size_t r = 0; r < rows; ++r) {
    double acc = 0;
    for (size_t k = 0; k < cols; ++k) acc += static_cast<double>(w[(row0 + r) * cols + k]) * x[k];
    y[r] = acc;
  }
  return y;
}

void ReferenceModel::rope(Vec& v, size_t n_heads, size_t layer) const {
  // Gemma 3: local layers use rope_local_base_freq, global ones rope_theta and the scaling.
  const bool local = s_.gemma && (layer + 1) % s_.sliding_window_pattern != 0;
  const double base = local ? s_.rope_base_local : s_.rope_base;
  const double factor = (!local && s_.rope_linear_factor > 0) ? s_.rope_linear_factor : 1.0;
  const size_t d = s_.head_dim, half = d / 2;
  for (size_t h = 0; h < n_heads; ++h)
    for (size_t i = 0; i < half; ++i) {
      const double inv_freq = std::pow(base, -2.0 * i / d) / factor;
      const double angle = static_cast<double>(n_past_) * inv_freq;
      double& a = v[h * d + i];
      double& b = v[h * d + i + half];  // rotate_half pairs i with i + d/2
      const double a0 = a, b0 = b;
      a = a0 * std::cos(angle) - b0 * std::sin(angle);
      b = b0 * std::cos(angle) + a0 * std::sin(angle);
    }
}

ReferenceModel::Vec ReferenceModel::attention(const Vec& q, size_t layer) const {
  const size_t d = s_.head_dim, group = s_.n_head / s_.n_head_kv;
  const bool global = s_.gemma && (layer + 1) % s_.sliding_window_pattern == 0;
  const size_t window = global ? 0 : s_.sliding_window;
  const double scale = s_.gemma ? 1.0 / std::sqrt(s_.query_pre_attn_scalar) : 1.0 / std::sqrt(d);
  const size_t pos = n_past_;
  const size_t first = window > 0 && pos + 1 > window ? pos + 1 - window : 0;
  Vec out(s_.n_head * d, 0.0);
  for (size_t h = 0; h < static_cast<size_t>(s_.n_head); ++h) {
    const size_t g = h / group;
    Vec scores;
    for (size_t p = first; p <= pos; ++p) {
      double dot = 0;
      for (size_t i = 0; i < d; ++i) dot += q[h * d + i] * keys_[layer][p][g * d + i];
      scores.push_back(dot * scale);
    }
    const double mx = *std::max_element(scores.begin(), scores.end());
    double sum = 0;
    for (double& sc : scores) sum += (sc = std::exp(sc - mx));
    for (size_t p = first; p <= pos; ++p)
      for (size_t i = 0; i < d; ++i)
        out[h * d + i] += scores[p - first] / sum * values_[layer][p][g * d + i];
  }
  return out;
}

ReferenceModel::Vec ReferenceModel::layer(const Vec& x_in, size_t il) {
  const std::string p = "model.layers." + std::to_string(il) + ".";
  const size_t d = s_.head_dim, q_dim = s_.n_head * d, kv_dim = s_.n_head_kv * d;
  Vec x = x_in;
  Vec h = rms_norm(x, norm_weight(p + "input_layernorm.weight"));
  Vec q, k, v;
  if (s_.fused) {
    q = linear(p + "self_attn.qkv_proj.weight", h, 0, q_dim);
    k = linear(p + "self_attn.qkv_proj.weight", h, q_dim, kv_dim);
    v = linear(p + "self_attn.qkv_proj.weight", h, q_dim + kv_dim, kv_dim);
  } else {
    q = linear(p + "self_attn.q_proj.weight", h, 0, q_dim);
    k = linear(p + "self_attn.k_proj.weight", h, 0, kv_dim);
    v = linear(p + "self_attn.v_proj.weight", h, 0, kv_dim);
  }
  if (s_.qkv_bias) {
    const Vec bq = get(p + "self_attn.q_proj.bias"), bk = get(p + "self_attn.k_proj.bias"),
              bv = get(p + "self_attn.v_proj.bias");
    for (size_t i = 0; i < q_dim; ++i) q[i] += bq[i];
    for (size_t i = 0; i < kv_dim; ++i) k[i] += bk[i], v[i] += bv[i];
  }
  if (s_.qk_norm) {
    const Vec qn = norm_weight(p + "self_attn.q_norm.weight");
    const Vec kn = norm_weight(p + "self_attn.k_norm.weight");
    auto per_head = [&](Vec& t, size_t heads, const Vec& w) {
      for (size_t hh = 0; hh < heads; ++hh) {
        const Vec head = rms_norm(Vec(t.begin() + hh * d, t.begin() + (hh + 1) * d), w);
        std::copy(head.begin(), head.end(), t.begin() + hh * d);
      }
    };
    per_head(q, s_.n_head, qn);
    per_head(k, s_.n_head_kv, kn);
  }
  rope(q, s_.n_head, il);
  rope(k, s_.n_head_kv, il);
  if (f16_cache_) {
    for (double& e : k) e = round_to_f16(e);
    for (double& e : v) e = round_to_f16(e);
  }
  keys_[il].push_back(k);
  values_[il].push_back(v);
  Vec o = linear(p + "self_attn.o_proj.weight", attention(q, il), 0, s_.n_embd);
  if (s_.gemma) o = rms_norm(o, norm_weight(p + "post_attention_layernorm.weight"));
  for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];

  h = rms_norm(x, norm_weight(p + (s_.gemma ? "pre_feedforward_layernorm.weight"
                                            : "post_attention_layernorm.weight")));
  Vec gate, up;
  if (s_.fused) {
    gate = linear(p + "mlp.gate_up_proj.weight", h, 0, s_.n_ff);
    up = linear(p + "mlp.gate_up_proj.weight", h, s_.n_ff, s_.n_ff);
  } else {
    gate = linear(p + "mlp.gate_proj.weight", h, 0, s_.n_ff);
    up = linear(p + "mlp.up_proj.weight", h, 0, s_.n_ff);
  }
  for (size_t i = 0; i < gate.size(); ++i) {
    const double g = gate[i];
    const double act =
        s_.gemma ? 0.5 * g * (1 + std::tanh(std::sqrt(2 / M_PI) * (g + 0.044715 * g * g * g)))
                 : g / (1 + std::exp(-g));
    gate[i] = act * up[i];
  }
  Vec down = linear(p + "mlp.down_proj.weight", gate, 0, s_.n_embd);
  if (s_.gemma) down = rms_norm(down, norm_weight(p + "post_feedforward_layernorm.weight"));
  for (size_t i = 0; i < x.size(); ++i) x[i] += down[i];
  return x;
}

std::vector<double> ReferenceModel::step(int32_t token) {
  const auto& embd = m_.values("model.embed_tokens.weight");
  Vec x(embd.begin() + static_cast<size_t>(token) * s_.n_embd,
        embd.begin() + static_cast<size_t>(token + 1) * s_.n_embd);
  if (s_.gemma)
    for (double& v : x) v *= std::sqrt(static_cast<double>(s_.n_embd));
  for (size_t il = 0; il < static_cast<size_t>(s_.n_layer); ++il) x = layer(x, il);
  x = rms_norm(x, norm_weight("model.norm.weight"));
  hidden_ = x;
  ++n_past_;
  return linear(s_.tied ? "model.embed_tokens.weight" : "lm_head.weight", x, 0, s_.n_vocab);
}

}  // namespace oxi::llm::test
