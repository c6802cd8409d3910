#include "lib/llm/log_prob_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "lib/core/error.h"

namespace oxi::llm {
namespace {

constexpr char kMagic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};
// Log-probabilities this far below the top one are not told apart (llama.cpp's choice).
constexpr float kRange = 16.0f;

}  // namespace

size_t log_prob_row_size(size_t n_vocab) {
  return 2 * ((n_vocab + 1) / 2) + 4;
}

void encode_log_prob_row(std::span<const float> logits, std::span<uint16_t> row) {
  const auto [lo, hi] = std::minmax_element(logits.begin(), logits.end());
  const float max_logit = *hi;
  const float min_logit = std::max(*lo, max_logit - kRange);
  double sum = 0;
  for (float l : logits) sum += std::exp(l - max_logit);
  const auto log_sum = static_cast<float>(std::log(sum));
  const float header[2] = {(max_logit - min_logit) / 65535.0f, min_logit - max_logit - log_sum};
  std::memcpy(row.data(), header, sizeof header);
  std::fill(row.begin() + 4, row.end(), uint16_t{0});
  if (header[0] == 0) return;
  const float inverse = 1.0f / header[0];
  for (size_t i = 0; i < logits.size(); ++i)
    if (logits[i] > min_logit)
      row[4 + i] = static_cast<uint16_t>(std::nearbyint(inverse * (logits[i] - min_logit)));
}

void decode_log_prob_row(std::span<const uint16_t> row, std::span<float> log_probs) {
  float header[2];
  std::memcpy(header, row.data(), sizeof header);
  for (size_t i = 0; i < log_probs.size(); ++i) log_probs[i] = header[0] * row[4 + i] + header[1];
}

LogProbWriter::LogProbWriter(const std::filesystem::path& file, size_t n_ctx, size_t n_vocab,
                             size_t n_chunk, std::span<const int32_t> tokens)
    : file_(file),
      out_(file, std::ios::binary | std::ios::trunc),
      n_vocab_(n_vocab),
      rows_left_(n_chunk * (n_ctx - 1 - n_ctx / 2)),
      row_(log_prob_row_size(n_vocab)) {
  if (!out_) throw Error(file.string(), "cannot create the log-probability file");
  if (tokens.size() != n_chunk * n_ctx)
    throw Error(file.string(), "expected n_chunk x n_ctx tokens");
  constexpr size_t kMax = std::numeric_limits<int32_t>::max();
  if (n_ctx > kMax || n_vocab > kMax || n_chunk > kMax)
    throw Error(file.string(), "sizes beyond int32");
  const int32_t header[3] = {static_cast<int32_t>(n_ctx), static_cast<int32_t>(n_vocab),
                             static_cast<int32_t>(n_chunk)};
  out_.write(kMagic, sizeof kMagic);
  out_.write(reinterpret_cast<const char*>(header), sizeof header);
  out_.write(reinterpret_cast<const char*>(tokens.data()),
             static_cast<std::streamsize>(tokens.size_bytes()));
}

void LogProbWriter::add(std::span<const float> logits) {
  if (logits.size() != n_vocab_ || rows_left_ == 0)
    throw Error(file_.string(), "a log-probability row beyond the header's count or vocabulary");
  encode_log_prob_row(logits, row_);
  out_.write(reinterpret_cast<const char*>(row_.data()),
             static_cast<std::streamsize>(row_.size() * sizeof(uint16_t)));
  --rows_left_;
}

void LogProbWriter::finish() {
  out_.flush();
  if (rows_left_ != 0)
    throw Error(file_.string(), std::to_string(rows_left_) + " log-probability rows missing");
  if (!out_) throw Error(file_.string(), "cannot write the log-probability file");
}

LogProbReader::LogProbReader(const std::filesystem::path& file)
    : file_(file), in_(file, std::ios::binary) {
  if (!in_) throw Error(file.string(), "cannot open the log-probability file");
  char magic[sizeof kMagic];
  int32_t header[3];
  in_.read(magic, sizeof magic);
  in_.read(reinterpret_cast<char*>(header), sizeof header);
  if (!in_ || std::memcmp(magic, kMagic, sizeof kMagic) != 0)
    throw Error(file.string(),
                "not a log-probability file (llama-perplexity's "
                "--kl-divergence-base: it starts with _logits_)");
  if (header[0] < 4 || header[1] < 1 || header[2] < 1)
    throw Error(file.string(), "bad sizes in the header (n_ctx " + std::to_string(header[0]) +
                                   ", n_vocab " + std::to_string(header[1]) + ", n_chunk " +
                                   std::to_string(header[2]) + ")");
  n_ctx_ = static_cast<size_t>(header[0]);
  n_vocab_ = static_cast<size_t>(header[1]);
  n_chunk_ = static_cast<size_t>(header[2]);
  const uintmax_t size = std::filesystem::file_size(file);
  const uintmax_t rows = static_cast<uintmax_t>(n_chunk_) * (n_ctx_ - 1 - n_ctx_ / 2);
  const uintmax_t row_bytes = log_prob_row_size(n_vocab_) * sizeof(uint16_t);
  // (header values so large that the sizes below would overflow cannot fit the file either)
  if (static_cast<uintmax_t>(n_chunk_) * n_ctx_ > size / sizeof(int32_t) || rows > size / row_bytes)
    throw Error(file.string(), "its header says more than the file holds");
  const uintmax_t want = sizeof kMagic + sizeof header +
                         static_cast<uintmax_t>(n_chunk_) * n_ctx_ * sizeof(int32_t) +
                         rows * row_bytes;
  if (size != want)
    throw Error(file.string(), "its size (" + std::to_string(size) +
                                   " bytes) is not what its "
                                   "header says (" +
                                   std::to_string(want) + ")");
  tokens_.resize(n_chunk_ * n_ctx_);
  in_.read(reinterpret_cast<char*>(tokens_.data()),
           static_cast<std::streamsize>(tokens_.size() * sizeof(int32_t)));
  row_.resize(log_prob_row_size(n_vocab_));
  if (!in_) throw Error(file.string(), "cannot read its tokens");
}

void LogProbReader::next(std::span<float> log_probs) {
  in_.read(reinterpret_cast<char*>(row_.data()),
           static_cast<std::streamsize>(row_.size() * sizeof(uint16_t)));
  if (!in_) throw Error(file_.string(), "cannot read a log-probability row");
  decode_log_prob_row(row_, log_probs.first(std::min(log_probs.size(), n_vocab_)));
}

}  // namespace oxi::llm
