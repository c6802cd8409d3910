// CpuBackend::matmul: picks the kernel for the weight type and token count, and cuts the work
// into pieces whose boundaries depend only on the shape (so results do not depend on threads).
//   quantized, m == 1      activation quantized once, matvec over row blocks
//   r16 layouts, m <= 3    the same, token after token over each row block
//   quantized, m > 1       activations quantized once per token, gemm_q over (row, token) tiles
//   f32/f16/bf16, m <= 4   matvec per token over row blocks (packing would cost more than it saves)
//   f32/f16/bf16, m > 4    gemm_f32 over (row, token) tiles with per-thread packing scratch
// The repacked layouts (Q4_0_R16, Q8_0_R16, Q4_K_R8, IQ4_XS_R8, IQ4_NL_R16, Q5_0_R16, Q5_1_R16,
// Q4_1_R16, Q5_K_R8) are more quantized types here: kernels::quantize_activation gives each its own
// activation layout, and their matvec / gemm_q tiles are in the same tables. matmul_shared_input
// runs several one-token matvecs of one input as one parallel region.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_backend_impl.h"
#include "kernels/formats/prefetch.h"
#include "kernels/formats/quant.h"
#include "kernels/math/gemm.h"
#include "lib/core/error.h"

namespace oxi::backends {
namespace {

constexpr size_t kMatvecMaxTokensFloat = 4;
// Up to this many tokens (decode steps of conversations batched together, a short speculative
// draft), the r16 layouts take the matvec path's pieces (each streamed from memory with its
// prefetch), all tokens at once through their few-token tiles. `bench llm --pp 2 / 3` on
// TinyLlama shapes, avx512, tok/s against one matvec a token over each piece: q4_0 91-105 /
// 128-136 against 78-83 / 99-103, q8_0 52 / 73 against 45 / 65 (docs/benchmarks.md,
// sixty-third session). From 4 tokens the gemm path's tiles of 64 rows win (q4_0 152 against
// 138). The K-quants' r8 tiles take the gemm path from 2 tokens.
constexpr size_t kMatvecMaxTokensR16 = 3;

bool r16_layout(kernels::DType t) {
  using kernels::DType;
  return t == DType::Q4_0_R16 || t == DType::Q8_0_R16 || t == DType::IQ4_NL_R16 ||
         t == DType::Q5_0_R16 || t == DType::Q5_1_R16 || t == DType::Q4_1_R16;
}
// A matvec piece covers about this many weight bytes: large enough to hide task overhead,
// small enough that a 4096-row layer still makes 100+ pieces.
constexpr size_t kMatvecPieceBytes = 32 * 1024;
constexpr size_t kGemmQRowTile = 64;
constexpr size_t kGemmQTokenTile = 64;
constexpr size_t kGemmF32RowTile = 128;
constexpr size_t kGemmF32TokenTile = 2 * kernels::kGemmMc;

size_t ceil_div(size_t a, size_t b) {
  return (a + b - 1) / b;
}

// A multiple of 4 rows, and of the rows the weight type holds together (q4_K_r8s' sets of up
// to 8 rows; kGemmQRowTile is a multiple of 8 too).
size_t matvec_rows_per_piece(const WeightMatrix& w) {
  const size_t rows = std::clamp<size_t>(ceil_div(kMatvecPieceBytes, w.row_bytes), 4, 256);
  const size_t granule = std::lcm<size_t>(4, kernels::row_granule(w.dtype, w.cols));
  return ceil_div(rows, granule) * granule;
}

// Where this thread's last matvec piece ended: a piece that starts elsewhere starts a new
// stream (the thread's range of a region, or half of another's that it took over).
thread_local const std::byte* t_stream_end = nullptr;

// A matvec kernel prefetches kPrefetchBytes ahead of where it reads (prefetch.h), so within a
// thread's run of consecutive pieces each piece finds its first bytes requested by the one
// before. The first piece of a stream would read its first kPrefetchBytes on demand, a few
// cache lines in flight at a time; those are requested here first. A decode step starts
// ~100 such streams per thread (Q4_K_M decode +1-2 %, docs/benchmarks.md, nineteenth session).
// Non-temporal, as the kernels' own requests for the same stream (prefetch.h; against
// prefetcht1 here, Q4_K_M / Q4_0 decode equal or up to +5 points, five pairs).
void prime_stream(const std::byte* begin, size_t bytes) {
  if (begin != t_stream_end) kernels::prefetch_stream_lines<kernels::kPrefetchBytes>(begin);
  t_stream_end = begin + bytes;
}

// The process's stream mode of each layout (kernels::stream_lines): "environment",
// "calibrated" or nothing yet (MatvecStreaming::how). Set once: every layout's from
// OXI_STREAM_LINES when the first backend runs a product, else each by the first calibration
// of that layout that decides.
std::atomic<const char*> g_stream_settled[kernels::kStreamLayouts]{};  // all nullptr

bool stream_mode_settled(kernels::StreamLayout layout) {
  static const bool from_environment = [] {
    const char* e = std::getenv("OXI_STREAM_LINES");
    if (e == nullptr || (std::string_view(e) != "0" && std::string_view(e) != "1")) return false;
    for (size_t l = 0; l < kernels::kStreamLayouts; ++l) {
      kernels::set_stream_lines(static_cast<kernels::StreamLayout>(l), *e == '1');
      g_stream_settled[l].store("environment");
    }
    return true;
  }();
  return from_environment || g_stream_settled[static_cast<size_t>(layout)].load() != nullptr;
}

void add_bias(float* y, const float* bias, size_t count) {
  for (size_t i = 0; i < count; ++i) y[i] += bias[i];
}

void validate(const WeightMatrix& w, std::span<const float> x, size_t m, std::span<float> y) {
  if (!kernels::weight_supported(w.dtype))
    throw Error("matmul", "no kernel for weight type " + std::string(kernels::name(w.dtype)));
  const size_t dense_row = kernels::row_bytes(w.dtype, w.cols);
  if (w.rows == 0 || w.cols == 0 || dense_row == 0)
    throw Error("matmul", "weight " + shape_text(w) + ": empty, or columns not a multiple of " +
                              std::to_string(kernels::info(w.dtype).block_elems));
  if (w.data == nullptr) throw Error("matmul", "weight " + shape_text(w) + " has no data");
  if (w.row_bytes < dense_row)
    throw Error("matmul", "weight " + shape_text(w) + ": row_bytes " + std::to_string(w.row_bytes) +
                              " < " + std::to_string(dense_row));
  if (const size_t granule = kernels::row_granule(w.dtype, w.cols);
      w.rows % granule != 0 || (granule > 1 && w.row_bytes != dense_row))
    throw Error("matmul", "weight " + shape_text(w) + ": " + std::string(kernels::name(w.dtype)) +
                              " takes dense rows in sets of " + std::to_string(granule));
  if (x.size() < m * w.cols || y.size() < m * w.rows)
    throw Error("matmul", "weight " + shape_text(w) + " with " + std::to_string(m) +
                              " tokens needs x of " + std::to_string(m * w.cols) + " and y of " +
                              std::to_string(m * w.rows) + " floats, got " +
                              std::to_string(x.size()) + " and " + std::to_string(y.size()));
}

}  // namespace

template <typename Product>
void CpuBackend::run_matvec(const void* weights, kernels::DType dtype, const Product& product) {
  const std::optional<kernels::StreamLayout> layout =
      kernels::format_kernels().stream_layout(dtype);
  std::optional<bool> mode;
  if (layout && !stream_mode_settled(*layout)) {
    const size_t l = static_cast<size_t>(*layout);
    mode = calibrations_[l].mode_for(weights);
    if (const std::optional<bool> decision = calibrations_[l].decision()) {
      const char* none = nullptr;  // the first backend to decide sets the process's mode
      if (g_stream_settled[l].compare_exchange_strong(none, "calibrated"))
        kernels::set_stream_lines(*layout, *decision);
    }
  }
  if (!mode) return product();
  kernels::set_stream_lines(*layout, *mode);
  const auto start = std::chrono::steady_clock::now();
  product();
  calibrations_[static_cast<size_t>(*layout)].record(
      weights, *mode,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

MatvecStreaming matvec_streaming(kernels::DType weights) {
  const std::optional<kernels::StreamLayout> layout =
      kernels::format_kernels().stream_layout(weights);
  if (!layout) return {true, "fixed"};
  const bool settled = stream_mode_settled(*layout);
  return {kernels::stream_lines(*layout),
          settled ? g_stream_settled[static_cast<size_t>(*layout)].load() : "calibrating"};
}

std::byte* CpuBackend::activation_buffer(size_t bytes) {
  // Aligned to kActivationAlign, as the layouts' offsets inside it are: a 64-byte activation
  // load then stays within one cache line.
  if (activations_.size() < bytes + kernels::kActivationAlign)
    activations_.resize(bytes + kernels::kActivationAlign);
  return kernels::align_activation_start(activations_.data());
}

void CpuBackend::matmul(const WeightMatrix& w, std::span<const float> x, size_t m,
                        std::span<float> y, const float* bias) {
  validate(w, x, m, y);
  if (m == 0) return;
  const bool quantized = kernels::info(w.dtype).quantized;
  if (quantized && (m == 1 || (m <= kMatvecMaxTokensR16 && r16_layout(w.dtype))))
    matvec_path(w, x, m, y, bias);
  else if (quantized)
    gemm_q_path(w, x, m, y, bias);
  else if (m <= kMatvecMaxTokensFloat)
    matvec_path(w, x, m, y, bias);
  else
    gemm_f32_path(w, x, m, y, bias);
}

void CpuBackend::matvec_path(const WeightMatrix& w, std::span<const float> x, size_t m,
                             std::span<float> y, const float* bias) {
  const kernels::MatvecFn matvec = kernels::format_kernels().matvec_for(w.dtype);
  // Float weights take the activation as is; quantized ones a quantized copy of each token.
  const bool as_is = kernels::activation_dtype(w.dtype) == kernels::DType::F32;
  const size_t act_bytes = kernels::activation_bytes(w.dtype, w.cols);
  const std::byte* act = reinterpret_cast<const std::byte*>(x.data());
  if (!as_is) {
    std::byte* buffer = activation_buffer(m * act_bytes);
    for (size_t t = 0; t < m; ++t)
      kernels::quantize_activation(w.dtype, x.data() + t * w.cols, buffer + t * act_bytes, w.cols);
    act = buffer;
  }
  const size_t act_stride = as_is ? w.cols * sizeof(float) : act_bytes;
  const size_t rows_per_piece = matvec_rows_per_piece(w);
  const auto* weights = static_cast<const std::byte*>(w.data);
  // Several tokens: all of them at once through the layout's tiles where those stream the
  // weights and unpack each weight vector once for all (few_token_tiles), else one matvec a
  // token (the first streams the piece from memory, the others find it in cache).
  const kernels::GemmQFn tiles =
      m > 1 && !as_is && kernels::format_kernels().few_token_tiles_for(w.dtype)
          ? kernels::format_kernels().gemm_q_for(w.dtype)
          : nullptr;
  const auto product = [&] {
    run_pieces(ceil_div(w.rows, rows_per_piece), [&](size_t piece) {
      const size_t r0 = piece * rows_per_piece, rows = std::min(w.rows - r0, rows_per_piece);
      prime_stream(weights + r0 * w.row_bytes, rows * w.row_bytes);
      if (tiles) {
        float* out = y.data() + r0;
        tiles(weights + r0 * w.row_bytes, w.row_bytes, rows, w.cols, act, act_stride, m, out,
              w.rows);
        if (bias)
          for (size_t t = 0; t < m; ++t) add_bias(out + t * w.rows, bias + r0, rows);
        return;
      }
      for (size_t t = 0; t < m; ++t) {
        float* out = y.data() + t * w.rows + r0;
        matvec(weights + r0 * w.row_bytes, w.row_bytes, rows, w.cols, act + t * act_stride, out);
        if (bias) add_bias(out, bias + r0, rows);
      }
    });
  };
  if (m == 1 && !as_is)
    run_matvec(w.data, w.dtype, product);
  else
    product();
}

void CpuBackend::matmul_shared_input(std::span<const float> x, size_t m,
                                     std::span<const SharedInputProduct> products) {
  // Several tokens take the GEMM paths, whose tiles are large already: one product at a time.
  if (m != 1 || products.size() < 2) {
    for (const SharedInputProduct& p : products) matmul(*p.w, x, m, p.y, p.bias);
    return;
  }
  for (const SharedInputProduct& p : products) validate(*p.w, x, m, p.y);
  // One token: every product is a matvec. x is prepared once per activation layout (products
  // of one weight type share it), then the rows of all products are cut into pieces as
  // matvec_path cuts one matrix, and run as one parallel region.
  struct Job {
    const SharedInputProduct* p;
    kernels::MatvecFn matvec;
    size_t act_offset;  // into the activation buffer; SIZE_MAX: x itself
    size_t rows_per_piece, first_piece;
    bool prepares_act;  // the first job of its activation layout quantizes x
  };
  constexpr size_t kAsIs = SIZE_MAX;
  std::vector<Job> jobs;
  jobs.reserve(products.size());
  size_t act_bytes = 0, pieces = 0;
  for (const SharedInputProduct& p : products) {
    const WeightMatrix& w = *p.w;
    Job job{&p,     kernels::format_kernels().matvec_for(w.dtype),
            kAsIs,  matvec_rows_per_piece(w),
            pieces, false};
    if (kernels::activation_dtype(w.dtype) != kernels::DType::F32) {
      const auto same = std::find_if(jobs.begin(), jobs.end(), [&](const Job& e) {
        return e.p->w->dtype == w.dtype && e.p->w->cols == w.cols;
      });
      job.prepares_act = same == jobs.end();
      job.act_offset = job.prepares_act ? act_bytes : same->act_offset;
      // Each layout's activation starts aligned (a plain q8_0 one may end on 2 mod 4).
      if (job.prepares_act)
        act_bytes =
            kernels::align_activation_bytes(act_bytes + kernels::activation_bytes(w.dtype, w.cols));
    }
    pieces += ceil_div(w.rows, job.rows_per_piece);
    jobs.push_back(job);
  }
  std::byte* buffer = activation_buffer(act_bytes);
  for (const Job& job : jobs) {
    if (job.prepares_act)
      kernels::quantize_activation(job.p->w->dtype, x.data(), buffer + job.act_offset,
                                   job.p->w->cols);
  }
  // Timed for the calibration of the first product's layout that has one (the others run in
  // their layout's current mode: q / k and v, or gate and up, are of one type in most files).
  const auto calibrated = std::find_if(products.begin(), products.end(), [](const auto& p) {
    return kernels::format_kernels().stream_layout(p.w->dtype).has_value();
  });
  const WeightMatrix& key = calibrated != products.end() ? *calibrated->w : *products[0].w;
  run_matvec(key.data, key.dtype, [&] {
    run_pieces(pieces, [&](size_t piece) {
      size_t j = jobs.size() - 1;
      while (jobs[j].first_piece > piece) --j;
      const Job& job = jobs[j];
      const WeightMatrix& w = *job.p->w;
      const size_t r0 = (piece - job.first_piece) * job.rows_per_piece;
      const size_t rows = std::min(w.rows - r0, job.rows_per_piece);
      const void* act = job.act_offset == kAsIs ? static_cast<const void*>(x.data())
                                                : static_cast<const void*>(buffer + job.act_offset);
      float* out = job.p->y.data() + r0;
      prime_stream(static_cast<const std::byte*>(w.data) + r0 * w.row_bytes, rows * w.row_bytes);
      job.matvec(static_cast<const std::byte*>(w.data) + r0 * w.row_bytes, w.row_bytes, rows,
                 w.cols, act, out);
      if (job.p->bias) add_bias(out, job.p->bias + r0, rows);
    });
  });
}

void CpuBackend::gemm_q_path(const WeightMatrix& w, std::span<const float> x, size_t m,
                             std::span<float> y, const float* bias) {
  const kernels::GemmQFn gemm_q = kernels::format_kernels().gemm_q_for(w.dtype);
  if (gemm_q == nullptr) return gemm_f32_path(w, x, m, y, bias);
  const size_t act_bytes = kernels::activation_bytes(w.dtype, w.cols);
  std::byte* act = activation_buffer(m * act_bytes);
  run_pieces(ceil_div(m, kGemmQTokenTile), [&](size_t piece) {
    const size_t t_end = std::min(m, (piece + 1) * kGemmQTokenTile);
    for (size_t t = piece * kGemmQTokenTile; t < t_end; ++t)
      kernels::quantize_activation(w.dtype, x.data() + t * w.cols, act + t * act_bytes, w.cols);
  });
  const size_t row_tiles = ceil_div(w.rows, kGemmQRowTile);
  const auto* weights = static_cast<const std::byte*>(w.data);
  run_pieces(row_tiles * ceil_div(m, kGemmQTokenTile), [&](size_t piece) {
    const size_t r0 = (piece % row_tiles) * kGemmQRowTile;
    const size_t t0 = (piece / row_tiles) * kGemmQTokenTile;
    const size_t rows = std::min(w.rows - r0, kGemmQRowTile);
    const size_t tokens = std::min(m - t0, kGemmQTokenTile);
    float* out = y.data() + t0 * w.rows + r0;
    gemm_q(weights + r0 * w.row_bytes, w.row_bytes, rows, w.cols, act + t0 * act_bytes, act_bytes,
           tokens, out, w.rows);
    if (bias)
      for (size_t t = 0; t < tokens; ++t) add_bias(out + t * w.rows, bias + r0, rows);
  });
}

void CpuBackend::gemm_f32_path(const WeightMatrix& w, std::span<const float> x, size_t m,
                               std::span<float> y, const float* bias) {
  const kernels::RowDecoder decode = kernels::row_decoder(w.dtype);
  if (decode == nullptr)
    throw Error("matmul", "no row decoder for weight type " + std::string(kernels::name(w.dtype)));
  const size_t row_tiles = ceil_div(w.rows, kGemmF32RowTile);
  const size_t scratch_floats = kernels::gemm_scratch_floats(std::min(m, kGemmF32TokenTile), w.cols,
                                                             std::min(w.rows, kGemmF32RowTile));
  run_pieces(row_tiles * ceil_div(m, kGemmF32TokenTile), [&](size_t piece) {
    const size_t n_begin = (piece % row_tiles) * kGemmF32RowTile;
    const size_t n_end = std::min(w.rows, n_begin + kGemmF32RowTile);
    const size_t t0 = (piece / row_tiles) * kGemmF32TokenTile;
    const size_t tokens = std::min(m - t0, kGemmF32TokenTile);
    std::vector<float>& scratch = gemm_scratch_.local();
    if (scratch.size() < scratch_floats) scratch.resize(scratch_floats);
    kernels::gemm_f32(x.data() + t0 * w.cols, w.cols, tokens, w.cols, w.data, w.row_bytes, decode,
                      n_begin, n_end, bias, y.data() + t0 * w.rows, w.rows, scratch);
  });
}

}  // namespace oxi::backends
