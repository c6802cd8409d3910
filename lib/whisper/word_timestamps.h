// Word-level timestamps from cross-attention, as openai-whisper's timing.py computes them:
// re-run the decoder over the window's text with the alignment heads recorded, normalise each
// head's weights over the tokens (mean / standard deviation per audio position), median-filter
// them along time (width 7), average the heads, and align tokens to audio frames with dynamic
// time warping on the negated matrix. Words are the token-to-word split (spaces and punctuation,
// or Unicode characters for languages written without spaces), with leading punctuation merged
// into the next word and trailing punctuation into the previous one.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/whisper/transcript.h"
#include "lib/whisper/whisper_state.h"

namespace oxi::whisper {

// openai-whisper's transcribe() defaults.
inline constexpr std::string_view kPrependPunctuations = "\"'“¿([{-";
inline constexpr std::string_view kAppendPunctuations = "\"'.。,，!！?？:：”)]}、";

struct WordTiming {
  std::string word;
  std::vector<int32_t> tokens;
  double start = 0.0;  // seconds from the window start
  double end = 0.0;
  float probability = 0.0f;  // mean probability of its tokens
};

// Median filter of width `width` (odd) along each row of a rows x cols matrix, with reflect
// padding (scipy / openai median_filter); rows of cols <= width / 2 are left as they are.
void median_filter_rows(std::span<float> x, size_t rows, size_t cols, int width);

// Dynamic time warping of an n x m cost matrix (row-major): the monotonic path from (0, 0) to
// (n - 1, m - 1) of least total cost, as (row, column) pairs in order. Ties prefer the diagonal
// step only when strictly cheaper, then the step down, then the step right (openai's dtw_cpu).
struct DtwPath {
  std::vector<int> rows;
  std::vector<int> cols;
};
DtwPath dtw(std::span<const float> cost, size_t n, size_t m);

// Tokenizer.split_to_word_tokens: words and their tokens. `language` picks the rule: zh, ja,
// th, lo, my, yue split between Unicode characters, others on spaces and punctuation.
void split_to_word_tokens(const WhisperModel& model, std::span<const int32_t> tokens,
                          std::string_view language, std::vector<std::string>& words,
                          std::vector<std::vector<int32_t>>& word_tokens);

// merge_punctuations: a word that is leading punctuation (with its space) joins the next word;
// trailing punctuation joins the previous word. Merged words are left empty, not removed.
void merge_punctuations(std::vector<WordTiming>& words,
                        std::string_view prepended = kPrependPunctuations,
                        std::string_view appended = kAppendPunctuations);

// find_alignment over the window encoded in `state` (num_frames: mel frames of real audio in
// it). Words end with their timings relative to the window start. Overwrites the decoder cache.
std::vector<WordTiming> find_alignment(WhisperState& state, std::span<const int32_t> sot_sequence,
                                       std::span<const int32_t> text_tokens, size_t num_frames,
                                       std::string_view language, int median_filter_width = 7);

// add_word_timestamps: aligns one window's segments (their text tokens in
// `tokens_per_segment`), fills Segment::words with absolute times (rounded to 10 ms), and
// adjusts segment bounds to their words. `last_speech_timestamp` carries across windows.
void add_word_timestamps(WhisperState& state, std::span<const int32_t> sot_sequence,
                         std::span<Segment> segments,
                         const std::vector<std::vector<int32_t>>& tokens_per_segment,
                         size_t num_frames, double time_offset, std::string_view language,
                         double& last_speech_timestamp);

}  // namespace oxi::whisper
