// llama.cpp's file of a base model's log-probabilities (llama-perplexity --kl-divergence-base),
// written and read here so that a base computed by either tool serves the other:
//
//   "_logits_", then little-endian int32 n_ctx, n_vocab, n_chunk and the n_chunk x n_ctx text
//   tokens; then, chunk after chunk, one row per scored position (n_ctx - 1 - n_ctx/2 a chunk,
//   perplexity.h) of 2 x ((n_vocab + 1) / 2) + 4 uint16: the floats scale and min_log_prob,
//   then each token's log-probability as min_log_prob + scale x q (q: 16 bits, 0 for tokens
//   more than 16 nats below the top one), padded to an even count.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <vector>

namespace oxi::llm {

// One row's uint16 count for a vocabulary.
size_t log_prob_row_size(size_t n_vocab);
// The row of `logits` (llama.cpp's rounding: to nearest, ties to even).
void encode_log_prob_row(std::span<const float> logits, std::span<uint16_t> row);
// The log-probabilities a row holds (n_vocab of them).
void decode_log_prob_row(std::span<const uint16_t> row, std::span<float> log_probs);

class LogProbWriter {
 public:
  // tokens: the n_chunk x n_ctx tokens scored (as in the text, before BOS replaces a chunk's
  // first). Throws oxi::Error naming the file when it cannot be written.
  LogProbWriter(const std::filesystem::path& file, size_t n_ctx, size_t n_vocab, size_t n_chunk,
                std::span<const int32_t> tokens);
  // The next scored position's logits.
  void add(std::span<const float> logits);
  // Checks that every row was added and flushes; throws oxi::Error otherwise.
  void finish();

 private:
  std::filesystem::path file_;
  std::ofstream out_;
  size_t n_vocab_, rows_left_;
  std::vector<uint16_t> row_;
};

class LogProbReader {
 public:
  // Reads the header and tokens; throws oxi::Error naming the file when it is not such a file
  // or its size does not match the header.
  explicit LogProbReader(const std::filesystem::path& file);
  size_t n_ctx() const { return n_ctx_; }
  size_t n_vocab() const { return n_vocab_; }
  size_t n_chunk() const { return n_chunk_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  // The next row's log-probabilities (n_vocab).
  void next(std::span<float> log_probs);

 private:
  std::filesystem::path file_;
  std::ifstream in_;
  size_t n_ctx_ = 0, n_vocab_ = 0, n_chunk_ = 0;
  std::vector<int32_t> tokens_;
  std::vector<uint16_t> row_;
};

}  // namespace oxi::llm
