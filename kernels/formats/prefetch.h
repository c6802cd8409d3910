// Software prefetch for matrix-vector products (one token: every weight byte is read once).
//
// The quantized formats' matvec (tiles.h, repacked_tiles.h) reads one row at a time, so a matvec
// piece is a single sequential stream that the hardware prefetcher follows too, and asks for the
// bytes kPrefetchBytes ahead of its position. On TinyLlama-shaped decode with 2 threads
// (twelfth session, tokens alternating between the variants, each followed by a read pass), one
// row against 4 interleaved rows prefetched 16 rows on: q8_0 49 vs 41 GB/s, q4_0 45 vs 40 and
// q6_K 44 vs 35-39 when the passes read 36-48 GB/s, equal when they read ~31; 4 KB ahead was
// worse than 8-16 KB.
//
// The float tiles (float_tiles.h) stream 4 interleaved rows, which share each activation load;
// such a tile asks for the same position of the rows kPrefetchTiles tiles later while it reads
// its own. On the 2-vCPU development VM the hardware prefetcher alone held the interleaved
// q4_0 / q8_0 matvecs of the first sessions at 20-40 % of the read bandwidth; with this,
// 55-100 % (docs/benchmarks.md). The GEMM tiles reuse each weight tile across many tokens and
// do not prefetch.
//
// A one-row stream's line requests are non-temporal (locality hint 0, prefetchnta,
// prefetch_stream_lines): each weight byte is read once a token, and the hint says so (most
// likely the stream then displaces less of what is reused, and its lines leave first).
// TinyLlama-shaped decode, 2 threads, bench llm alternating binaries (twenty-seventh session):
// Q4_K_M decode / weights read 68.8 / 71.0 / 70.4 % with prefetcht1 (hint 2) -> 86.4 / 84.1 /
// 82.8 %, tg128 79-84 -> 98-106 tok/s, when memory read 70-84 GB/s; level when it read 32-45
// GB/s or the VM's arithmetic was slow. Q4_0 equal or higher, Q8_0 level within the noise. The
// same hint on the page starts, or on read_sum's own requests (the limit): no faster. Into L1
// (prefetcht0) had held the repacked matvecs of the eleventh session's Zen 4 VM to 7-9 GB/s a
// thread from memory (L1's few miss buffers, most likely), and into L2 (prefetcht1) had made
// decode 1.6-1.9x faster for q4_0 / q8_0, 1.1-1.2x for q4_K (docs/benchmarks.md); a prefetcht0
// 1 KB ahead beside the non-temporal lines: Q4_K_M decode 62-65 against 75-82 %.
//
// Page starts: the hardware prefetcher follows a stream within a 4 KB page and has to find it
// again on the next one. A request for the first line of each page kPrefetchBytes ahead
// (prefetch_page_starts) restarts it early: a two-thread read of 6.5 MB regions ran 4-30 %
// faster with it than without when memory was slower than ~75 GB/s, as fast at 85-87 GB/s.
// TinyLlama-shaped decode, tokens back to back (bench llm), alternating binaries
// (twenty-fourth session): q4_0_r16 with its line requests and the page starts 52.7-54.2 ->
// 64.4-67.8 GB/s; q8_0_r16 with the page starts alone 53.5-54.7 -> 67.8-69.2 GB/s (a probe
// over the same memory: alone 94-97 % of a plain read, beside its lines 87-95 %; at the 8 KB
// distance of the twenty-fifth session it requests its lines as well, q8_0_r16_tiles.h); Q4_K_M,
// with them beside q6_K's lines and q4_K_r8's slices, decode / weights read 84-87 -> 91-95 % (six
// rounds, read passes 44-49 GB/s; q6_K's alone 88-92 %). The float tiles keep their lines only
// (not measured).
//
// Page starts without the lines (thirty-fifth session): with the avx512 kernels, q4_K_r8's rows of
// whole groups, the q6_K matvec and q4_0_r16's one-token pass request only the page starts (the
// AVX2 kernels keep their lines: forced to AVX2 on the same machine, Q4_K_M decoded slower without
// them). A probe streaming 512 MiB through one kernel with two threads, the library's object code
// linked at 16 code offsets, read_sum's rate in the same rounds as the limit, fast-memory rounds:
// q4_K_r8 (rows of 2048) 72 % with its line requests against 89 % without, q6_K 78 against 89 %,
// q4_0_r16 81 against 93 %, q8_0_r16 79 against 80 % (slow rounds: 95, 96, 97, 102 % against 105,
// 108, 113, 99 %). TinyLlama-shaped Q4_K_M decode, four copies of each binary (below): 76.9-83.2 %
// of the limit against 63.4-73.5 %, higher in 8 of 8 pairs. Q4_0 decode, three copies of each
// binary, four rounds: 83.6 % against 75.4-75.8 %, 12 of 12 runs higher. The others keep their
// lines: q4_K_r8's rows with a short last group (masked loads) streamed at 33-38 % of the limit
// without them, and Q8_0 decoded at 67.8 % without q8_0_r16's against 72.3 % with them (three
// copies, two rounds). Most likely the line requests take the miss buffers that the hardware
// prefetcher would use better; not measured (no performance counters on the VM). Since the
// thirty-sixth session the avx512 q8_0_r16 tiles request the page starts alone too: once their
// inner loop was three instructions per 32 bytes instead of five (q8_0_r16_tiles.h), Q8_0 decoded
// at 83.2 % without the lines against 77.8 % with them (three copies, two rounds, 6 of 6 pairs).
// The thirty-eighth session's VM streamed those passes faster with their lines, by more (Q4_0
// decode 94-100 against 80-85 % of the limit): since then stream_lines(layout) below switches
// them, set by the CPU backend's calibration, each layout on its own since the thirty-ninth
// (q6_K keeps the page starts: level or slower with lines there).
//
// Measuring these choices: on the development VM a binary's decode speed depends on which
// physical pages its code occupies in the page cache. Byte-identical copies of one build decoded
// Q4_K_M at 61-62 % (the file the linker wrote) and 74-81 % (four copies made with cp), the same
// in every run of each file whatever the address space layout. So a comparison of two builds
// runs several copies of each (docs/benchmarks.md, thirty-fifth session).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace oxi::kernels {

