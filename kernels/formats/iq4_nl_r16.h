// IQ4_NL_R16: iq4_nl rows repacked for the matrix-vector product of decoding, in Q4_0_R16's
// layout (q4_0_r16.h). An iq4_nl block is a q4_0 block whose nibbles index kIq4Values instead of
// counting from -8, so the same groups of 16 blocks (scales together, then 4 quant bytes of
// each block per int32 lane) hold it byte for byte, and the same tiles multiply it with one
// vpshufb per nibble vector to look the levels up (q4_0_r16_tiles.h, IQ4Nibbles). Plain iq4_nl
// multiplies ~15 instructions per 18-byte block and row (35 % of the read bandwidth in a
// TinyLlama-shaped decode, docs/benchmarks.md, forty-sixth session).
//
// The activation is q4_0_r16's ActGroupR16 (q8_0 values rearranged), with zero = 128 * sum(q):
// the VNNI kernels meet the activation with level + 128 (kIq4LevelsPlus128, unsigned bytes).
//
// IQ4_NL_R16 is kernel-internal: dtype_info() never returns it for a file's type id.
#pragma once

#include <cstddef>

#include "kernels/formats/q4_0_r16.h"

namespace oxi::kernels {

// Bytes of one prepared activation of n values (n a multiple of 32).
size_t iq4_nl_r16_activation_bytes(size_t n) noexcept;
// q8_0-quantizes x[0..n) (as quantize_row_q8_0 does) into ActGroupR16s with zero 128 * sum(q).
void quantize_activation_iq4_nl_r16(const float* x, void* out, size_t n) noexcept;

// One row of n elements, iq4_nl -> iq4_nl_r16 and back; lossless, src and dst must not overlap.
void repack_row_iq4_nl_r16(const void* src, void* dst, size_t n) noexcept;
void unpack_row_iq4_nl_r16(const void* src, void* dst, size_t n) noexcept;

// Row decoder and encoder (bit-identical to iq4_nl's on the same values).
void dequantize_row_iq4_nl_r16(const void* src, float* dst, size_t n) noexcept;
void quantize_row_iq4_nl_r16(const float* src, void* dst, size_t n) noexcept;

}  // namespace oxi::kernels
