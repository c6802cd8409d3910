// Packed, cache-blocked f32 GEMM over weights stored in any row format:
//   y[i][j] = sum_k x[i][k] * W[j][k] (+ bias[j]),  i < m,  n_begin <= j < n_end.
// W holds rows of k elements, w_row_bytes apart. Tiles of W are decoded to f32 as they are
// packed, so one driver serves F32, F16, BF16 and every block-quantized type.
#pragma once

#include <cstddef>
#include <span>

namespace oxi::kernels {

// Decodes n consecutive elements of one weight row, starting at src, into dst.
// GEMM asks for runs that start at a multiple of kGemmKc elements from the row start (and end
// at kGemmKc multiples or the row end), so block formats of 1, 32 or 256 elements decode whole
// blocks: src is row_start + (offset / k) * w_row_bytes.
using RowDecoder = void (*)(const void* src, float* dst, size_t n) noexcept;

// Blocking shared by every instruction set (the register tile is per set, at most 6 x 16).
inline constexpr size_t kGemmKc = 256;  // k depth of one packed block: a micro-panel fits L1
inline constexpr size_t kGemmMc = 72;   // rows of x per packed block: fits L2 with B panels
inline constexpr size_t kGemmNc = 512;  // columns of W per packed block

// Floats of scratch gemm_f32 needs for these sizes (n_cols = n_end - n_begin). Independent of
// the instruction set, so a backend can size per-thread buffers once.
size_t gemm_scratch_floats(size_t m, size_t k, size_t n_cols) noexcept;

// The function every instruction set implements (see math_kernels.h for the table).
// x: m rows, ldx floats apart. y: m rows, ldy floats apart; only columns [n_begin, n_end) of
// each row are written (y[i * ldy + j]). bias: nullptr or indexed by absolute column j.
// Single-threaded: callers split [n_begin, n_end) (and m) across threads, each with its own
// scratch of gemm_scratch_floats() floats.
using GemmF32Fn = void (*)(const float* x, size_t ldx, size_t m, size_t k, const void* w,
                           size_t w_row_bytes, RowDecoder decode, size_t n_begin, size_t n_end,
                           const float* bias, float* y, size_t ldy,
                           std::span<float> scratch) noexcept;

// gemm_f32 of the selected instruction set.
void gemm_f32(const float* x, size_t ldx, size_t m, size_t k, const void* w, size_t w_row_bytes,
              RowDecoder decode, size_t n_begin, size_t n_end, const float* bias, float* y,
              size_t ldy, std::span<float> scratch) noexcept;

// Decoder for plain f32 rows (a copy).
void decode_f32_row(const void* src, float* dst, size_t n) noexcept;

}  // namespace oxi::kernels