inline constexpr size_t kCacheLine = 64;

// The one-token passes that can stream on page-start requests alone (avx512 q4_0_r16 and
// q8_0_r16 over rows of whole groups, q4_K_r8's batched rows; FormatKernels::stream_layout),
// and whether each requests its lines ahead as well. Which reads faster depends on the machine:
// on the thirty-fifth session's VM the page starts alone (TinyLlama-shaped decode +8 to +13
// points of the read limit), on the thirty-eighth's the lines (Q4_0 94-100 % of the limit
// against 80-85 %, Q8_0 94-100 against 85-87 %, Q4_K_M +4; both AMD family 26); and on the
// thirty-ninth's, at the same time, page starts for q4_0_r16 (Q4_0 81-85 against 76-78 %) and
// lines for q4_K_r8 (Q4_K_M 79-83 against 64-73 %). So each layout has its own mode, which the
// CPU backend measures on its first decode steps (backends/cpu/stream_calibration.h) and sets
// here; lines until then. Process-wide; the results do not depend on it.
enum class StreamLayout : uint8_t { kQ4_0R16, kQ8_0R16, kQ4KR8 };
inline constexpr size_t kStreamLayouts = 3;
inline std::atomic<bool> g_stream_lines[kStreamLayouts] = {true, true, true};
inline void set_stream_lines(StreamLayout layout, bool lines) noexcept {
  g_stream_lines[static_cast<size_t>(layout)].store(lines, std::memory_order_relaxed);
}
inline bool stream_lines(StreamLayout layout) noexcept {
  return g_stream_lines[static_cast<size_t>(layout)].load(std::memory_order_relaxed);
}
// How many tiles ahead an interleaved-rows matvec tile prefetches (the rows kPrefetchTiles
// tiles after its own).
inline constexpr size_t kPrefetchTiles = 4;
// How far ahead of its position a one-row pass prefetches: 8 KB since the twenty-fifth session
// (16 KB before). TinyLlama-shaped decode, tokens back to back, alternating binaries, read
// passes at 60-79 GB/s, decode / weights read alone at 8 KB vs 16 KB: q4_0 87.5 vs 85.7 % (six
// rounds each), q8_0 91.5 vs 89.1 %, Q4_K_M 86.9 vs 83.3 % (higher in all 12 q8_0 / Q4_K_M
// pairs); 12 KB about as 8 KB, 4 KB as 16 KB, 32 KB lower (docs/benchmarks.md). read_sum
// keeps 16 KB (kernels/math/read_sum.h).
inline constexpr size_t kPrefetchBytes = 8 * 1024;

