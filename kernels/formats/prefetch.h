// Software prefetch for matrix-vector products. A matvec tile streams R weight rows at once
// and the next tile reads the R rows after them; the tile asks for the same position of the
// next tile's rows while it reads its own, so each row is already on its way when its tile
// starts. On the 2-vCPU development VM the hardware prefetcher alone held q4_0 / q8_0 matvec
// at 20-40 % of the read bandwidth (worse on the short rows of a 2048-wide model); with this,
// 55-100 % (docs/benchmarks.md). Prefetching further along the same row helped long rows only.
// The GEMM tiles reuse each weight tile across many tokens and do not prefetch.
#pragma once

#include <cstddef>

namespace oxi::kernels {

inline constexpr size_t kCacheLine = 64;

// Prefetches [p, p + kSpan): one request per cache line, or one per call when the caller
// steps by less than a line (its consecutive calls then touch every line).
template <size_t kSpan>
inline void prefetch_lines(const void* p) noexcept {
  const char* q = static_cast<const char*>(p);
  for (size_t o = 0; o < kSpan || o == 0; o += kCacheLine) __builtin_prefetch(q + o);
}

}  // namespace oxi::kernels
