// The "compression ratio" openai-whisper uses to detect repetitive (looping) decodes:
// len(text) / len(zlib.compress(text)). zlib itself is not a dependency of the project, so the
// compressed size comes from a DEFLATE size estimator: LZ77 with hash chains and lazy matching
// (zlib level-9 parameters: 32 KiB window, chains of 4096, matches of 3..258), then the cheapest
// of a stored, fixed-Huffman or dynamic-Huffman block (length-limited optimal codes, zlib's
// run-length coding of the code lengths), plus zlib's 2-byte header and 4-byte Adler-32.
//
// Measured against CPython's zlib.compress (tests/whisper_decode/compression_ratio_test.cpp holds
// the strings and the command): equal sizes on English sentences, repeated words and binary
// data; the estimate is never more than a few bytes off, which moves a ratio near the 2.4
// threshold by less than 0.05.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace oxi::whisper {

// Bytes zlib.compress(data) would produce (one DEFLATE block inside the zlib wrapper).
size_t zlib_compressed_size(std::span<const uint8_t> data);

// len(utf8 text) / zlib_compressed_size(text): 0 for empty text, large for repetitive text.
double compression_ratio(std::string_view text);

}  // namespace oxi::whisper
