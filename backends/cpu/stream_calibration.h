// StreamCalibration: whether this machine streams one-token products of one weight layout
// faster with the kernels' line requests or with the page starts alone (kernels::stream_lines,
// prefetch.h), measured on the products themselves; the CPU backend has one per layout
// (kernels::StreamLayout: on one VM q4_0_r16 streamed faster on page starts while q4_K_r8 did
// with its lines, in the same minutes). Every weight matrix a decode step multiplies comes back
// once a token, so each is timed in both modes on alternate encounters (kRoundsPerMode each), and
// the two modes' total seconds over the same matrices decide: the same bytes read in both, in
// alternating tokens of the same second. Whole tokens in one mode: with every other matrix of
// a token in the other mode (so that each token's memory speed weighed on both alike), the two
// differed by 1-10 % where whole tokens differed by 4-18 % (TinyLlama-shaped Q4_0, six runs
// each; decode at 89-93 % of the read limit with lines against 83-85 % without), one of six
// picking the slower. Until decided the kernels run as the mode of each encounter says.
//
// Pure bookkeeping (the caller times and applies): CpuBackend::matvec_path and
// matmul_shared_input use it for their one-token quantized products.
#pragma once

#include <cstddef>
#include <optional>
#include <unordered_map>

namespace oxi::backends {

class StreamCalibration {
 public:
  static constexpr int kRoundsPerMode = 6;

  // The mode the product over `weights` runs in now (true: lines), or nullopt once decided.
  std::optional<bool> mode_for(const void* weights);
  // Its seconds in that mode. Decides when a matrix that has had all its rounds comes again.
  void record(const void* weights, bool lines, double seconds);

  bool decided() const { return decision_.has_value(); }
  // The faster mode (true: lines), once decided.
  std::optional<bool> decision() const { return decision_; }

 private:
  struct Matrix {
    int runs[2] = {0, 0};  // [0]: page starts alone, [1]: lines
    double seconds[2] = {0, 0};
    int encounters() const { return runs[0] + runs[1]; }
  };
  void decide();

  std::unordered_map<const void*, Matrix> matrices_;
  std::optional<bool> decision_;
};

}  // namespace oxi::backends
