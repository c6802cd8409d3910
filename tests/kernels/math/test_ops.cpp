// Row ops, activations, RoPE, attention and convolution against naive double references.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "kernels/math/conv.h"
#include "kernels/math/math_kernels.h"
#include "kernels/math/rope.h"
#include "tests/common/test_data.h"
#include "tests/kernels/math/math_test_util.h"

namespace oxi::kernels {
namespace {

using test_util::available_isas;

const std::vector<size_t> kLengths = {1, 3, 7, 8, 16, 17, 31, 100, 257, 1000};

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double rel,
                  double abs, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], abs + rel * std::abs(want[i])) << what << " at " << i;
  }
}

TEST(Norms, RmsNormEveryIsa) {
  for (Isa isa : available_isas()) {
    for (size_t n : kLengths) {
      const auto x = test::random_floats(n, 1, -3, 3), w = test::random_floats(n, 2);
      double ss = 0;
      for (float v : x) ss += double(v) * v;
      const double r = 1.0 / std::sqrt(ss / n + 1e-5);
      std::vector<double> want(n), want_unit(n);
      for (size_t i = 0; i < n; ++i) want[i] = x[i] * r * w[i], want_unit[i] = x[i] * r;
      std::vector<float> y(n);
      math_kernels(isa).rms_norm(x, w, 1e-5f, y);
      expect_close(y, want, 2e-5, 1e-6, "rms " + test_util::isa_label(isa));
      y = x;  // in place, no weight
      math_kernels(isa).rms_norm(y, {}, 1e-5f, y);
      expect_close(y, want_unit, 2e-5, 1e-6, "rms in place " + test_util::isa_label(isa));
    }
  }
}

TEST(Norms, LayerNormEveryIsa) {
  for (Isa isa : available_isas()) {
    for (size_t n : kLengths) {
      // An offset mean checks the variance does not cancel catastrophically.
      auto x = test::random_floats(n, 3, -1, 1);
      for (float& v : x) v += 50.0f;
      const auto w = test::random_floats(n, 4), b = test::random_floats(n, 5);
      double mean = 0, var = 0;
      for (float v : x) mean += v;
      mean /= n;
      for (float v : x) var += (v - mean) * (v - mean);
      var /= n;
      std::vector<double> want(n);
      for (size_t i = 0; i < n; ++i) want[i] = (x[i] - mean) / std::sqrt(var + 1e-5) * w[i] + b[i];
      std::vector<float> y(n);
      math_kernels(isa).layer_norm(x, w, b, 1e-5f, y);
      // x carries ~50 * 2^-24 absolute rounding, which normalisation magnifies by 1/stddev.
      expect_close(y, want, 1e-4, n == 1 ? 1e-2 : 2e-4, "layer " + test_util::isa_label(isa));
    }
  }
}

TEST(Norms, GroupNormEveryIsa) {
  for (Isa isa : available_isas()) {
    const size_t channels = 12, groups = 4;
    for (size_t hw : {1, 5, 64, 99}) {
      const auto x = test::random_floats(channels * hw, 6, -2, 2);
      const auto w = test::random_floats(channels, 7), b = test::random_floats(channels, 8);
      std::vector<double> want(x.size());
      const size_t per = channels / groups;
      for (size_t g = 0; g < groups; ++g) {
        double mean = 0, var = 0;
        const size_t count = per * hw, off = g * count;
        for (size_t i = 0; i < count; ++i) mean += x[off + i];
        mean /= count;
        for (size_t i = 0; i < count; ++i) var += (x[off + i] - mean) * (x[off + i] - mean);
        var /= count;
        for (size_t i = 0; i < count; ++i) {
          const size_t c = (off + i) / hw;
          want[off + i] = (x[off + i] - mean) / std::sqrt(var + 1e-6) * w[c] + b[c];
        }
      }
      std::vector<float> y(x.size());
      math_kernels(isa).group_norm(x, channels, groups, w, b, 1e-6f, y);
      expect_close(y, want, 2e-5, 2e-5, "group " + test_util::isa_label(isa));
    }
  }
}

