#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <tbb/info.h>

#include "backends/cpu/cpu_backend_impl.h"
#include "kernels/math/attention.h"
#include "lib/core/error.h"

namespace oxi::backends {
namespace {

// Queries per attention task: prefill splits over query blocks as well as heads, decode (one
// query) over heads alone. A fixed size keeps the split independent of the thread count.
constexpr size_t kAttentionQueryBlock = 32;

int resolve_threads(int threads) {
  if (threads < 0)
    throw Error("cpu backend", "thread count must be >= 0, got " + std::to_string(threads));
  return threads == 0 ? tbb::info::default_concurrency() : threads;
}

// Elements a strided tensor of `rows` rows needs: the last row starts at (rows-1) * stride.
size_t strided_extent(size_t rows, size_t stride, size_t row_elems) {
  return rows == 0 ? 0 : (rows - 1) * stride + row_elems;
}

}  // namespace

CpuBackend::CpuBackend(int threads) : threads_(resolve_threads(threads)), arena_(threads_) {
  arena_.initialize();
}

void CpuBackend::parallel_for(size_t n, size_t grain,
                              const std::function<void(size_t begin, size_t end)>& fn) {
  grain = std::max<size_t>(grain, 1);
  const size_t pieces = (n + grain - 1) / grain;
  run_pieces(pieces, [&](size_t piece) {
    const size_t begin = piece * grain;
    fn(begin, std::min(n, begin + grain));
  });
}

void CpuBackend::attention(const AttentionArgs& a) {
  if (a.n_queries == 0 || a.n_heads == 0) return;
  if (a.head_dim == 0 || a.n_kv_heads == 0 || a.n_heads % a.n_kv_heads != 0)
    throw Error("attention", "bad head shape: " + std::to_string(a.n_heads) + " heads, " +
                                 std::to_string(a.n_kv_heads) + " kv heads of dim " +
                                 std::to_string(a.head_dim));
  const size_t q_row = a.n_heads * a.head_dim, kv_row = a.n_kv_heads * a.head_dim;
  if (a.q_stride < q_row || a.out_stride < q_row || (a.n_kv > 0 && a.kv_stride < kv_row))
    throw Error("attention", "a row stride is shorter than its row");
  if (a.q.size() < strided_extent(a.n_queries, a.q_stride, q_row) ||
      a.out.size() < strided_extent(a.n_queries, a.out_stride, q_row) ||
      a.k.size() < strided_extent(a.n_kv, a.kv_stride, kv_row) ||
      a.v.size() < strided_extent(a.n_kv, a.kv_stride, kv_row))
    throw Error("attention", "a span is too short for the shape given");
  if (a.causal && a.first_query_pos + a.n_queries > a.n_kv)
    throw Error("attention", "causal queries at positions up to " +
                                 std::to_string(a.first_query_pos + a.n_queries) +
                                 " need that many cached keys, have " + std::to_string(a.n_kv));

  kernels::AttentionParams p;
  p.q = a.q.data();
  p.q_token_stride = a.q_stride;
  p.k = a.k.data();
  p.v = a.v.data();
  p.kv_token_stride = a.kv_stride;
  p.out = a.out.data();
  p.out_token_stride = a.out_stride;
  p.n_q = a.n_queries;
  p.n_heads = a.n_heads;
  p.n_kv_heads = a.n_kv_heads;
  p.head_dim = a.head_dim;
  p.kv_len = a.n_kv;
  p.q_pos0 = a.first_query_pos;
  p.causal = a.causal;
  p.window = a.window;
  p.scale = a.scale != 0.0f ? a.scale : 1.0f / std::sqrt(static_cast<float>(a.head_dim));

  const size_t q_blocks = (a.n_queries + kAttentionQueryBlock - 1) / kAttentionQueryBlock;
  run_pieces(a.n_heads * q_blocks, [&](size_t piece) {
    const size_t head = piece / q_blocks, q_begin = (piece % q_blocks) * kAttentionQueryBlock;
    kernels::attention(p, head, head + 1, q_begin,
                       std::min(a.n_queries, q_begin + kAttentionQueryBlock));
  });
}

std::unique_ptr<Backend> make_cpu_backend(int threads) {
  return std::make_unique<CpuBackend>(threads);
}

}  // namespace oxi::backends
