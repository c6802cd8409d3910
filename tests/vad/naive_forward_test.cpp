// SileroVad against a naive double-precision forward pass written here from the architecture
// description (../shared/README.md, data/vad), on random weights: covers the STFT, encoder,
// LSTM and decoder math, and the state carried between windows, without the shared data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "lib/vad/silero_vad.h"
#include "lib/vad/vad_stream.h"
#include "tests/common/test_data.h"
#include "tests/vad/random_model.h"

namespace oxi::vad {
namespace {

using Tensors = std::map<std::string, test::VadTensor>;
using Vec = std::vector<double>;

// x: [c_in][length] -> [c_out][out], zero padding, PyTorch's cross-correlation.
Vec conv1d(const Vec& x, size_t c_in, size_t length, const test::VadTensor& weight,
           const test::VadTensor* bias, size_t stride, size_t padding, size_t* out_length) {
  const auto c_out = static_cast<size_t>(weight.shape[0]);
  const auto kernel = static_cast<size_t>(weight.shape[2]);
  const size_t out = (length + 2 * padding - kernel) / stride + 1;
  Vec y(c_out * out);
  for (size_t o = 0; o < c_out; ++o)
    for (size_t t = 0; t < out; ++t) {
      double acc = bias ? bias->values[o] : 0.0;
      for (size_t i = 0; i < c_in; ++i)
        for (size_t k = 0; k < kernel; ++k) {
          const auto pos = static_cast<long>(t * stride + k) - static_cast<long>(padding);
          if (pos < 0 || pos >= static_cast<long>(length)) continue;
          acc += static_cast<double>(weight.values[(o * c_in + i) * kernel + k]) *
                 x[i * length + static_cast<size_t>(pos)];
        }
      y[o * out + t] = acc;
    }
  *out_length = out;
  return y;
}

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

class NaiveSilero {
 public:
  explicit NaiveSilero(const Tensors& t) : t_(t), context_(64, 0.0), h_(128, 0.0), c_(128, 0.0) {}

  double step(const std::vector<float>& window) {
    // 64 context samples + 512 new ones, then reflect-pad 64 on the right.
    Vec x(context_);
    for (float v : window) x.push_back(v);
    for (size_t k = 0; k < 64; ++k) x.push_back(x[x.size() - 2 - 2 * k]);
    context_.assign(x.begin() + 512, x.begin() + 576);

    size_t frames = 0;
    const Vec spec = conv1d(x, 1, x.size(), t_.at("stft_conv.weight"), nullptr, 128, 0, &frames);
    Vec mag(129 * frames);
    for (size_t i = 0; i < 129 * frames; ++i) mag[i] = std::hypot(spec[i], spec[129 * frames + i]);

    Vec a = mag;
    size_t channels = 129, length = frames;
    const std::pair<const char*, size_t> layers[] = {
        {"conv1", 1}, {"conv2", 2}, {"conv3", 2}, {"conv4", 1}};
    for (const auto& [name, stride] : layers) {
      const std::string n(name);
      size_t out = 0;
      a = conv1d(a, channels, length, t_.at(n + ".weight"), &t_.at(n + ".bias"), stride, 1, &out);
      for (double& v : a) v = std::max(v, 0.0);
      channels = static_cast<size_t>(t_.at(n + ".weight").shape[0]);
      length = out;
    }
    EXPECT_EQ(length, 1u);

    // LSTM cell, gates i, f, g, o.
    const auto& wih = t_.at("lstm_cell.weight_ih").values;
    const auto& whh = t_.at("lstm_cell.weight_hh").values;
    const auto& bih = t_.at("lstm_cell.bias_ih").values;
    const auto& bhh = t_.at("lstm_cell.bias_hh").values;
    Vec gates(512);
    for (size_t r = 0; r < 512; ++r) {
      double acc = static_cast<double>(bih[r]) + bhh[r];
      for (size_t k = 0; k < 128; ++k) acc += wih[r * 128 + k] * a[k] + whh[r * 128 + k] * h_[k];
      gates[r] = acc;
    }
    for (size_t j = 0; j < 128; ++j) {
      const double i = sigmoid(gates[j]), f = sigmoid(gates[128 + j]);
      const double g = std::tanh(gates[256 + j]), o = sigmoid(gates[384 + j]);
      c_[j] = f * c_[j] + i * g;
      h_[j] = o * std::tanh(c_[j]);
    }
    double logit = t_.at("final_conv.bias").values[0];
    for (size_t j = 0; j < 128; ++j)
      logit += t_.at("final_conv.weight").values[j] * std::max(h_[j], 0.0);
    return sigmoid(logit);
  }

