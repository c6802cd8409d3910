// Software prefetch for matrix-vector products. A matvec tile streams R weight rows at once
// and the next tile reads the R rows after them; the tile asks for the same position of the
// rows kPrefetchTiles tiles later while it reads its own, so each row is already on its way
// when its tile starts. On the 2-vCPU development VM the hardware prefetcher alone held q4_0 / q8_0
// matvec at 20-40 % of the read bandwidth (worse on the short rows of a 2048-wide model); with
// this, 55-100 % (docs/benchmarks.md). Prefetching further along the same row helped long rows
// only. The GEMM tiles reuse each weight tile across many tokens and do not prefetch.
//
// The requests go to L2 (locality hint 2, prefetcht1), kPrefetchTiles tiles ahead. Into L1
// (prefetcht0, the default hint) they held the repacked matvecs of the eleventh session's Zen 4
// VM to 7-9 GB/s a thread from memory while the same kernels ran at 28-47 GB/s in cache: L1's
// few miss buffers (most likely), not the arithmetic, were the limit. Into L2 and 2-4 tiles
// ahead: 19-22 GB/s a thread, and TinyLlama-shaped decode on 2 threads 1.6-1.9x faster for
// q4_0 / q8_0, 1.1-1.2x for q4_K (docs/benchmarks.md, eleventh session).
#pragma once

#include <cstddef>

namespace oxi::kernels {

inline constexpr size_t kCacheLine = 64;
// How many tiles ahead a matvec tile prefetches (the rows kPrefetchTiles tiles after its own).
inline constexpr size_t kPrefetchTiles = 4;

// Prefetches [p, p + kSpan): one request per cache line, or one per call when the caller
// steps by less than a line (its consecutive calls then touch every line).
template <size_t kSpan>
inline void prefetch_lines(const void* p) noexcept {
  const char* q = static_cast<const char*>(p);
  for (size_t o = 0; o < kSpan || o == 0; o += kCacheLine) __builtin_prefetch(q + o, 0, 2);
}

}  // namespace oxi::kernels