// Prefetches [p, p + kSpan) with the given locality hint: one request per cache line, or one
// per call when the caller steps by less than a line (its consecutive calls then touch every
// line).
template <size_t kSpan, int kLocality>
[[gnu::always_inline]] inline void prefetch_lines_hinted(const void* p) noexcept {
  const char* q = static_cast<const char*>(p);
  for (size_t o = 0; o < kSpan || o == 0; o += kCacheLine) __builtin_prefetch(q + o, 0, kLocality);
}

// Into L2 (prefetcht1): the interleaved rows of the float tiles. Non-temporal there, F16
// decode read slower (decode / weights read 57-58 against 61-62 %, three pairs).
template <size_t kSpan>
[[gnu::always_inline]] inline void prefetch_lines(const void* p) noexcept {
  prefetch_lines_hinted<kSpan, 2>(p);
}

// Non-temporal (prefetchnta): a one-row stream, each byte read once (above).
template <size_t kSpan>
[[gnu::always_inline]] inline void prefetch_stream_lines(const void* p) noexcept {
  prefetch_lines_hinted<kSpan, 0>(p);
}

inline constexpr size_t kPageBytes = 4096;

namespace detail {
// a rounded up to a multiple of `to` (a power of two)
constexpr uintptr_t round_up(uintptr_t a, size_t to) noexcept {
  return (a + to - 1) & ~uintptr_t{to - 1};
}
}  // namespace detail

// Requests the first line of every 4 KB page that starts inside [p, p + bytes) (none when no
// page starts there). The avx512 q8_0_r16 tiles ask for a whole row's page starts before the
// row, not for a group's in each group (q8_0_r16_tiles.h). That took ~8 of the ~67
// instructions of a group's step, and Q8_0 decoded at 91.8-93.0 % of the limit against
// 85.5-88.5 % (three sets of three copies, two rounds, 18 of 18 pairs; thirty-sixth session).
// The same for q4_0_r16's one-token pass: 81.4 / 84.1 % against 80.0 / 84.2 %, not kept.
[[gnu::always_inline]] inline void prefetch_page_starts(const void* p, size_t bytes) noexcept {
  const auto at = reinterpret_cast<uintptr_t>(p);
  for (uintptr_t page = detail::round_up(at, kPageBytes); page < at + bytes; page += kPageBytes)
    __builtin_prefetch(reinterpret_cast<const char*>(page), 0, 2);
}

// The same for a step of kSpan bytes: called with the same arguments as prefetch_lines, it asks
// for one line a page instead of every line.
template <size_t kSpan>
[[gnu::always_inline]] inline void prefetch_page_starts(const void* p) noexcept {
  static_assert(kSpan > 0);
  prefetch_page_starts(p, kSpan);
}

// One step of a one-row stream: the lines that start in [p, p + bytes), non-temporal, and the
// first line of a page among them again with hint 2, which restarts the hardware prefetcher on
// the new page. A matvec requests the bytes kPrefetchBytes ahead of each step it takes, so the
// spans of its steps tile the stream and each line is requested once. Before, every line that
// a span touched was requested (prefetch_stream_lines): a line two spans share twice, 5 requests
// per 288-byte q4_0_r16 group of 4.5 lines, 24 per 1152-byte q4_K_r8 group of 18, and the
// page-start loop ran per 144 bytes. In TinyLlama-shaped decode (alternating binaries,
// twenty-eighth session), q4_K_r8 with one request per line, the page start looked for once a
// group and its weights broadcast by one load (q4_k_r8_tiles.h): Q4_K_M decode +3 to +6 points
// of the limit in all four pairs; q8_0_r16 +0.3 to +2.6 (four pairs); q4_0_r16 -5 to +7, +1.4
// on average (seven).
//
// Part `part` of `parts` (a kernel that spreads one step's requests over its inner loop): its
// share of the lines, and the page start with part 0. Each request is request(address, hint)
// with the hint as a std::integral_constant (the tests record them).
namespace detail {
// The page start in [at, at + bytes) with hint 2, by part 0 (bytes <= a page: at most one).
template <class Request>
[[gnu::always_inline]] inline void request_page_start(uintptr_t at, size_t bytes, size_t part,
                                                      Request& request) {
  const uintptr_t page = round_up(at, kPageBytes);
  if (part == 0 && page < at + bytes) request(page, std::integral_constant<int, 2>{});
}
}  // namespace detail

