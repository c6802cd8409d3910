// LLM throughput as llama-bench measures it: prompt processing (pp: one batched eval of random
// token ids) and text generation (tg: one token at a time), plus how close decode comes to the
// machine's read bandwidth (each generated token reads every weight matrix once).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "kernels/formats/dtype.h"
#include "lib/llm/session.h"
#include "tools/oxinfer/bench/machine_limits.h"

namespace oxi::bench {

struct LlmBenchResult {
  size_t depth = 0, pp = 0, tg = 0;
  int reps = 0;
  double pp_tok_s = 0, pp_tok_s_sd = 0;  // mean and standard deviation over reps
  double tg_tok_s = 0, tg_tok_s_sd = 0;
  double weight_bytes_per_token = 0;  // weight matrices read by one decode step
  double decode_gbs = 0;              // weight_bytes_per_token x tg tok/s
  double read_bandwidth_gbs = 0;      // mean over tg runs of the interleaved passes' rate
  double decode_bandwidth_pct = 0;    // mean over tg runs of decode GB/s / that run's passes
  // The same for the passes over a separate buffer, when bench_llm is given one.
  double buffer_read_gbs = 0;
  double decode_pct_of_buffer_read = 0;
  // Mean over tg runs of the interleaved weights-read passes' rate (bench_llm's weights_read),
  // and of decode GB/s / that rate (what the arithmetic costs decode).
  double weights_read_gbs = 0;
  double decode_pct_of_weights_read = 0;
};

// Where a decode step's time goes: tg tokens generated one at a time through a TimedBackend
// (timed_backend.h) over the session's backend, with nothing between them.
struct DecodeSplit {
  size_t context = 0;  // tokens in the cache before the timed ones (the depth)
  size_t tokens = 0;
  double ms_per_token = 0;
  double products_pct = 0;   // in the matrix products
  double attention_pct = 0;  // in attention
  double other_pct = 0;      // the rest: norms, RoPE, SwiGLU, residual adds, embedding
  double products_gbs = 0;   // weight bytes per token / the products' seconds per token
  // The products by kind (TimedBackend::product_kinds): which matrices run slower than the rest.
  struct Kind {
    std::string name;
    double calls_per_token = 0;
    double ms_per_token = 0;
    double pct = 0;  // of the token
    double gbs = 0;  // its weight bytes over its seconds
  };
  std::vector<Kind> kinds;
};
// The tokens follow the context `context` holds (its cache copied in, not timed).
DecodeSplit split_decode(std::shared_ptr<const llm::Model> model, backends::Backend& backend,
                         const llm::Session& context, size_t tg, kernels::DType kv_type);

// Bytes of weight matrices one decode step reads: every layer matrix, the output projection
// and one embedding row (the KV cache is not counted).
double decode_weight_bytes(const llm::Model& model);

// The weight matrices one decode step reads, grouped into its parallel regions in its order:
// per layer {q, k, v} (one shared-input region), {o}, {gate, up}, {down}; then the output.
std::vector<ReadRegion> decode_read_regions(const llm::Model& model);

// The weight layouts among decode's matrices whose one-token products have a stream mode
// (kernels::FormatKernels::stream_layout), with their bytes, most bytes first.
struct LayoutBytes {
  kernels::DType dtype;
  double bytes = 0;
};
std::vector<LayoutBytes> decode_stream_layouts(const llm::Model& model);

// Runs pp and tg `reps` times each on `session` (its cache is cleared before each run; it needs
// n_ctx >= max(pp, tg)). Random ids from a fixed seed. In a tg run every kTokensBetweenPasses
// generated tokens are followed by one pass of `read_pass` (not counted as decode time), and the
// run's read bandwidth is the passes' bytes over their time: the limit of the same seconds as
// the decode it is compared with. The first token of each block is evaluated once untimed and
// dropped before the timed ones, so that every timed token follows a decode step as in
// generation: right after the passes, how fast decode ran depended on how the passes read and
// on the kernels (the q8_0 matvec of the session before: 65-67 GB/s right after the passes,
// 53-55 back to back; docs/benchmarks.md, twenty-fourth session). On a shared
// VM single passes range over 2x (20-48 GB/s on the development VM, minutes apart and from one 15
// ms pass to the next), so a best pass compared with decode's mean over seconds, or a figure taken
// before the run, measured the noise. Each read pass is followed by one pass of `buffer_pass` if
// given (a ReadPass over a buffer of its own, for comparison when `read_pass` reads the weights)
// and one of `weights_read` (a RegionsRead over decode_read_regions): the same weight bytes read in
// decode's regions and order, without arithmetic, in the same seconds.
inline constexpr size_t kTokensBetweenPasses = 8;
//
// With depth > 0 (llama-bench's -d) every run starts from a cache that holds `depth` tokens
// already (random ids, evaluated once before the runs, not timed), so pp and tg measure the
// prompt and the tokens that come after that much context; n_ctx >= depth + max(pp, tg). The
// session is left holding that context (for split_decode).
LlmBenchResult bench_llm(llm::Session& session, size_t depth, size_t pp, size_t tg, int reps,
                         ReadPass& read_pass, ReadPass* buffer_pass, RegionsRead& weights_read);

// The read limit's memory: a pass over the weights themselves (decode_read_regions) when they
// are at least this large, far beyond any cache; otherwise a buffer of its own.
inline constexpr double kLimitOnWeightsMinBytes = 256.0 * (1 << 20);

}  // namespace oxi::bench

namespace oxi::cli {
// oxinfer bench llm -m MODEL [--threads N] [--json] [--pp 512] [--tg 128] [--reps N] [--depth N]
int run_bench_llm(const std::vector<std::string>& argv);
}  // namespace oxi::cli
