#include "lib/whisper/compression_ratio.h"

#include <algorithm>
#include <array>
#include <vector>

namespace oxi::whisper {
namespace {

// zlib's level-9 configuration (deflate.c configuration_table) and format limits.
constexpr size_t kWindow = 32768;
constexpr size_t kMaxDistance = kWindow - 262;  // MAX_DIST: the window less the lookahead
constexpr int kMinMatch = 3, kMaxMatch = 258;
constexpr int kGoodLength = 32, kMaxLazy = 258, kNiceLength = 258, kMaxChain = 4096;
constexpr size_t kTooFar = 4096;  // 3-byte matches farther than this cost more than literals

constexpr std::array<int, 29> kLengthBase = {3,  4,  5,  6,   7,   8,   9,   10,  11, 13,
                                             15, 17, 19, 23,  27,  31,  35,  43,  51, 59,
                                             67, 83, 99, 115, 131, 163, 195, 227, 258};
constexpr std::array<int, 29> kLengthExtra = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                              2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
constexpr std::array<int, 30> kDistBase = {
    1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
    193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
constexpr std::array<int, 30> kDistExtra = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                            6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
// The order in which a dynamic block sends the code-length code lengths (RFC 1951 3.2.7).
constexpr std::array<int, 19> kCodeLengthOrder = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                                  11, 4,  12, 3, 13, 2, 14, 1, 15};

constexpr int kLitCodes = 286, kDistCodes = 30, kEndOfBlock = 256;

struct SymbolStats {
  std::vector<uint64_t> lit = std::vector<uint64_t>(kLitCodes, 0);
  std::vector<uint64_t> dist = std::vector<uint64_t>(kDistCodes, 0);
  uint64_t extra_bits = 0;

