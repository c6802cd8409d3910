#include "tools/oxinfer/bench/timed_backend.h"

namespace oxi::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Adds the seconds from construction to destruction to `total` (also when the call throws).
class Stopwatch {
 public:
  explicit Stopwatch(double& total) : total_(total), start_(Clock::now()) {}
  ~Stopwatch() { total_ += std::chrono::duration<double>(Clock::now() - start_).count(); }
  Stopwatch(const Stopwatch&) = delete;
  Stopwatch& operator=(const Stopwatch&) = delete;

 private:
  double& total_;
  Clock::time_point start_;
};

}  // namespace

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
