// The memory read probe: a sum of words read the way this CPU streams memory fastest. The
// bench's read-bandwidth limit (tools/oxinfer/bench/machine_limits.h) is passes of it.
//
// Why a kernel: tools/ are built for the baseline ISA, where the plain loop is 16-byte SSE2
// loads. On the development VM (Zen 5, two threads, 1 MiB pieces) 32-byte loads into four
// accumulators stream 7-10 % faster; one 64-byte load per line into one accumulator (what GCC
// makes of the loop with -march=native) ~5 % slower; software prefetch 16 KB ahead gained
// nothing (docs/benchmarks.md, twenty-third session). So the SIMD builds read 32-byte vectors
// (the avx512 build too) and the limit is the fastest read this project has, not a slow one
// that decode could beat. Since the twenty-fourth session they also request the first line of
// each 4 KB page 16 KB ahead (kernels/formats/prefetch.h, prefetch_page_starts), as decode's
// matvecs did then: two threads over 6.5 MB regions read up to 30 % faster with it when the memory
// was slower, as fast at 85-87 GB/s; Q8_0 decode's limit rose 80 -> 85-87 GB/s.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace oxi::kernels {

// How far ahead read_sum requests the page starts. The matvecs' kPrefetchBytes went from 16 to
// 8 KB in the twenty-fifth session; read_sum read no faster at 8 KB (Q8_0 bench llm, four
// alternating runs: passes over the weights 74.9 vs 75.5 GB/s), so it keeps 16.
inline constexpr size_t kReadSumPrefetchBytes = 16 * 1024;

// The sum of words, modulo 2^64 (the same on every instruction set).
uint64_t read_sum(std::span<const uint64_t> words) noexcept;

}  // namespace oxi::kernels
