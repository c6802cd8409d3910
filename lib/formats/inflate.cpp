// A small canonical-Huffman inflater in the style of zlib's "puff": decodes one symbol at a
// time, bit by bit. Clear and bounds-checked rather than fast; .npz entries are small.
#include "lib/formats/inflate.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "lib/core/error.h"

namespace oxi::formats {

namespace {

constexpr int kMaxBits = 15;

struct Huffman {
  uint16_t count[kMaxBits + 1] = {};  // codes of each length
  uint16_t symbol[320] = {};          // symbols ordered by code
};

class Inflater {
 public:
  Inflater(std::span<const std::byte> in, size_t expected, std::string_view context)
      : in_(in), expected_(expected), context_(context) {
    out_.reserve(std::min(expected, in.size() * 8 + 1024));  // the declared size may lie
  }

  std::vector<std::byte> run() {
    bool last = false;
    while (!last) {
      last = bits(1) != 0;
      switch (bits(2)) {
        case 0:
          stored();
          break;
        case 1:
          fixed();
          break;
        case 2:
          dynamic();
          break;
        default:
          fail("invalid block type 3");
      }
    }
    if (out_.size() != expected_) {
      fail("inflated to " + std::to_string(out_.size()) + " bytes, expected " +
           std::to_string(expected_));
    }
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw Error(context_, "corrupt deflate stream: " + problem);
  }

  uint32_t bits(int need) {
    uint32_t val = bitbuf_;
    while (bitcnt_ < need) {
      if (pos_ >= in_.size()) fail("unexpected end of input");
      val |= static_cast<uint32_t>(in_[pos_++]) << bitcnt_;
      bitcnt_ += 8;
    }
    bitbuf_ = val >> need;
    bitcnt_ -= need;
    return val & ((1u << need) - 1);
  }

  void emit(std::byte b) {
    if (out_.size() >= expected_) fail("output larger than the declared size");
    out_.push_back(b);
  }

  void stored() {
    bitbuf_ = 0;
    bitcnt_ = 0;  // the rest of the current byte is padding
    if (in_.size() - pos_ < 4) fail("unexpected end of input");
    const auto byte = [&](size_t i) { return static_cast<uint32_t>(in_[pos_ + i]); };
    const uint32_t len = byte(0) | (byte(1) << 8);
    const uint32_t nlen = byte(2) | (byte(3) << 8);
    pos_ += 4;
    if (len != (~nlen & 0xFFFF)) fail("stored block length check failed");
    if (in_.size() - pos_ < len) fail("unexpected end of input");
    for (uint32_t i = 0; i < len; ++i) emit(in_[pos_ + i]);
    pos_ += len;
  }

  // Builds the decoding table from code lengths; false when over-subscribed.
  static bool build(Huffman& h, const uint16_t* lengths, int n) {
    for (auto& c : h.count) c = 0;
    for (int s = 0; s < n; ++s) h.count[lengths[s]]++;
    if (h.count[0] == n) return true;  // no codes: decoding any symbol fails
    int left = 1;
    for (int len = 1; len <= kMaxBits; ++len) {
      left <<= 1;
      left -= h.count[len];
      if (left < 0) return false;
    }
    uint16_t offs[kMaxBits + 1];
    offs[1] = 0;
    for (int len = 1; len < kMaxBits; ++len) offs[len + 1] = offs[len] + h.count[len];
    for (int s = 0; s < n; ++s) {
      if (lengths[s] != 0) h.symbol[offs[lengths[s]]++] = static_cast<uint16_t>(s);
    }
    return true;
  }

  int decode(const Huffman& h) {
    int code = 0, first = 0, index = 0;
    for (int len = 1; len <= kMaxBits; ++len) {
      code |= static_cast<int>(bits(1));
      const int count = h.count[len];
      if (code - count < first) return h.symbol[index + (code - first)];
      index += count;
      first += count;
      first <<= 1;
      code <<= 1;
    }
    fail("invalid Huffman code");
  }