  void literal(uint8_t b) { ++lit[b]; }
  void match(int length, size_t distance) {
    const int lc = static_cast<int>(
        std::upper_bound(kLengthBase.begin(), kLengthBase.end(), length) - kLengthBase.begin() - 1);
    ++lit[257 + lc];
    extra_bits += kLengthExtra[lc];
    const int dc = static_cast<int>(
        std::upper_bound(kDistBase.begin(), kDistBase.end(), static_cast<int>(distance)) -
        kDistBase.begin() - 1);
    ++dist[dc];
    extra_bits += kDistExtra[dc];
  }
};

// LZ77 parse with hash chains and one-step lazy matching, as zlib's deflate_slow does it.
SymbolStats lz77(std::span<const uint8_t> data) {
  SymbolStats stats;
  const size_t n = data.size();
  constexpr size_t kNone = static_cast<size_t>(-1);
  constexpr size_t kHashSize = 1 << 15;
  std::vector<size_t> head(kHashSize, kNone), prev(n, kNone);
  const auto hash_at = [&](size_t i) {
    return ((static_cast<size_t>(data[i]) << 10) ^ (static_cast<size_t>(data[i + 1]) << 5) ^
            data[i + 2]) &
           (kHashSize - 1);
  };
  const auto insert = [&](size_t i) {
    if (i + kMinMatch > n) return;
    const size_t h = hash_at(i);
    prev[i] = head[h];
    head[h] = i;
  };
  // Longest match at i among earlier positions, longer than `at_least`; 0 if none.
  const auto longest_match = [&](size_t i, int at_least, size_t& distance) {
    if (i + kMinMatch > n) return 0;
    const int max_len = static_cast<int>(std::min<size_t>(kMaxMatch, n - i));
    int chain = at_least >= kGoodLength ? kMaxChain >> 2 : kMaxChain;
    int best = 0;
    // zlib's chains use position 0 as their end marker (NIL), so it is never a match source.
    for (size_t c = head[hash_at(i)]; c != kNone && c != 0 && i - c <= kMaxDistance && chain-- > 0;
         c = prev[c]) {
      int len = 0;
      while (len < max_len && data[c + len] == data[i + len]) ++len;
      if (len > best && len > at_least) {
        best = len;
        distance = i - c;
        if (len >= kNiceLength) break;
      }
    }
    if (best == kMinMatch && distance > kTooFar) best = 0;
    return best >= kMinMatch ? best : 0;
  };

  bool have_prev = false;  // zlib's match_available: data[i - 1] waits for a decision
  int prev_len = 0;
  size_t prev_dist = 0;
  size_t i = 0;
  while (i < n) {
    size_t dist = 0;
    const int len = (have_prev && prev_len >= kMaxLazy) ? 0 : longest_match(i, prev_len, dist);
    insert(i);
    if (have_prev && prev_len >= kMinMatch && len <= prev_len) {
      stats.match(prev_len, prev_dist);  // the match that started at i - 1 wins
      const size_t end = i - 1 + static_cast<size_t>(prev_len);
      for (size_t k = i + 1; k < end; ++k) insert(k);
      i = end;
      have_prev = false;
      prev_len = 0;
    } else {
      if (have_prev) stats.literal(data[i - 1]);
      have_prev = true;
      prev_len = len;
      prev_dist = dist;
      ++i;
    }
  }
  if (have_prev) stats.literal(data[n - 1]);
  ++stats.lit[kEndOfBlock];
  return stats;
}

// Optimal code lengths of at most `limit` bits (package-merge). zlib's rule for degenerate
// trees: fewer than two used symbols get forced to two codes of one bit.
std::vector<int> code_lengths(std::vector<uint64_t> freq, int limit) {
  std::vector<int> lengths(freq.size(), 0);
  std::vector<size_t> used;
  for (size_t s = 0; s < freq.size(); ++s)
    if (freq[s] > 0) used.push_back(s);
  if (used.size() < 2) {
    // zlib's build_tree adds symbols max_code + 1 (while below 2) or 0, with one-bit codes.
    int max_code = used.empty() ? -1 : static_cast<int>(used[0]);
    while (used.size() < 2) used.push_back(max_code < 2 ? static_cast<size_t>(++max_code) : 0);
    for (size_t s : used) lengths[s] = 1;
    return lengths;
  }
  std::sort(used.begin(), used.end(),
            [&](size_t a, size_t b) { return freq[a] != freq[b] ? freq[a] < freq[b] : a < b; });
  struct Item {
    uint64_t weight;
    std::vector<size_t> leaves;
  };
  std::vector<Item> leaves;
  for (size_t s : used) leaves.push_back({freq[s], {s}});
  std::vector<Item> packages;
  for (int level = limit; level >= 1; --level) {
    std::vector<Item> merged;
    merged.reserve(leaves.size() + packages.size());
    std::merge(leaves.begin(), leaves.end(), packages.begin(), packages.end(),
               std::back_inserter(merged),
               [](const Item& a, const Item& b) { return a.weight < b.weight; });
    if (level == 1) {
      for (size_t k = 0; k < 2 * used.size() - 2; ++k)
        for (size_t s : merged[k].leaves) ++lengths[s];
      break;
    }
    packages.clear();
    for (size_t k = 0; k + 1 < merged.size(); k += 2) {
      Item p{merged[k].weight + merged[k + 1].weight, merged[k].leaves};
      p.leaves.insert(p.leaves.end(), merged[k + 1].leaves.begin(), merged[k + 1].leaves.end());
      packages.push_back(std::move(p));
    }
  }
  return lengths;
}

uint64_t cost(const std::vector<uint64_t>& freq, const std::vector<int>& lengths) {
  uint64_t bits = 0;
  for (size_t s = 0; s < freq.size(); ++s) bits += freq[s] * static_cast<uint64_t>(lengths[s]);
  return bits;
}

// zlib's scan_tree: run-length statistics of one tree's code lengths (symbols 16, 17, 18).
void scan_lengths(const std::vector<int>& lengths, int count_codes, std::vector<uint64_t>& freq) {
  int prev = -1, next = lengths[0], count = 0;
  int max_count = next == 0 ? 138 : 7, min_count = next == 0 ? 3 : 4;
  for (int n = 0; n < count_codes; ++n) {
    const int cur = next;
    next = n + 1 < count_codes ? lengths[n + 1] : -1;
    if (++count < max_count && cur == next) continue;
    if (count < min_count)
      freq[cur] += count;
    else if (cur != 0) {
      if (cur != prev) ++freq[cur];
      ++freq[16];
    } else if (count <= 10)
      ++freq[17];
    else
      ++freq[18];
    count = 0;
    prev = cur;
    if (next == 0)
      max_count = 138, min_count = 3;
    else if (cur == next)
      max_count = 6, min_count = 3;
    else
      max_count = 7, min_count = 4;
  }
}

int used_codes(const std::vector<int>& lengths, int at_least) {
  int count = static_cast<int>(lengths.size());
  while (count > at_least && lengths[count - 1] == 0) --count;
  return count;
}

uint64_t dynamic_block_bits(const SymbolStats& s) {
  const std::vector<int> lit = code_lengths(s.lit, 15);
  const std::vector<int> dist = code_lengths(s.dist, 15);
  const int hlit = used_codes(lit, 257), hdist = used_codes(dist, 1);
  std::vector<uint64_t> cl_freq(19, 0);
  scan_lengths(lit, hlit, cl_freq);
  scan_lengths(dist, hdist, cl_freq);
  const std::vector<int> cl = code_lengths(cl_freq, 7);
  int hclen = 19;
  while (hclen > 4 && cl[kCodeLengthOrder[hclen - 1]] == 0) --hclen;
  const uint64_t header = 5 + 5 + 4 + 3 * static_cast<uint64_t>(hclen) + cost(cl_freq, cl) +
                          2 * cl_freq[16] + 3 * cl_freq[17] + 7 * cl_freq[18];
  return 3 + header + cost(s.lit, lit) + cost(s.dist, dist) + s.extra_bits;
}

uint64_t fixed_block_bits(const SymbolStats& s) {
  uint64_t bits = 3 + s.extra_bits;
  for (int c = 0; c < kLitCodes; ++c)
    bits += s.lit[c] * (c < 144 ? 8 : c < 256 ? 9 : c < 280 ? 7 : 8);
  for (int c = 0; c < kDistCodes; ++c) bits += s.dist[c] * 5;
  return bits;
}

}  // namespace

size_t zlib_compressed_size(std::span<const uint8_t> data) {
  constexpr size_t kZlibWrapper = 2 + 4;  // CMF/FLG header, Adler-32 trailer
  const SymbolStats stats = lz77(data);
  const size_t fixed = (fixed_block_bits(stats) + 7) / 8;
  const size_t dynamic = (dynamic_block_bits(stats) + 7) / 8;
  // A stored block: 3 header bits padded to a byte, LEN and NLEN, the bytes (one block up to
  // 65535 bytes; longer inputs need one 5-byte header per block).
  const size_t stored = data.size() + 5 * std::max<size_t>(1, (data.size() + 65534) / 65535);
  return kZlibWrapper + std::min({fixed, dynamic, stored});
}

double compression_ratio(std::string_view text) {
  if (text.empty()) return 0.0;
  const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
  return static_cast<double>(text.size()) /
         static_cast<double>(zlib_compressed_size({bytes, text.size()}));
}

}  // namespace oxi::whisper
