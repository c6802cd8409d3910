// The compute interface model code calls: matrix products against stored (often quantized)
// weights, attention over a KV cache, and a parallel loop for everything else. Model code holds
// a Backend& and never touches threads; the CPU backend (cpu/cpu_backend.h) is the only one.
//
// Determinism: every backend gives results that do not depend on its thread count. Work is cut
// into pieces whose boundaries depend only on the problem shape, each output element is
// computed by exactly one piece, and each piece sums in a fixed order.
//
// One Backend serves one caller at a time: calls from several threads at once must use one
// backend each (the backend keeps scratch buffers between calls).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "kernels/formats/dtype.h"

namespace oxi::backends {

// A weight matrix as stored in a model file: `rows` output rows (N) of `cols` inputs (K),
// each row `row_bytes` bytes of `dtype` blocks. Not owned: it usually points into a mapped file.
struct WeightMatrix {
  kernels::DType dtype = kernels::DType::F32;
  const void* data = nullptr;
  size_t rows = 0;       // N: outputs
  size_t cols = 0;       // K: inputs
  size_t row_bytes = 0;  // bytes from one row to the next (kernels::row_bytes(dtype, cols) or more)
};

// "q4_0 [2048 x 5632]": the weight type and rows x columns, for messages and reports.
inline std::string shape_text(const WeightMatrix& w) {
  return std::string(kernels::name(w.dtype)) + " [" + std::to_string(w.rows) + " x " +
         std::to_string(w.cols) + "]";
}

// Attention of `n_queries` new tokens over `n_kv` cached positions (the new ones included),
// float32 (the cache may be f16 instead). Grouped-query: query head h reads KV head
// h / (n_heads / n_kv_heads).
//   q:   n_queries rows, row t at q[t * q_stride], holding n_heads * head_dim floats
//   k,v: n_kv positions; kv head g's row of position p (head_dim floats) at
//        k[p * kv_stride + g * kv_head_stride]: a position's heads side by side
//        (kv_head_stride = head_dim, the default 0) or each head's rows together (kv_stride =
//        head_dim, kv_head_stride >= n_kv * head_dim); or, when k_f16 / v_f16 are set (k / v
//        empty), the same as IEEE half bits (head_dim <= kernels::kMaxF16HeadDim)
//   out: n_queries rows, row t at out[t * out_stride], n_heads * head_dim floats
// Causal: query t sits at position first_query_pos + t and sees keys 0..that position (and,
// when window > 0, only the last `window` of them).
struct AttentionArgs {
  std::span<const float> q;
  std::span<const float> k;
  std::span<const float> v;
  std::span<const uint16_t> k_f16;
  std::span<const uint16_t> v_f16;
  std::span<float> out;
  size_t q_stride = 0;
  size_t kv_stride = 0;
  size_t kv_head_stride = 0;  // 0: head_dim
  size_t out_stride = 0;
  size_t n_queries = 0;
  size_t n_kv = 0;
  size_t n_heads = 0;
  size_t n_kv_heads = 0;
  size_t head_dim = 0;
  size_t first_query_pos = 0;
  bool causal = true;
  size_t window = 0;   // sliding window in positions; 0 = none
  float scale = 0.0f;  // 0: 1 / sqrt(head_dim)
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;
  virtual int threads() const = 0;

  // y[i][n] = sum_k x[i][k] * W[n][k] (+ bias[n]) for i < m, n < w.rows; x is m x w.cols and y
  // is m x w.rows, both row-major and dense. Throws oxi::Error on mismatched sizes.
  virtual void matmul(const WeightMatrix& w, std::span<const float> x, size_t m, std::span<float> y,
                      const float* bias = nullptr) = 0;

  // One product of matmul_shared_input: y = x W^T (+ bias), as matmul's.
  struct SharedInputProduct {
    const WeightMatrix* w = nullptr;
    std::span<float> y;
    const float* bias = nullptr;
  };
  // Several matmuls of the same x (every w.cols equal), such as the q, k and v projections:
  // results equal to calling matmul for each. The default does exactly that; the CPU backend
  // prepares x once per weight layout and, for one token, runs all the products' rows as one
  // parallel region (a decode step has half as many regions and quantizations that way).
  virtual void matmul_shared_input(std::span<const float> x, size_t m,
                                   std::span<const SharedInputProduct> products) {
    for (const SharedInputProduct& p : products) matmul(*p.w, x, m, p.y, p.bias);
  }

  // Throws oxi::Error on inconsistent shapes or spans too short for them.
  virtual void attention(const AttentionArgs& args) = 0;

  // Gives back the scratch memory kept between calls (it is allocated again as calls need it):
  // for a caller about to idle, such as a live stream between passes.
  virtual void release_scratch() {}

  // Calls fn(begin, end) over [0, n) in pieces of `grain` (the last one shorter), possibly in
  // parallel. Pieces start at multiples of grain whatever the thread count, so per-piece
  // reductions stay deterministic. Returns when all are done; an exception in fn is rethrown.
  virtual void parallel_for(size_t n, size_t grain,
                            const std::function<void(size_t begin, size_t end)>& fn) = 0;
};

}  // namespace oxi::backends
