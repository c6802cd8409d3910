#include "tools/oxinfer/bench/timed_backend.h"

#include "tools/oxinfer/bench/stopwatch.h"

namespace oxi::bench {

void TimedBackend::matmul(const backends::WeightMatrix& w, std::span<const float> x, size_t m,
                          std::span<float> y, const float* bias) {
  const Stopwatch watch(seconds_.products);
  inner_.matmul(w, x, m, y, bias);
}

void TimedBackend::matmul_shared_input(std::span<const float> x, size_t m,
                                       std::span<const SharedInputProduct> products) {
  const Stopwatch watch(seconds_.products);
  inner_.matmul_shared_input(x, m, products);
}

void TimedBackend::attention(const backends::AttentionArgs& args) {
  const Stopwatch watch(seconds_.attention);
  inner_.attention(args);
}

}  // namespace oxi::bench