TEST(Softmax, StableAndNormalisedEveryIsa) {
  for (Isa isa : available_isas()) {
    for (size_t n : kLengths) {
      auto x = test::random_floats(n, 9, -20, 20);
      x[n / 2] = 1000.0f;  // would overflow exp() without the max shift
      double mx = -INFINITY, total = 0;
      for (float v : x) mx = std::max<double>(mx, v);
      std::vector<double> want(n);
      for (size_t i = 0; i < n; ++i) total += want[i] = std::exp(x[i] - mx);
      for (double& v : want) v /= total;
      math_kernels(isa).softmax(x);
      expect_close(x, want, 1e-5, 1e-7, "softmax " + test_util::isa_label(isa));
    }
  }
}

double ref_gelu_erf(double x) {
  return 0.5 * x * (1 + std::erf(x / std::numbers::sqrt2));
}
double ref_gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}
double ref_silu(double x) {
  return x / (1 + std::exp(-x));
}

TEST(Activations, MatchDoubleFormulasEveryIsa) {
  for (Isa isa : available_isas()) {
    const MathKernels& mk = math_kernels(isa);
    const std::string label = test_util::isa_label(isa);
    for (size_t n : kLengths) {
      const auto x = test::random_floats(n, 10, -9, 9), up = test::random_floats(n, 11, -2, 2);
      std::vector<double> w_erf(n), w_tanh(n), w_silu(n), w_swiglu(n), w_geglu(n);
      for (size_t i = 0; i < n; ++i) {
        w_erf[i] = ref_gelu_erf(x[i]);
        w_tanh[i] = ref_gelu_tanh(x[i]);
        w_silu[i] = ref_silu(x[i]);
        w_swiglu[i] = ref_silu(x[i]) * up[i];
        w_geglu[i] = ref_gelu_tanh(x[i]) * up[i];
      }
      std::vector<float> y(n);
      mk.gelu(x, y, GeluForm::erf);
      expect_close(y, w_erf, 1e-5, 1e-6, "gelu erf " + label);
      mk.gelu(x, y, GeluForm::tanh);
      expect_close(y, w_tanh, 1e-5, 1e-6, "gelu tanh " + label);
      mk.silu(x, y);
      expect_close(y, w_silu, 1e-5, 1e-6, "silu " + label);
      mk.swiglu(x, up, y);
      expect_close(y, w_swiglu, 1e-5, 1e-6, "swiglu " + label);
      y = x;  // in place on the gate
      mk.geglu(y, up, y, GeluForm::tanh);
      expect_close(y, w_geglu, 1e-5, 1e-6, "geglu " + label);
    }
  }
}

// The read probe is a plain sum (wrapping at 2^64) on every instruction set, whatever the
// length's remainder against the vector width and the four accumulators.
TEST(ReadSum, SumsEveryWordEveryIsa) {
  std::mt19937_64 rng(9);
  std::vector<uint64_t> words(4099);
  for (uint64_t& w : words) w = rng();
  for (Isa isa : available_isas()) {
    for (size_t n :
         {size_t{0}, size_t{1}, size_t{3}, size_t{15}, size_t{17}, size_t{1000}, size_t{4099}}) {
      uint64_t want = 0;
      for (size_t i = 0; i < n; ++i) want += words[i];
      EXPECT_EQ(math_kernels(isa).read_sum(std::span(words).first(n)), want)
          << kernels::isa_name(isa) << " n " << n;
    }
  }
}

TEST(Rope, FrequenciesAndScaling) {
  const auto plain = rope_inv_freq(8, 10000.0f);
  ASSERT_EQ(plain.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(plain[i], std::pow(10000.0, -2.0 * i / 8));

  RopeScaling linear{.kind = RopeScaling::Kind::linear, .factor = 4.0f};
  const auto lin = rope_inv_freq(8, 10000.0f, linear);
  for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(lin[i], plain[i] / 4);

  const std::vector<float> factors = {1.0f, 2.0f, 3.0f, 4.0f};
  const auto ff = rope_inv_freq(8, 10000.0f, {}, factors);
  for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(ff[i], plain[i] / factors[i]);

  // Llama 3.1: factor 8, low 1, high 4, 8192 original positions, head_dim 128, base 500000.
  RopeScaling l3{.kind = RopeScaling::Kind::llama3,
                 .factor = 8,
                 .low_freq_factor = 1,
                 .high_freq_factor = 4,
                 .original_max_position = 8192};
  const auto base = rope_inv_freq(128, 500000.0f);
  const auto scaled = rope_inv_freq(128, 500000.0f, l3);
  size_t kept = 0, divided = 0, blended = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    const double wavelen = 2 * std::numbers::pi / base[i];
    if (wavelen < 8192.0 / 4) {
      EXPECT_FLOAT_EQ(scaled[i], base[i]) << i;
      ++kept;
    } else if (wavelen > 8192.0) {
      EXPECT_FLOAT_EQ(scaled[i], base[i] / 8) << i;
      ++divided;
    } else {
      const double smooth = (8192.0 / wavelen - 1) / (4 - 1);
      EXPECT_NEAR(scaled[i], (1 - smooth) * base[i] / 8 + smooth * base[i], 1e-6 * base[i]) << i;
      ++blended;
    }
  }
  EXPECT_GT(kept, 0u);
  EXPECT_GT(divided, 0u);
  EXPECT_GT(blended, 0u);
}