 private:
  const Tensors& t_;
  Vec context_, h_, c_;
};

class SileroNaive : public ::testing::Test {
 protected:
  void SetUp() override {
    tensors_ = test::random_vad_tensors(7);
    test::write_vad_model(tensors_, dir_ / "vad.safetensors");
    model_ = SileroVadModel::load(dir_ / "vad.safetensors");
    // A tone with noise, loud enough that the basis outputs are far from zero.
    audio_ = test::random_floats(5 * kWindow + 200, 11, -0.3f, 0.3f);
    for (size_t i = 0; i < audio_.size(); ++i)
      audio_[i] += 0.5f * static_cast<float>(std::sin(0.05 * static_cast<double>(i)));
  }

  test::TempDir dir_;
  Tensors tensors_;
  std::shared_ptr<const SileroVadModel> model_;
  std::vector<float> audio_;
};

TEST_F(SileroNaive, WindowsMatchTheDoubleReference) {
  NaiveSilero naive(tensors_);
  SileroVad vad(model_);
  double spread_min = 1.0, spread_max = 0.0;
  for (size_t w = 0; w < 5; ++w) {
    const std::vector<float> window(audio_.begin() + static_cast<long>(w * kWindow),
                                    audio_.begin() + static_cast<long>((w + 1) * kWindow));
    const double expected = naive.step(window);
    const float got = vad.process(std::span<const float, kWindow>(window.data(), kWindow));
    EXPECT_NEAR(got, expected, 1e-5 + 1e-4 * expected) << "window " << w;
    spread_min = std::min(spread_min, expected);
    spread_max = std::max(spread_max, expected);
  }
  // The probabilities must not all be pinned at 0 or 1, or the comparison proves little.
  EXPECT_GT(spread_min, 1e-3);
  EXPECT_LT(spread_max, 1 - 1e-3);
}

TEST_F(SileroNaive, StateMattersAndResetRestoresIt) {
  SileroVad vad(model_);
  const std::span<const float, kWindow> first(audio_.data(), kWindow);
  const std::span<const float, kWindow> second(audio_.data() + kWindow, kWindow);
  const float a = vad.process(first);
  const float b = vad.process(second);
  vad.reset();
  EXPECT_EQ(vad.process(first), a);
  // The second window without the first one before it gives another answer: state carries.
  vad.reset();
  EXPECT_NE(vad.process(second), b);
}

TEST_F(SileroNaive, FlushZeroPadsThePartialWindow) {
  NaiveSilero naive(tensors_);
  VadStream stream(model_);
  std::vector<float> probs = stream.push(audio_);
  ASSERT_EQ(probs.size(), 5u);
  const auto last = stream.flush();
  ASSERT_TRUE(last.has_value());
  for (size_t w = 0; w < 5; ++w)
    naive.step({audio_.begin() + static_cast<long>(w * kWindow),
                audio_.begin() + static_cast<long>((w + 1) * kWindow)});
  std::vector<float> tail(audio_.begin() + 5 * kWindow, audio_.end());
  tail.resize(kWindow, 0.0f);
  const double expected = naive.step(tail);
  EXPECT_NEAR(*last, expected, 1e-5 + 1e-4 * expected);
  EXPECT_FALSE(stream.flush().has_value());  // flush reset the stream
}

}  // namespace
}  // namespace oxi::vad
