#include "lib/whisper/word_timestamps.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "lib/whisper/log_mel.h"

namespace oxi::whisper {
namespace {

constexpr std::string_view kPunctuation =
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";  // string.punctuation

std::string_view strip(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// Python's `a in b` for strings: a substring test (the empty string is in every string).
bool python_in(std::string_view needle, std::string_view haystack) {
  return haystack.find(needle) != std::string_view::npos;
}

constexpr char32_t kReplacement = 0xFFFD;

// bytes.decode("utf-8", errors="replace"): each maximal ill-formed subsequence becomes one
// U+FFFD, as Python (and the Unicode standard's recommended practice) does it.
std::u32string decode_utf8_replace(std::string_view bytes) {
  std::u32string out;
  const size_t n = bytes.size();
  size_t i = 0;
  while (i < n) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    if (b < 0x80) {
      out += static_cast<char32_t>(b);
      ++i;
      continue;
    }
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
    if (b >= 0xC2 && b <= 0xDF)
      len = 2;
    else if (b == 0xE0)
      len = 3, lo = 0xA0;
    else if (b >= 0xE1 && b <= 0xEC)
      len = 3;
    else if (b == 0xED)
      len = 3, hi = 0x9F;
    else if (b >= 0xEE && b <= 0xEF)
      len = 3;
    else if (b == 0xF0)
      len = 4, lo = 0x90;
    else if (b >= 0xF1 && b <= 0xF3)
      len = 4;
    else if (b == 0xF4)
      len = 4, hi = 0x8F;
    if (len == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    char32_t cp = b & (0xFF >> (len + 1));
    size_t k = 1;
    for (; k < len && i + k < n; ++k) {
      const auto c = static_cast<unsigned char>(bytes[i + k]);
      const unsigned char min = k == 1 ? lo : 0x80, max = k == 1 ? hi : 0xBF;
      if (c < min || c > max) break;
      cp = (cp << 6) | (c & 0x3F);
    }
    if (k == len)
      out += cp;
    else
      out += kReplacement;
    i += k;
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double round2(double x) {
  return std::round(x * 100.0) / 100.0;
}

}  // namespace

void median_filter_rows(std::span<float> x, size_t rows, size_t cols, int width) {
  const size_t pad = static_cast<size_t>(width / 2);
  if (width <= 1 || cols <= pad) return;
  std::vector<float> padded(cols + 2 * pad), window(static_cast<size_t>(width));
  for (size_t r = 0; r < rows; ++r) {
    float* row = x.data() + r * cols;
    for (size_t i = 0; i < padded.size(); ++i) {
      // reflect: index -k -> k, cols - 1 + k -> cols - 1 - k
      const ptrdiff_t j = static_cast<ptrdiff_t>(i) - static_cast<ptrdiff_t>(pad);
      const ptrdiff_t last = static_cast<ptrdiff_t>(cols) - 1;
      const ptrdiff_t k = j < 0 ? -j : j > last ? 2 * last - j : j;
      padded[i] = row[std::clamp<ptrdiff_t>(k, 0, last)];
    }
    for (size_t c = 0; c < cols; ++c) {
      std::copy(padded.begin() + c, padded.begin() + c + width, window.begin());
      std::nth_element(window.begin(), window.begin() + width / 2, window.end());
      row[c] = window[width / 2];
    }
  }
}

DtwPath dtw(std::span<const float> x, size_t n, size_t m) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const size_t w = m + 1;
  std::vector<float> cost((n + 1) * w, kInf);
  std::vector<int8_t> trace((n + 1) * w, -1);
  cost[0] = 0.0f;
  for (size_t j = 1; j <= m; ++j) {
    for (size_t i = 1; i <= n; ++i) {
      const float c0 = cost[(i - 1) * w + j - 1], c1 = cost[(i - 1) * w + j],
                  c2 = cost[i * w + j - 1];
      float c;
      int8_t t;
      if (c0 < c1 && c0 < c2)
        c = c0, t = 0;
      else if (c1 < c0 && c1 < c2)
        c = c1, t = 1;
      else
        c = c2, t = 2;
      cost[i * w + j] = x[(i - 1) * m + j - 1] + c;
      trace[i * w + j] = t;
    }
  }
  for (size_t j = 0; j <= m; ++j) trace[j] = 2;
  for (size_t i = 0; i <= n; ++i) trace[i * w] = 1;
  DtwPath path;
  size_t i = n, j = m;
  while (i > 0 || j > 0) {
    path.rows.push_back(static_cast<int>(i) - 1);
    path.cols.push_back(static_cast<int>(j) - 1);
    const int8_t t = trace[i * w + j];
    if (t == 0)
      --i, --j;
    else if (t == 1)
      --i;
    else
      --j;
  }
  std::reverse(path.rows.begin(), path.rows.end());
  std::reverse(path.cols.begin(), path.cols.end());
  return path;
}

void split_to_word_tokens(const WhisperModel& model, std::span<const int32_t> tokens,
                          std::string_view language, std::vector<std::string>& words,
                          std::vector<std::vector<int32_t>>& word_tokens) {
  // split_tokens_on_unicode: cut after a token once the text so far decodes without a
  // replacement character, or its first one is also in the whole text (invalid for good).
  std::string full_bytes;
  for (int32_t t : tokens) full_bytes += model.token_text(t);
  const std::u32string full = decode_utf8_replace(full_bytes);
  std::vector<std::string> pieces;
  std::vector<std::vector<int32_t>> piece_tokens;
  std::string bytes;
  std::vector<int32_t> current;
  size_t unicode_offset = 0;
  for (int32_t t : tokens) {
    bytes += model.token_text(t);
    current.push_back(t);
    const std::u32string decoded = decode_utf8_replace(bytes);
    const size_t bad = decoded.find(kReplacement);
    const size_t at = unicode_offset + bad;
    if (bad == std::u32string::npos || at >= full.size() || full[at] == kReplacement) {
      pieces.push_back(std::move(bytes));
      piece_tokens.push_back(std::move(current));
      bytes.clear();
      current.clear();
      unicode_offset += decoded.size();
    }
  }
  if (!current.empty()) {
    pieces.push_back(std::move(bytes));
    piece_tokens.push_back(std::move(current));
  }
  words.clear();
  word_tokens.clear();
  static constexpr std::string_view kNoSpaces[] = {"zh", "ja", "th", "lo", "my", "yue"};
  if (std::find(std::begin(kNoSpaces), std::end(kNoSpaces), language) != std::end(kNoSpaces)) {
    words = std::move(pieces);
    word_tokens = std::move(piece_tokens);
    return;
  }
  // split_tokens_on_spaces: a piece starts a word when it is special, starts with a space or
  // is punctuation.
  const int32_t eot = model.vocab().eot;
  for (size_t k = 0; k < pieces.size(); ++k) {
    const bool special = piece_tokens[k][0] >= eot;
    const bool with_space = !pieces[k].empty() && pieces[k][0] == ' ';
    const bool punctuation = python_in(strip(pieces[k]), kPunctuation);
    if (special || with_space || punctuation || words.empty()) {
      words.push_back(pieces[k]);
      word_tokens.push_back(piece_tokens[k]);
    } else {
      words.back() += pieces[k];
      word_tokens.back().insert(word_tokens.back().end(), piece_tokens[k].begin(),
                                piece_tokens[k].end());
    }
  }
}

void merge_punctuations(std::vector<WordTiming>& words, std::string_view prepended,
                        std::string_view appended) {
  if (words.size() < 2) return;
  // Leading punctuation joins the word after it (walking backwards).
  ptrdiff_t i = static_cast<ptrdiff_t>(words.size()) - 2, j = i + 1;
  while (i >= 0) {
    WordTiming& previous = words[i];
    WordTiming& following = words[j];
    if (!previous.word.empty() && previous.word[0] == ' ' &&
        python_in(strip(previous.word), prepended)) {
      following.word = previous.word + following.word;
      following.tokens.insert(following.tokens.begin(), previous.tokens.begin(),
                              previous.tokens.end());
      previous.word.clear();
      previous.tokens.clear();
    } else {
      j = i;
    }
    --i;
  }
  // Trailing punctuation joins the word before it.
  size_t a = 0, b = 1;
  while (b < words.size()) {
    WordTiming& previous = words[a];
    WordTiming& following = words[b];
    if ((previous.word.empty() || previous.word.back() != ' ') &&
        python_in(following.word, appended)) {
      previous.word += following.word;
      previous.tokens.insert(previous.tokens.end(), following.tokens.begin(),
                             following.tokens.end());
      following.word.clear();
      following.tokens.clear();
    } else {
      a = b;
    }
    ++b;
  }
}

std::vector<WordTiming> find_alignment(WhisperState& state, std::span<const int32_t> sot_sequence,
                                       std::span<const int32_t> text_tokens, size_t num_frames,
                                       std::string_view language, int median_filter_width) {
  const WhisperModel& model = state.model();
  const WhisperVocab& v = model.vocab();
  const WhisperConfig& c = model.config();
  if (text_tokens.empty()) return {};
  std::vector<int32_t> tokens(sot_sequence.begin(), sot_sequence.end());
  if (v.no_timestamps >= 0) tokens.push_back(v.no_timestamps);
  const size_t text_begin = tokens.size();  // == len(sot_sequence) + 1
  tokens.insert(tokens.end(), text_tokens.begin(), text_tokens.end());
  tokens.push_back(v.eot);
  if (tokens.size() > static_cast<size_t>(c.n_text_ctx) || c.alignment_heads.empty()) return {};

  state.set_record_alignment(true);
  const std::span<const float> logits = state.decode(tokens, 0, true);
  state.set_record_alignment(false);
  const size_t n_vocab = static_cast<size_t>(c.n_vocab);

  // Probability of each text token among the text tokens (softmax over ids < <|endoftext|>).
  const size_t n_text = text_tokens.size();
  std::vector<float> token_probs(n_text);
  for (size_t k = 0; k < n_text; ++k) {
    const std::span<const float> row = logits.subspan((text_begin - 1 + k) * n_vocab, v.eot);
    const float max = *std::max_element(row.begin(), row.end());
    double total = 0.0;
    for (float x : row) total += std::exp(static_cast<double>(x) - max);
    token_probs[k] = static_cast<float>(std::exp(row[text_tokens[k]] - max) / total);
  }

  // weights[head][token][frame] over the real audio's positions, renormalised there (openai
  // takes the softmax of the scores cut to num_frames / 2 positions).
  const auto& recorded = state.alignment_weights();
  const size_t n_heads = c.alignment_heads.size();
  const size_t n_positions = state.n_audio_positions();
  const size_t n_frames = std::clamp<size_t>(num_frames / 2, 1, n_positions);
  const size_t n_tok = tokens.size();
  std::vector<float> weights(n_heads * n_tok * n_frames);
  for (size_t h = 0; h < n_heads; ++h) {
    for (size_t t = 0; t < n_tok; ++t) {
      const float* src = recorded[t].data() + h * n_positions;
      float* dst = weights.data() + (h * n_tok + t) * n_frames;
      double sum = 0.0;
      for (size_t f = 0; f < n_frames; ++f) sum += src[f];
      for (size_t f = 0; f < n_frames; ++f)
        dst[f] = sum > 0.0 ? static_cast<float>(src[f] / sum) : 1.0f / n_frames;
    }
    // Standardise each audio position over the tokens (torch.std_mean, unbiased=False).
    for (size_t f = 0; f < n_frames; ++f) {
      double mean = 0.0, var = 0.0;
      for (size_t t = 0; t < n_tok; ++t) mean += weights[(h * n_tok + t) * n_frames + f];
      mean /= n_tok;
      for (size_t t = 0; t < n_tok; ++t) {
        const double d = weights[(h * n_tok + t) * n_frames + f] - mean;
        var += d * d;
      }
      const double sd = std::sqrt(var / n_tok);
      for (size_t t = 0; t < n_tok; ++t) {
        float& w = weights[(h * n_tok + t) * n_frames + f];
        w = sd > 0.0 ? static_cast<float>((w - mean) / sd) : 0.0f;
      }
    }
  }
  median_filter_rows(weights, n_heads * n_tok, n_frames, median_filter_width);

  // The head mean over rows len(sot_sequence) .. n_tok - 2, negated: the DTW cost.
  const size_t first_row = sot_sequence.size(), n_rows = n_tok - 1 - first_row;
  std::vector<float> cost(n_rows * n_frames, 0.0f);
  for (size_t r = 0; r < n_rows; ++r)
    for (size_t f = 0; f < n_frames; ++f) {
      float sum = 0.0f;
      for (size_t h = 0; h < n_heads; ++h)
        sum += weights[(h * n_tok + first_row + r) * n_frames + f];
      cost[r * n_frames + f] = -(sum / static_cast<float>(n_heads));
    }
  const DtwPath path = dtw(cost, n_rows, n_frames);

  std::vector<int32_t> with_eot(text_tokens.begin(), text_tokens.end());
  with_eot.push_back(v.eot);
  std::vector<std::string> words;
  std::vector<std::vector<int32_t>> word_tokens;
  split_to_word_tokens(model, with_eot, language, words, word_tokens);
  if (word_tokens.size() <= 1) return {};

  // Times where the path first reaches each row (token).
  const double tokens_per_second = static_cast<double>(c.n_audio_ctx) * kMelSampleRate /
                                   (static_cast<double>(c.n_frames) * kMelHop);
  std::vector<double> jump_times;
  for (size_t k = 0; k < path.rows.size(); ++k)
    if (k == 0 || path.rows[k] != path.rows[k - 1])
      jump_times.push_back(path.cols[k] / tokens_per_second);
  std::vector<size_t> boundaries = {0};
  for (size_t w = 0; w + 1 < word_tokens.size(); ++w)
    boundaries.push_back(boundaries.back() + word_tokens[w].size());

  std::vector<WordTiming> out;
  for (size_t w = 0; w + 1 < boundaries.size(); ++w) {
    WordTiming timing;
    timing.word = words[w];
    timing.tokens = word_tokens[w];
    const size_t b0 = boundaries[w], b1 = boundaries[w + 1];
    timing.start = jump_times[std::min(b0, jump_times.size() - 1)];
    timing.end = jump_times[std::min(b1, jump_times.size() - 1)];
    double p = 0.0;
    for (size_t k = b0; k < b1 && k < n_text; ++k) p += token_probs[k];
    timing.probability = b1 > b0 ? static_cast<float>(p / static_cast<double>(b1 - b0)) : 0.0f;
    out.push_back(std::move(timing));
  }
  return out;
}

void add_word_timestamps(WhisperState& state, std::span<const int32_t> sot_sequence,
                         std::span<Segment> segments,
                         const std::vector<std::vector<int32_t>>& tokens_per_segment,
                         size_t num_frames, double time_offset, std::string_view language,
                         double& last_speech_timestamp) {
  if (segments.empty()) return;
  const int32_t eot = state.model().vocab().eot;
  std::vector<std::vector<int32_t>> text_per_segment;
  std::vector<int32_t> text_tokens;
  for (const std::vector<int32_t>& tokens : tokens_per_segment) {
    text_per_segment.emplace_back();
    for (int32_t t : tokens)
      if (t < eot) text_per_segment.back().push_back(t);
    text_tokens.insert(text_tokens.end(), text_per_segment.back().begin(),
                       text_per_segment.back().end());
  }
  std::vector<WordTiming> alignment =
      find_alignment(state, sot_sequence, text_tokens, num_frames, language);

  std::vector<double> durations;
  for (const WordTiming& w : alignment)
    if (w.end - w.start != 0.0) durations.push_back(w.end - w.start);
  const double median_duration = std::min(0.7, durations.empty() ? 0.0 : median(durations));
  const double max_duration = median_duration * 2;

  // Long words at sentence boundaries are likely a pause the alignment absorbed: cut them.
  if (!durations.empty()) {
    constexpr std::string_view kSentenceEnd = ".。!！?？";
    for (size_t i = 1; i < alignment.size(); ++i) {
      if (alignment[i].end - alignment[i].start <= max_duration) continue;
      if (python_in(alignment[i].word, kSentenceEnd))
        alignment[i].end = alignment[i].start + max_duration;
      else if (python_in(alignment[i - 1].word, kSentenceEnd))
        alignment[i].start = alignment[i].end - max_duration;
    }
  }
  merge_punctuations(alignment);

  size_t word_index = 0;
  for (size_t s = 0; s < segments.size(); ++s) {
    Segment& segment = segments[s];
    size_t saved_tokens = 0;
    std::vector<Word> words;
    while (word_index < alignment.size() && saved_tokens < text_per_segment[s].size()) {
      const WordTiming& timing = alignment[word_index];
      if (!timing.word.empty())
        words.push_back({timing.word, round2(time_offset + timing.start),
                         round2(time_offset + timing.end), timing.probability});
      saved_tokens += timing.tokens.size();
      ++word_index;
    }
    if (!words.empty()) {
      // The first (and second) word after a pause may not be longer than twice the median.
      if (words[0].end - last_speech_timestamp > median_duration * 4 &&
          (words[0].end - words[0].start > max_duration ||
           (words.size() > 1 && words[1].end - words[0].start > max_duration * 2))) {
        if (words.size() > 1 && words[1].end - words[1].start > max_duration) {
          const double boundary = std::max(words[1].end / 2, words[1].end - max_duration);
          words[0].end = words[1].start = boundary;
        }
        words[0].start = std::max(0.0, words[0].end - max_duration);
      }
      // Prefer the segment's own start / end when the first / last word is too long.
      if (segment.t0 < words[0].end && segment.t0 - 0.5 > words[0].start)
        words[0].start = std::max(0.0, std::min(words[0].end - median_duration, segment.t0));
      else
        segment.t0 = words[0].start;
      if (segment.t1 > words.back().start && segment.t1 + 0.5 < words.back().end)
        words.back().end = std::max(words.back().start + median_duration, segment.t1);
      else
        segment.t1 = words.back().end;
      last_speech_timestamp = segment.t1;
    }
    segment.words = std::move(words);
  }
}

}  // namespace oxi::whisper