TEST(Rope, RotatesBothLayoutsWithPartialDims) {
  const size_t n_tokens = 3, n_heads = 2, head_dim = 10, stride = n_heads * head_dim + 4;
  for (size_t rot_dims : {10, 6}) {
    for (RopeLayout layout : {RopeLayout::adjacent, RopeLayout::neox}) {
      const auto inv = rope_inv_freq(rot_dims, 10000.0f);
      const auto x0 = test::random_floats(n_tokens * stride, 12);
      const std::vector<int32_t> positions = {0, 7, 70000};
      auto x = x0;
      rope(x, n_tokens, stride, n_heads, head_dim, inv, layout, positions, 0.5f);
      auto x_consecutive = x0;
      rope(x_consecutive, n_tokens, stride, n_heads, head_dim, inv, layout, int64_t{40});
      for (size_t t = 0; t < n_tokens; ++t) {
        for (size_t h = 0; h < n_heads; ++h) {
          const float* in = x0.data() + t * stride + h * head_dim;
          const float* out = x.data() + t * stride + h * head_dim;
          const float* out_c = x_consecutive.data() + t * stride + h * head_dim;
          std::vector<double> want(in, in + head_dim), want_c(in, in + head_dim);
          for (size_t i = 0; i < rot_dims / 2; ++i) {
            // Independent of the kernel: the pair partner by layout, angle from the formula.
            const size_t a = layout == RopeLayout::adjacent ? 2 * i : i;
            const size_t b = layout == RopeLayout::adjacent ? 2 * i + 1 : i + rot_dims / 2;
            const double f = std::pow(10000.0, -2.0 * i / rot_dims);
            const double th = positions[t] * double(inv[i]), th_c = (40.0 + t) * double(inv[i]);
            ASSERT_NEAR(inv[i], f, 1e-6 * f);
            want[a] = 0.5 * (in[a] * std::cos(th) - in[b] * std::sin(th));
            want[b] = 0.5 * (in[a] * std::sin(th) + in[b] * std::cos(th));
            want_c[a] = in[a] * std::cos(th_c) - in[b] * std::sin(th_c);
            want_c[b] = in[a] * std::sin(th_c) + in[b] * std::cos(th_c);
          }
          for (size_t d = 0; d < head_dim; ++d) {
            ASSERT_NEAR(out[d], want[d], 1e-6) << t << "," << h << "," << d;
            ASSERT_NEAR(out_c[d], want_c[d], 1e-6) << t << "," << h << "," << d;
          }
        }
        // Padding between tokens is untouched.
        for (size_t d = n_heads * head_dim; d < stride; ++d) {
          ASSERT_EQ(x[t * stride + d], x0[t * stride + d]);
        }
      }
    }
  }
}

// A table computed once for a batch turns q and k exactly as rope() does on its own, for the
// table's first tokens too (a layer may rotate fewer rows than the table holds).
TEST(Rope, TableMatchesDirectRotationBitForBit) {
  const size_t n_tokens = 5, n_heads = 3, head_dim = 12, stride = n_heads * head_dim + 2;
  for (size_t rot_dims : {12, 8}) {
    for (RopeLayout layout : {RopeLayout::adjacent, RopeLayout::neox}) {
      const auto inv = rope_inv_freq(rot_dims, 500000.0f);
      RopeTable table;
      rope_table(inv, 123456, n_tokens, 0.75f, table);
      ASSERT_EQ(table.pairs, rot_dims / 2);
      for (size_t used : {n_tokens, size_t{2}}) {
        const auto x0 = test::random_floats(n_tokens * stride, 31);
        auto direct = x0, by_table = x0;
        rope(direct, used, stride, n_heads, head_dim, inv, layout, int64_t{123456}, 0.75f);
        rope(by_table, used, stride, n_heads, head_dim, table, layout);
        for (size_t i = 0; i < x0.size(); ++i) ASSERT_EQ(by_table[i], direct[i]) << i;
        // Something turned, and only within the tokens asked for.
        EXPECT_NE(by_table[0], x0[0]);
        for (size_t i = used * stride; i < x0.size(); ++i) ASSERT_EQ(by_table[i], x0[i]);
      }
    }
  }
}

