// Q4_K_R8S: q4_K_r8 groups laid across rows, for rows whose super-blocks do not fill whole groups.
//
// A q4_K_r8 row of nb = 8q + t super-blocks (0 < t < 8) ends in a short group of t blocks
// (TinyLlama's ffn_down, 5632 wide: 2 groups + 6; every 3072-wide row of Llama-3.2-3B: 1 + 4).
// Those rows stream 15-25 % slower in decode than rows of whole groups (docs/benchmarks.md,
// thirty-first, thirty-seventh and fortieth sessions): the short group's masked loads keep
// another stride, and a row's loads are split between two codes. Here rows come in sets of
// R = 8 / gcd(t, 8), and a set is a run of whole q4_K_r8 groups (1152 bytes, q4_k_r8.h):
//
//   groups 0 .. R*q - 1       row g / q, its blocks 8 (g % q) .. 8 (g % q) + 7 (as in q4_K_r8)
//   then R*t/8 tail groups    lane k of tail group h: block 8q + (8h + k) % t of row (8h + k) / t
//
// (nb = 22: sets of 4 rows, 8 row groups then 3 tail groups; nb = 12: sets of 2 rows, 2 + 1;
// nb < 8: tail groups only). The one-token product reads a matrix as one run of whole groups
// with one code. The activation holds q + R*t/8 groups: the q of q4_K_r8 (blocks 0 .. 8q - 1),
// then the tails' pattern (lane k of tail group h: block 8q + (8h + k) % t of x), which every
// set reads; the tails' lane sums are added into their rows. (Tail groups alone, every group
// mixing rows, needed 11 activation groups for rows of 5632: 24.6 KB, and streamed from memory
// at two thirds of q4_K_r8's rate; one thread, 20 against 30 GB/s.)
// A matrix in this layout has R * row_bytes(Q4_K, n) bytes per set, exactly its q4_K bytes, and
// a number of rows divisible by R; a row is not addressable on its own, so the row-at-a-time
// functions (repack_row, row_decoder) do not take this type: the set functions below and
// repack_rows / dequantize_matrix_row (quant.h) do.
//
// Q4_K_R8S is kernel-internal: dtype_info() never returns it for a file's type id.
#pragma once

#include <cstddef>
#include <numeric>

#include "kernels/formats/q4_k_r8.h"

namespace oxi::kernels {

// The sets of rows of n elements (n a multiple of 256): the arrangement above, worked out once.
// Always inlined: the arch libraries must not emit a shared copy (tests/kernels/arch_symbols.py).
struct K8Sets {
  size_t q, tail;     // whole groups and tail blocks of a row
  size_t set_rows;    // R
  size_t groups;      // groups of a set
  size_t row_groups;  // R * q, the set's first groups
  size_t act_groups;  // q + R * t / 8, the activation's groups

  [[gnu::always_inline]] constexpr explicit K8Sets(size_t n) noexcept
      : q(n / QK_K / kK8Blocks),
        tail(n / QK_K % kK8Blocks),
        set_rows(tail == 0 ? 1 : kK8Blocks / std::gcd(tail, kK8Blocks)),
        groups(set_rows * (n / QK_K) / kK8Blocks),
        row_groups(set_rows * q),
        act_groups(q + set_rows * tail / kK8Blocks) {}

  struct Lane {
    size_t row, block;
  };
  // Where lane k of group g of a set comes from: its row in the set and its block in that row.
  [[gnu::always_inline]] constexpr Lane lane(size_t g, size_t k) const noexcept {
    if (g < row_groups) return {g / q, kK8Blocks * (g % q) + k};
    const size_t l = kK8Blocks * (g - row_groups) + k;
    return {l / tail, kK8Blocks * q + l % tail};
  }
  // The activation group group g reads, and the block of x in lane k of activation group a.
  [[gnu::always_inline]] constexpr size_t act_group(size_t g) const noexcept {
    return g < row_groups ? g % q : q + (g - row_groups);
  }
  [[gnu::always_inline]] constexpr size_t act_block(size_t a, size_t k) const noexcept {
    return a < q ? kK8Blocks * a + k : kK8Blocks * q + (kK8Blocks * (a - q) + k) % tail;
  }
};

// Bytes of one prepared activation of n values, and the activation itself (q8_K-quantized as
// the q4_K activation, in the set pattern above).
size_t q4_k_r8s_activation_bytes(size_t n) noexcept;
void quantize_activation_q4_k_r8s(const float* x, void* out, size_t n) noexcept;

// One set: its K8Sets(n).set_rows q4_K rows (dense, one after another) -> the set, and back.
void repack_set_q4_k_r8s(const void* q4_k_rows, void* set, size_t n) noexcept;
void unpack_set_q4_k_r8s(const void* set, void* q4_k_rows, size_t n) noexcept;

// Row `row` (< K8Sets(n).set_rows) of a set, decoded (bit-identical to q4_K's decoder).
void dequantize_set_row_q4_k_r8s(const void* set, size_t row, float* dst, size_t n) noexcept;

}  // namespace oxi::kernels
