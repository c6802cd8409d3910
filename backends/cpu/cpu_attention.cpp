// CpuBackend::attention: the kernel's online softmax per (head, query) for decoding and causal
// prefill, and for long non-causal attention (Whisper's encoder: every position sees every
// position) the score matrix through the GEMM, a block of queries at a time:
//   S = Q_h K_h^T            (query block x keys)      gemm_f32 over the cached K rows
//   P = softmax(scale * S)   row by row
//   O_h = P V_h              (query block x head_dim)  gemm_f32 over V_h transposed once
// The per-key dot products and axpys of the online path run at a fraction of the GEMM's speed
// once there are hundreds of queries to share each key.
#include <algorithm>
#include <cmath>
#include <string>

#include "backends/cpu/cpu_backend_impl.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/quant.h"
#include "kernels/math/attention.h"
#include "kernels/math/gemm.h"
#include "kernels/math/softmax.h"
#include "lib/core/error.h"

namespace oxi::backends {
namespace {

// Queries per attention task of the online path: prefill splits over query blocks as well as
// heads, decode (one query) over heads alone. A fixed size keeps the split independent of the
// thread count.
constexpr size_t kAttentionQueryBlock = 32;
// The GEMM path: at least this many queries and keys, and its query block.
constexpr size_t kGemmAttentionMin = 64;
constexpr size_t kGemmAttentionQueryBlock = 64;

// Elements a strided tensor of `rows` rows needs: the last row starts at (rows-1) * stride.
size_t strided_extent(size_t rows, size_t stride, size_t row_elems) {
  return rows == 0 ? 0 : (rows - 1) * stride + row_elems;
}

bool f16_cache(const AttentionArgs& a) {
  return !a.k_f16.empty();
}

size_t kv_head_stride(const AttentionArgs& a) {
  return a.kv_head_stride != 0 ? a.kv_head_stride : a.head_dim;
}

void validate(const AttentionArgs& a) {
  if (a.head_dim == 0 || a.n_kv_heads == 0 || a.n_heads % a.n_kv_heads != 0)
    throw Error("attention", "bad head shape: " + std::to_string(a.n_heads) + " heads, " +
                                 std::to_string(a.n_kv_heads) + " kv heads of dim " +
                                 std::to_string(a.head_dim));
  const size_t q_row = a.n_heads * a.head_dim, kv_row = a.n_kv_heads * a.head_dim;
  const size_t head_stride = kv_head_stride(a);
  // A kv head's row of one position ends before the next position's (kv_stride) and the next
  // head's (head_stride) start; with the heads side by side, all of a position's before the next.
  // One position has no next: a head-major cache of one position (head stride = head_dim)
  // looks side by side, and its position stride does not matter.
  const bool side_by_side = head_stride == a.head_dim;
  if (a.q_stride < q_row || a.out_stride < q_row ||
      (a.n_kv > 1 && a.kv_stride < (side_by_side ? kv_row : a.head_dim)) ||
      (a.n_kv > 0 && a.n_kv_heads > 1 && head_stride < a.head_dim))
    throw Error("attention", "a row stride is shorter than its row");
  const bool f16 = f16_cache(a);
  if (f16 ? (a.v_f16.empty() || !a.k.empty() || !a.v.empty()) : !a.v_f16.empty())
    throw Error("attention", "the keys and values must be both f32 or both f16");
  if (f16 && a.head_dim > kernels::kMaxF16HeadDim)
    throw Error("attention", "an f16 cache takes heads of up to " +
                                 std::to_string(kernels::kMaxF16HeadDim) + " dims, not " +
                                 std::to_string(a.head_dim));
  const size_t kv_extent = a.n_kv == 0 ? 0
                                       : strided_extent(a.n_kv, a.kv_stride, a.head_dim) +
                                             (a.n_kv_heads - 1) * head_stride;
  const size_t k_size = f16 ? a.k_f16.size() : a.k.size();
  const size_t v_size = f16 ? a.v_f16.size() : a.v.size();
  if (a.q.size() < strided_extent(a.n_queries, a.q_stride, q_row) ||
      a.out.size() < strided_extent(a.n_queries, a.out_stride, q_row) || k_size < kv_extent ||
      v_size < kv_extent)
    throw Error("attention", "a span is too short for the shape given");
  if (a.causal && a.first_query_pos + a.n_queries > a.n_kv)
    throw Error("attention", "causal queries at positions up to " +
                                 std::to_string(a.first_query_pos + a.n_queries) +
                                 " need that many cached keys, have " + std::to_string(a.n_kv));
}

}  // namespace

void CpuBackend::attention(const AttentionArgs& a) {
  if (a.n_queries == 0 || a.n_heads == 0) return;
  validate(a);
  const float scale = a.scale != 0.0f ? a.scale : 1.0f / std::sqrt(static_cast<float>(a.head_dim));
  if (!a.causal && a.window == 0 && a.n_queries >= kGemmAttentionMin &&
      a.n_kv >= kGemmAttentionMin) {
    attention_by_gemm(a, scale);
    return;
  }
  kernels::AttentionParams p;
  p.q = a.q.data();
  p.q_token_stride = a.q_stride;
  p.k = a.k.data();
  p.v = a.v.data();
  if (f16_cache(a)) {
    p.k_f16 = a.k_f16.data();
    p.v_f16 = a.v_f16.data();
  }
  p.kv_token_stride = a.kv_stride;
  p.kv_head_stride = kv_head_stride(a);
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
  p.scale = scale;

  // A piece is a run of query heads of one kv head (the kernel reads each chunk of their keys
  // once for all of them) and a block of queries. The heads of a kv head are split only when
  // there would be too few pieces to keep the threads busy; the results do not depend on it.
  const size_t q_blocks = (a.n_queries + kAttentionQueryBlock - 1) / kAttentionQueryBlock;
  const size_t group = a.n_heads / a.n_kv_heads;
  // Runs per kv head for at least two pieces a thread, at most one head each.
  const size_t kv_pieces = a.n_kv_heads * q_blocks;
  const size_t wanted_runs =
      std::min(group, (2 * static_cast<size_t>(threads_) + kv_pieces - 1) / kv_pieces);
  const size_t heads_per_piece = (group + wanted_runs - 1) / wanted_runs;
  const size_t runs = (group + heads_per_piece - 1) / heads_per_piece;
  run_pieces(a.n_kv_heads * runs * q_blocks, [&](size_t piece) {
    const size_t head_run = piece / q_blocks, q_begin = (piece % q_blocks) * kAttentionQueryBlock;
    const size_t g = head_run / runs, first = g * group + (head_run % runs) * heads_per_piece;
    kernels::attention(p, first, std::min((g + 1) * group, first + heads_per_piece), q_begin,
                       std::min(a.n_queries, q_begin + kAttentionQueryBlock));
  });
}

void CpuBackend::attention_by_gemm(const AttentionArgs& a, float scale) {
  const size_t hd = a.head_dim, n_kv = a.n_kv, group = a.n_heads / a.n_kv_heads;
  const size_t head_stride = kv_head_stride(a);
  const bool f16 = f16_cache(a);
  // V of each kv head transposed to (head_dim, n_kv): the rows the second GEMM reads.
  attention_vt_.resize(a.n_kv_heads * hd * n_kv);
  run_pieces(a.n_kv_heads, [&](size_t g) {
    float* vt = attention_vt_.data() + g * hd * n_kv;
    for (size_t p = 0; p < n_kv; ++p) {
      const size_t row = p * a.kv_stride + g * head_stride;
      if (f16)
        for (size_t d = 0; d < hd; ++d) vt[d * n_kv + p] = kernels::f16_to_f32(a.v_f16[row + d]);
      else
        for (size_t d = 0; d < hd; ++d) vt[d * n_kv + p] = a.v[row + d];
    }
  });
  // The keys are read in place, through the GEMM's row decoder for their format.
  const void* keys =
      f16 ? static_cast<const void*>(a.k_f16.data()) : static_cast<const void*>(a.k.data());
  const size_t key_bytes = f16 ? sizeof(uint16_t) : sizeof(float);
  const kernels::RowDecoder decode_keys =
      f16 ? kernels::row_decoder(kernels::DType::F16) : kernels::decode_f32_row;
  const size_t block = kGemmAttentionQueryBlock;
  const size_t q_blocks = (a.n_queries + block - 1) / block;
  const size_t gemm_floats = std::max(kernels::gemm_scratch_floats(block, hd, n_kv),
                                      kernels::gemm_scratch_floats(block, n_kv, hd));
  run_pieces(a.n_heads * q_blocks, [&](size_t piece) {
    const size_t h = piece / q_blocks, g = h / group, t0 = (piece % q_blocks) * block;
    const size_t m = std::min(block, a.n_queries - t0);
    std::vector<float>& scratch = gemm_scratch_.local();
    if (scratch.size() < block * n_kv + gemm_floats) scratch.resize(block * n_kv + gemm_floats);
    const std::span<float> scores = std::span(scratch).first(m * n_kv);
    const std::span<float> gemm = std::span(scratch).subspan(block * n_kv, gemm_floats);
    // S = Q_h K_h^T
    kernels::gemm_f32(a.q.data() + t0 * a.q_stride + h * hd, a.q_stride, m, hd,
                      static_cast<const uint8_t*>(keys) + g * head_stride * key_bytes,
                      a.kv_stride * key_bytes, decode_keys, 0, n_kv, nullptr, scores.data(), n_kv,
                      gemm);
    // P = softmax(scale * S), row by row
    for (size_t i = 0; i < m; ++i) {
      const std::span<float> row = scores.subspan(i * n_kv, n_kv);
      for (float& s : row) s *= scale;
      kernels::softmax(row);
    }
    // O_h = P V_h
    kernels::gemm_f32(scores.data(), n_kv, m, n_kv, attention_vt_.data() + g * hd * n_kv,
                      n_kv * sizeof(float), kernels::decode_f32_row, 0, hd, nullptr,
                      a.out.data() + t0 * a.out_stride + h * hd, a.out_stride, gemm);
  });
}

}  // namespace oxi::backends
