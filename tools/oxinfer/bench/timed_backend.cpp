#include "tools/oxinfer/bench/timed_backend.h"

#include "tools/oxinfer/bench/stopwatch.h"

namespace oxi::bench {
namespace {

double bytes_of(const backends::WeightMatrix& w) {
  return static_cast<double>(w.rows) * static_cast<double>(w.row_bytes);
}

}  // namespace

TimedBackend::ProductKind& TimedBackend::kind(const std::string& name) {
  const auto [it, added] = kind_index_.try_emplace(name, kinds_.size());
  if (added) kinds_.push_back({name});
  return kinds_[it->second];
}

void TimedBackend::matmul(const backends::WeightMatrix& w, std::span<const float> x, size_t m,
                          std::span<float> y, const float* bias) {
  ProductKind& k = kind(backends::shape_text(w));  // named before the clock starts
  double seconds = 0;
  {
    const Stopwatch watch(seconds);
    inner_.matmul(w, x, m, y, bias);
  }
  seconds_.products += seconds;
  k.seconds += seconds;
  k.weight_bytes += bytes_of(w);
  ++k.calls;
}

void TimedBackend::matmul_shared_input(std::span<const float> x, size_t m,
                                       std::span<const SharedInputProduct> products) {
  std::string name;
  double bytes = 0;
  for (const SharedInputProduct& p : products) {
    name += (name.empty() ? "" : " + ") + backends::shape_text(*p.w);
    bytes += bytes_of(*p.w);
  }
  ProductKind& k = kind(name);
  double seconds = 0;
  {
    const Stopwatch watch(seconds);
    inner_.matmul_shared_input(x, m, products);
  }
  seconds_.products += seconds;
  k.seconds += seconds;
  k.weight_bytes += bytes;
  ++k.calls;
}

void TimedBackend::attention(const backends::AttentionArgs& args) {
  const Stopwatch watch(seconds_.attention);
  inner_.attention(args);
}

}  // namespace oxi::bench