  void codes(const Huffman& lencode, const Huffman& distcode) {
    static constexpr uint16_t kLenBase[29] = {3,  4,  5,  6,   7,   8,   9,   10,  11, 13,
                                              15, 17, 19, 23,  27,  31,  35,  43,  51, 59,
                                              67, 83, 99, 115, 131, 163, 195, 227, 258};
    static constexpr uint8_t kLenExtra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                              2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
    static constexpr uint16_t kDistBase[30] = {
        1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
        193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
    static constexpr uint8_t kDistExtra[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                               6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
    for (;;) {
      int symbol = decode(lencode);
      if (symbol < 256) {
        emit(static_cast<std::byte>(symbol));
      } else if (symbol == 256) {
        return;
      } else {
        symbol -= 257;
        if (symbol >= 29) fail("invalid length symbol");
        const size_t len = kLenBase[symbol] + bits(kLenExtra[symbol]);
        const int dsym = decode(distcode);
        if (dsym >= 30) fail("invalid distance symbol");
        const size_t dist = kDistBase[dsym] + bits(kDistExtra[dsym]);
        if (dist > out_.size()) fail("distance reaches before the start of the output");
        for (size_t i = 0; i < len; ++i) emit(out_[out_.size() - dist]);
      }
    }
  }

  void fixed() {
    if (!fixed_built_) {
      uint16_t lengths[288 + 30];
      int s = 0;
      for (; s < 144; ++s) lengths[s] = 8;
      for (; s < 256; ++s) lengths[s] = 9;
      for (; s < 280; ++s) lengths[s] = 7;
      for (; s < 288; ++s) lengths[s] = 8;
      build(fixed_len_, lengths, 288);
      for (s = 0; s < 30; ++s) lengths[s] = 5;
      build(fixed_dist_, lengths, 30);
      fixed_built_ = true;
    }
    codes(fixed_len_, fixed_dist_);
  }

  void dynamic() {
    static constexpr uint8_t kOrder[19] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                           11, 4,  12, 3, 13, 2, 14, 1, 15};
    const int nlen = static_cast<int>(bits(5)) + 257;
    const int ndist = static_cast<int>(bits(5)) + 1;
    const int ncode = static_cast<int>(bits(4)) + 4;
    if (nlen > 286 || ndist > 30) fail("bad code counts");
    uint16_t lengths[320] = {};
    for (int i = 0; i < ncode; ++i) lengths[kOrder[i]] = static_cast<uint16_t>(bits(3));
    Huffman lencode, distcode;
    if (!build(lencode, lengths, 19)) fail("bad code-length code");
    int index = 0;
    while (index < nlen + ndist) {
      int symbol = decode(lencode);
      if (symbol < 16) {
        lengths[index++] = static_cast<uint16_t>(symbol);
        continue;
      }
      uint16_t len = 0;
      int repeat;
      if (symbol == 16) {
        if (index == 0) fail("repeat with no previous length");
        len = lengths[index - 1];
        repeat = 3 + static_cast<int>(bits(2));
      } else if (symbol == 17) {
        repeat = 3 + static_cast<int>(bits(3));
      } else {
        repeat = 11 + static_cast<int>(bits(7));
      }
      if (index + repeat > nlen + ndist) fail("too many code lengths");
      while (repeat--) lengths[index++] = len;
    }
    if (lengths[256] == 0) fail("no end-of-block code");
    if (!build(lencode, lengths, nlen)) fail("bad literal/length code");
    if (!build(distcode, lengths + nlen, ndist)) fail("bad distance code");
    codes(lencode, distcode);
  }

  std::span<const std::byte> in_;
  size_t pos_ = 0;
  uint32_t bitbuf_ = 0;
  int bitcnt_ = 0;
  size_t expected_;
  std::string_view context_;
  std::vector<std::byte> out_;
  Huffman fixed_len_, fixed_dist_;
  bool fixed_built_ = false;
};

}  // namespace

std::vector<std::byte> inflate_raw(std::span<const std::byte> in, size_t expected_size,
                                   std::string_view context) {
  return Inflater(in, expected_size, context).run();
}

}  // namespace oxi::formats