struct AttnCase {
  size_t n_q, n_heads, n_kv_heads, head_dim, kv_len, q_pos0;
  bool causal;
  size_t window;
};

void check_attention(const MathKernels& mk, const AttnCase& c) {
  SCOPED_TRACE(testing::Message() << isa_name(mk.isa) << " n_q=" << c.n_q << " heads=" << c.n_heads
                                  << "/" << c.n_kv_heads << " hd=" << c.head_dim
                                  << " kv=" << c.kv_len << " pos0=" << c.q_pos0
                                  << " causal=" << c.causal << " window=" << c.window);
  const size_t q_stride = c.n_heads * c.head_dim + 3, kv_stride = c.n_kv_heads * c.head_dim + 1;
  const size_t out_stride = c.n_heads * c.head_dim;
  const auto q = test::random_floats(c.n_q * q_stride, 20, -2, 2);
  const auto k = test::random_floats(c.kv_len * kv_stride, 21, -2, 2);
  const auto v = test::random_floats(c.kv_len * kv_stride, 22);
  std::vector<float> out(c.n_q * out_stride, NAN);
  AttentionParams p{.q = q.data(),
                    .q_token_stride = q_stride,
                    .k = k.data(),
                    .v = v.data(),
                    .kv_token_stride = kv_stride,
                    .out = out.data(),
                    .out_token_stride = out_stride,
                    .n_q = c.n_q,
                    .n_heads = c.n_heads,
                    .n_kv_heads = c.n_kv_heads,
                    .head_dim = c.head_dim,
                    .kv_len = c.kv_len,
                    .q_pos0 = c.q_pos0,
                    .causal = c.causal,
                    .window = c.window,
                    .scale = 1.0f / std::sqrt(float(c.head_dim))};
  // Two calls over a split of the heads and queries, as a backend would issue them.
  mk.attention(p, 0, c.n_heads / 2, 0, c.n_q);
  mk.attention(p, c.n_heads / 2, c.n_heads, 0, c.n_q / 2);
  mk.attention(p, c.n_heads / 2, c.n_heads, c.n_q / 2, c.n_q);

  for (size_t t = 0; t < c.n_q; ++t) {
    const long pos = long(c.q_pos0 + t);
    for (size_t h = 0; h < c.n_heads; ++h) {
      const size_t g = h / (c.n_heads / c.n_kv_heads);
      std::vector<double> s(c.kv_len, -INFINITY);
      double mx = -INFINITY;
      for (size_t j = 0; j < c.kv_len; ++j) {
        if (c.causal && long(j) > pos) continue;
        if (c.window && long(j) <= pos - long(c.window)) continue;
        double d = 0;
        for (size_t e = 0; e < c.head_dim; ++e) {
          d += double(q[t * q_stride + h * c.head_dim + e]) * k[j * kv_stride + g * c.head_dim + e];
        }
        s[j] = d / std::sqrt(double(c.head_dim));
        mx = std::max(mx, s[j]);
      }
      double total = 0;
      std::vector<double> want(c.head_dim, 0.0);
      for (size_t j = 0; j < c.kv_len; ++j) {
        if (s[j] == -INFINITY) continue;
        const double pj = std::exp(s[j] - mx);
        total += pj;
        for (size_t e = 0; e < c.head_dim; ++e)
          want[e] += pj * v[j * kv_stride + g * c.head_dim + e];
      }
      for (size_t e = 0; e < c.head_dim; ++e) {
        const double w = total > 0 ? want[e] / total : 0.0;
        ASSERT_NEAR(out[t * out_stride + h * c.head_dim + e], w, 2e-5) << t << "," << h << "," << e;
      }
    }
  }
}