template <class Request>
[[gnu::always_inline]] inline void for_each_stream_request(uintptr_t at, size_t bytes, size_t part,
                                                           size_t parts, Request&& request) {
  const uintptr_t first = detail::round_up(at, kCacheLine);
  const size_t lines = (detail::round_up(at + bytes, kCacheLine) - first) / kCacheLine;
  for (size_t k = lines * part / parts; k < lines * (part + 1) / parts; ++k)
    request(first + k * kCacheLine, std::integral_constant<int, 0>{});
  detail::request_page_start(at, bytes, part, request);
}

// The same for steps of kSpan bytes (<= a page): a fixed count of lines, unrolled.
template <size_t kSpan, size_t kParts = 1, class Request>
[[gnu::always_inline]] inline void for_each_stream_request(uintptr_t at, size_t part,
                                                           Request&& request) {
  static_assert(kSpan > 0 && kSpan <= kPageBytes);
  const uintptr_t first = detail::round_up(at, kCacheLine);
  constexpr size_t kLines = kSpan / kCacheLine;  // lines surely starting in the span
  for (size_t k = kLines * part / kParts; k < kLines * (part + 1) / kParts; ++k)
    request(first + k * kCacheLine, std::integral_constant<int, 0>{});
  if constexpr (kSpan % kCacheLine != 0) {  // and the next, with the last part, if it starts inside
    const uintptr_t last = first + kLines * kCacheLine;
    if (part + 1 == kParts && last < at + kSpan) request(last, std::integral_constant<int, 0>{});
  }
  detail::request_page_start(at, kSpan, part, request);
}

namespace detail {
struct Prefetch {
  template <int kHint>
  [[gnu::always_inline]] void operator()(uintptr_t address,
                                         std::integral_constant<int, kHint>) const noexcept {
    __builtin_prefetch(reinterpret_cast<const char*>(address), 0, kHint);
  }
};
}  // namespace detail

// Requests part `part` of `parts` of the step [p, p + bytes) (for_each_stream_request).
[[gnu::always_inline]] inline void prefetch_stream_part(const void* p, size_t bytes, size_t part,
                                                        size_t parts) noexcept {
  for_each_stream_request(reinterpret_cast<uintptr_t>(p), bytes, part, parts, detail::Prefetch{});
}

// The same for a step of kSpan bytes.
template <size_t kSpan, size_t kParts = 1>
[[gnu::always_inline]] inline void prefetch_stream_part(const void* p, size_t part = 0) noexcept {
  for_each_stream_request<kSpan, kParts>(reinterpret_cast<uintptr_t>(p), part, detail::Prefetch{});
}

// What a one-row stream requests ahead of each step: its lines, its lines and the page starts
// among them, or the page starts alone (above: which kernel requests what).
enum class StreamRequests { kLines, kLinesAndPageStarts, kPageStarts };

// Part `part` of `kParts` of the step [p, p + kSpan) with the requests R (the page start by
// part 0; kLines only in one part).
template <StreamRequests R, size_t kSpan, size_t kParts = 1>
[[gnu::always_inline]] inline void prefetch_stream_step(const void* p, size_t part = 0) noexcept {
  if constexpr (R == StreamRequests::kLines) {
    static_assert(kParts == 1);
    prefetch_stream_lines<kSpan>(p);
  } else if constexpr (R == StreamRequests::kLinesAndPageStarts) {
    prefetch_stream_part<kSpan, kParts>(p, part);
  } else if (part == 0) {
    prefetch_page_starts<kSpan>(p);
  }
}

}  // namespace oxi::kernels
