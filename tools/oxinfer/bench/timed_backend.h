// A Backend that forwards every call to another one and adds up the seconds its calls take,
// by kind: the matrix products (also per product kind: the weights' types and shapes of a call)
// and attention. What a decode step spends outside them (norms, RoPE, SwiGLU, residual adds,
// the serial work between regions) is the step's time less those.
// bench llm runs one extra generation through it to say where decode's time goes; the calls it
// times take 5-1000 us each, against tens of nanoseconds for a call's two clock reads.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.h"

namespace oxi::bench {

class TimedBackend final : public backends::Backend {
 public:
  explicit TimedBackend(backends::Backend& inner) : inner_(inner) {}

  struct Seconds {
    double products = 0;   // matmul and matmul_shared_input
    double attention = 0;  // attention
  };
  const Seconds& seconds() const { return seconds_; }
  // The product calls by kind, e.g. "q4_K_r8 [2048 x 5632]" or, for one shared-input call,
  // "q4_K_r8 [2048 x 2048] + q4_K_r8 [256 x 2048] + q6_K [256 x 2048]"; in the order first seen.
  struct ProductKind {
    std::string name;
    size_t calls = 0;
    double seconds = 0;
    double weight_bytes = 0;  // rows x row_bytes of every weight matrix, every call
  };
  const std::vector<ProductKind>& product_kinds() const { return kinds_; }
  void reset() {
    seconds_ = {};
    kinds_.clear();
    kind_index_.clear();
  }

  std::string_view name() const override { return inner_.name(); }
  int threads() const override { return inner_.threads(); }
  void matmul(const backends::WeightMatrix& w, std::span<const float> x, size_t m,
              std::span<float> y, const float* bias) override;
  void matmul_shared_input(std::span<const float> x, size_t m,
                           std::span<const SharedInputProduct> products) override;
  void attention(const backends::AttentionArgs& args) override;
  void release_scratch() override { inner_.release_scratch(); }
  void parallel_for(size_t n, size_t grain,
                    const std::function<void(size_t begin, size_t end)>& fn) override {
    inner_.parallel_for(n, grain, fn);
  }

 private:
  ProductKind& kind(const std::string& name);

  backends::Backend& inner_;
  Seconds seconds_;
  std::vector<ProductKind> kinds_;
  std::map<std::string, size_t, std::less<>> kind_index_;
};

}  // namespace oxi::bench
