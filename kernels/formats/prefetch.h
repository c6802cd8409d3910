// Software prefetch for matrix-vector products. A matvec tile streams R weight rows at once; on
// the 2-vCPU development VM the hardware prefetcher alone held q4_0 / q8_0 matvec at 20-40 % of
// the read bandwidth, and asking for each row about 1 KB ahead doubled both
// (docs/benchmarks.md). The GEMM tiles reuse each weight tile across many tokens and do not
// prefetch.
#pragma once

#include <algorithm>
#include <cstddef>

namespace oxi::kernels {

inline constexpr size_t kCacheLine = 64;

// How far ahead of a row's read position to prefetch: about 32 blocks, within 0.5-2 KB
// (measured best: q4_0 ~0.5 KB, q8_0 1-2 KB).
template <size_t kBlockBytes>
inline constexpr size_t kPrefetchAhead = std::clamp<size_t>(32 * kBlockBytes, 512, 2048);

// Prefetches the bytes [p + ahead, p + ahead + kSpan): one request per cache line, or one per
// call when the caller steps by less than a line (consecutive calls then touch every line).
template <size_t kSpan>
inline void prefetch_ahead(const void* p) noexcept {
  const char* q = static_cast<const char*>(p) + kPrefetchAhead<kSpan>;
  for (size_t o = 0; o < std::max(kSpan, size_t{1}); o += kCacheLine) __builtin_prefetch(q + o);
}

}  // namespace oxi::kernels