TEST(Attention, OnlineSoftmaxMatchesNaiveEveryIsa) {
  const std::vector<AttnCase> cases = {
      {1, 1, 1, 1, 1, 0, true, 0},
      {1, 4, 4, 64, 200, 199, true, 0},   // one decode step, several chunks
      {1, 4, 2, 96, 80, 79, true, 0},     // Phi-3's 96 dims: a block of 8 vectors and one of 4
      {2, 3, 3, 56, 40, 38, true, 0},     // 7 vectors of 8 lanes
      {5, 8, 2, 19, 150, 145, true, 0},   // GQA, odd head_dim, prefill tail
      {7, 4, 1, 32, 130, 123, true, 37},  // sliding window
      {6, 2, 2, 17, 70, 0, false, 0},     // bidirectional (encoder)
      {4, 2, 1, 8, 10, 20, true, 0},      // cache shorter than the positions
      {3, 2, 2, 8, 3, 0, true, 0},        // prefill of the first tokens
  };
  for (Isa isa : available_isas()) {
    for (const AttnCase& c : cases) check_attention(math_kernels(isa), c);
  }
}

TEST(Conv, Conv1dAndConv2dMatchNaiveEveryIsa) {
  const std::vector<Conv2dShape> shapes = {
      // Whisper's first conv (scaled down): kernel 3, padding 1; its second: stride 2.
      Conv1dShape{.c_in = 5, .length = 37, .c_out = 7, .kernel = 3, .padding = 1}.as_2d(),
      Conv1dShape{.c_in = 7, .length = 37, .c_out = 6, .kernel = 3, .stride = 2, .padding = 1}
          .as_2d(),
      Conv1dShape{.c_in = 3,
                  .length = 600,
                  .c_out = 4,
                  .kernel = 5,
                  .stride = 1,
                  .padding = 4,
                  .dilation = 2}
          .as_2d(),
      {.c_in = 3,
       .height = 9,
       .width = 11,
       .c_out = 5,
       .kernel_h = 3,
       .kernel_w = 2,
       .stride_h = 2,
       .stride_w = 1,
       .pad_h = 1,
       .pad_w = 0},
      {.c_in = 2,
       .height = 30,
       .width = 31,
       .c_out = 3,
       .kernel_h = 4,
       .kernel_w = 4,
       .stride_h = 1,
       .stride_w = 1,
       .pad_h = 2,
       .pad_w = 2},  // > kGemmNc output positions
  };
  for (Isa isa : available_isas()) {
    for (const Conv2dShape& s : shapes) {
      SCOPED_TRACE(testing::Message()
                   << isa_name(isa) << " c_in=" << s.c_in << " h=" << s.height << " w=" << s.width
                   << " k=" << s.kernel_h << "x" << s.kernel_w);
      const auto x = test::random_floats(s.c_in * s.height * s.width, 30);
      const auto w = test::random_floats(s.c_out * s.c_in * s.kernel_h * s.kernel_w, 31);
      const auto b = test::random_floats(s.c_out, 32);
      const size_t oh = s.out_h(), ow = s.out_w();
      std::vector<float> y(s.c_out * oh * ow), scratch(conv2d_scratch_floats(s));
      conv2d(x, w, b, s, y, scratch, isa);
      for (size_t co = 0; co < s.c_out; ++co) {
        for (size_t oy = 0; oy < oh; ++oy) {
          for (size_t ox = 0; ox < ow; ++ox) {
            double want = b[co];
            for (size_t ci = 0; ci < s.c_in; ++ci) {
              for (size_t ky = 0; ky < s.kernel_h; ++ky) {
                for (size_t kx = 0; kx < s.kernel_w; ++kx) {
                  const long iy = long(oy * s.stride_h + ky * s.dilation_h) - long(s.pad_h);
                  const long ix = long(ox * s.stride_w + kx * s.dilation_w) - long(s.pad_w);
                  if (iy < 0 || ix < 0 || iy >= long(s.height) || ix >= long(s.width)) continue;
                  want += double(x[(ci * s.height + iy) * s.width + ix]) *
                          w[((co * s.c_in + ci) * s.kernel_h + ky) * s.kernel_w + kx];
                }
              }
            }
            ASSERT_NEAR(y[(co * oh + oy) * ow + ox], want, 1e-5) << co << "," << oy << "," << ox;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace oxi::kernels
