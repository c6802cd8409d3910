#include "lib/whisper/streaming_transcriber.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "lib/core/error.h"
#include "lib/whisper/log_mel.h"

namespace oxi::whisper {
namespace {

constexpr double kSampleRate = static_cast<double>(kMelSampleRate);  // 16000

std::string_view trimmed(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

// Two hypotheses agree on a word when its text is the same; its times may differ (the later
// pass's are kept, as whisper_streaming does).
bool same_word(const Word& a, const Word& b) {
  return trimmed(a.word) == trimmed(b.word);
}

}  // namespace

// --- TranscriberStreamDecoder -------------------------------------------------------------------

TranscriberStreamDecoder::TranscriberStreamDecoder(Transcriber& transcriber, WindowOptions options)
    : transcriber_(transcriber), options_(std::move(options)) {}

size_t TranscriberStreamDecoder::max_samples() const {
  return static_cast<size_t>(transcriber_.model().config().n_samples);
}

StreamHypothesis TranscriberStreamDecoder::decode(std::span<const float> samples,
                                                  const std::string& prompt, double time_offset) {
  WindowOptions o = options_;
  o.time_offset = time_offset;
  o.prompt_tokens.clear();
  const std::string_view p = trimmed(prompt);
  // As transcribe()'s initial prompt: one leading space, so the first word is tokenized as a
  // word inside a sentence.
  if (!p.empty()) {
    std::string text(" ");
    text.append(p);
    o.prompt_tokens = transcriber_.model().encode_text(text);
  }
  const WindowResult r = transcriber_.decode_window(samples, o);

  StreamHypothesis h;
  if (r.cancelled) {
    h.cancelled = true;
    return h;
  }
  if ((options_.language == "auto" || options_.language.empty()) && !r.segments.empty() &&
      !r.language.empty())
    options_.language = r.language;
  for (const DecodedSegment& d : r.segments) {
    Segment s = d.segment;
    if (s.words.empty()) s.words = spread_words(s);
    h.segments.push_back(std::move(s));
  }
  return h;
}

std::vector<Word> spread_words(const Segment& segment) {
  std::vector<std::string> parts;
  const std::string& text = segment.text;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool starts_word = i == 0 || (text[i] == ' ' && text[i - 1] != ' ');
    if (starts_word || parts.empty())
      parts.emplace_back(1, text[i]);
    else
      parts.back().push_back(text[i]);
  }
  // A trailing run of blanks is no word of its own.
  std::vector<std::string> words;
  for (std::string& part : parts) {
    if (trimmed(part).empty() && !words.empty())
      words.back() += part;
    else
      words.push_back(std::move(part));
  }
  if (words.size() == 1 && trimmed(words.front()).empty()) words.clear();

  size_t total = 0;
  for (const std::string& w : words) total += w.size();
  std::vector<Word> out;
  size_t done = 0;
  const double span = std::max(0.0, segment.t1 - segment.t0);
  for (std::string& w : words) {
    Word word;
    word.start = segment.t0 + span * static_cast<double>(done) / static_cast<double>(total);
    done += w.size();
    word.end = segment.t0 + span * static_cast<double>(done) / static_cast<double>(total);
    word.probability = 1.0f;
    word.word = std::move(w);
    out.push_back(std::move(word));
  }
  return out;
}

// --- StreamingOptions ---------------------------------------------------------------------------

double StreamingOptions::step_for_latency(double latency_seconds, double window_seconds) {
  const double step = std::max(latency_seconds / 3.0, 0.1);
  return std::max(0.01, std::min(step, window_seconds / 2.0));
}

// --- StreamingTranscriber -----------------------------------------------------------------------

StreamingTranscriber::StreamingTranscriber(StreamDecoder& decoder, StreamingOptions options,
                                           double start_time)
    : decoder_(decoder), options_(std::move(options)) {
  window_samples_ = decoder_.max_samples();
  if (window_samples_ < 2) throw Error("StreamingTranscriber", "the decoder has no window");
  // A step of more than half the window would leave no room for context: every pass would
  // have to cut the buffer to nothing.
  const double step = std::round(options_.min_chunk_seconds * kSampleRate);
  step_samples_ =
      std::clamp<size_t>(step > 1 ? static_cast<size_t>(step) : 1, 1, window_samples_ / 2);
  options_.min_chunk_seconds = static_cast<double>(step_samples_) / kSampleRate;
  const double window_seconds = static_cast<double>(window_samples_) / kSampleRate;
  trim_seconds_ = options_.trim_seconds > 0.0 ? std::min(options_.trim_seconds, window_seconds)
                                              : window_seconds / 2.0;
  reset(start_time);
}

void StreamingTranscriber::reset(double start_time) {
  start_time_ = start_time;
  buffer_offset_ = 0;
  audio_.clear();
  decoded_samples_ = 0;
  previous_.clear();
  committed_in_buffer_.clear();
  committed_end_ = start_time;
  prompt_ = std::string(trimmed(options_.initial_prompt));
}

void StreamingTranscriber::resume_at(double time) {
  if (!audio_.empty())
    throw Error("StreamingTranscriber::resume_at",
                "the buffer still holds audio: call finish() before skipping ahead");
  // An empty buffer has no hypothesis left to agree with; the prompt (committed text) stays.
  start_time_ = std::max(time, buffer_end());
  buffer_offset_ = 0;
  decoded_samples_ = 0;
  previous_.clear();
  committed_in_buffer_.clear();
}

double StreamingTranscriber::buffer_start() const {
  return start_time_ + static_cast<double>(buffer_offset_) / kSampleRate;
}

double StreamingTranscriber::buffer_end() const {
  return buffer_start() + static_cast<double>(audio_.size()) / kSampleRate;
}

double StreamingTranscriber::decoded_end() const {
  return buffer_start() + static_cast<double>(decoded_samples_) / kSampleRate;
}

double StreamingTranscriber::final_until() const {
  return std::max(committed_end_, buffer_start());
}

void StreamingTranscriber::insert_audio(std::span<const float> samples) {
  audio_.insert(audio_.end(), samples.begin(), samples.end());
}

bool StreamingTranscriber::update_catch_up(double backlog_seconds, double budget_seconds) {
  const double step = step_seconds();
  const bool on = catch_up_ ? backlog_seconds > std::max(budget_seconds - step, step)
                            : backlog_seconds > budget_seconds;
  const bool changed = on != catch_up_;
  catch_up_ = on;
  return changed;
}

bool StreamingTranscriber::ready() const {
  return audio_.size() >= decoded_samples_ + step_samples_ || audio_.size() > window_samples_;
}

std::vector<Word> StreamingTranscriber::agree(std::vector<Word> words) {
  // Words that start before the committed text are what the buffer's committed words became
  // in this pass (0.1 s of slack for timing jitter, as whisper_streaming).
  std::vector<Word> fresh;
  for (Word& w : words)
    if (w.start > committed_end_ - 0.1) fresh.push_back(std::move(w));

  // A pass right after the committed text may repeat its last words (up to 5): drop them.
  if (!fresh.empty() && !committed_in_buffer_.empty() &&
      std::abs(fresh.front().start - committed_end_) < 1.0) {
    const size_t cn = committed_in_buffer_.size();
    const size_t most = std::min({cn, fresh.size(), size_t{5}});
    for (size_t i = 1; i <= most; ++i) {
      bool repeat = true;
      for (size_t j = 0; j < i && repeat; ++j)
        repeat = same_word(committed_in_buffer_[cn - i + j], fresh[j]);
      if (repeat) {
        fresh.erase(fresh.begin(), fresh.begin() + static_cast<ptrdiff_t>(i));
        break;
      }
    }
  }

  // LocalAgreement-2: the longest common prefix of this pass and the previous one.
  size_t k = 0;
  while (k < fresh.size() && k < previous_.size() && same_word(fresh[k], previous_[k])) ++k;
  std::vector<Word> agreed(fresh.begin(), fresh.begin() + static_cast<ptrdiff_t>(k));
  previous_.assign(fresh.begin() + static_cast<ptrdiff_t>(k), fresh.end());
  return agreed;
}

void StreamingTranscriber::commit(std::vector<Word>& words) {
  for (Word& w : words) {
    // Text goes out in time order: a word never starts before the committed text ends.
    w.start = std::max(w.start, committed_end_);
    w.end = std::max(w.end, w.start);
    committed_end_ = w.end;
    committed_in_buffer_.push_back(w);
  }
}

void StreamingTranscriber::chunk_at(double t) {
  const double relative = t - buffer_start();
  if (relative <= 0.0) return;
  const size_t cut =
      std::min(audio_.size(), static_cast<size_t>(std::llround(relative * kSampleRate)));
  if (cut == 0) return;
  const double cut_time = buffer_start() + static_cast<double>(cut) / kSampleRate;
  // Committed words that leave the buffer become prompt context.
  size_t k = 0;
  while (k < committed_in_buffer_.size() && committed_in_buffer_[k].end <= cut_time + 1e-9) ++k;
  for (size_t i = 0; i < k; ++i) prompt_ += committed_in_buffer_[i].word;
  committed_in_buffer_.erase(committed_in_buffer_.begin(),
                             committed_in_buffer_.begin() + static_cast<ptrdiff_t>(k));
  // Keep the context bounded; decode() sends only the last prompt_chars anyway.
  if (prompt_.size() > 4 * options_.prompt_chars + 64)
    prompt_.erase(0, prompt_.size() - 2 * options_.prompt_chars);

  audio_.erase(audio_.begin(), audio_.begin() + static_cast<ptrdiff_t>(cut));
  buffer_offset_ += cut;
  decoded_samples_ -= std::min(decoded_samples_, cut);
}

std::vector<Word> StreamingTranscriber::trim_after_pass(const StreamHypothesis& hypothesis,
                                                        size_t decoded) {
  (void)decoded;
  std::vector<Word> forced;
  // whisper_streaming's "segment" trimming: a long buffer is cut at the end of the last
  // complete segment (not the hypothesis's last, which may be cut off) that is committed.
  if (static_cast<double>(audio_.size()) / kSampleRate > trim_seconds_ &&
      committed_end_ > buffer_start()) {
    double best = -1.0;
    const std::vector<Segment>& s = hypothesis.segments;
    for (size_t i = 0; i + 1 < s.size(); ++i)
      if (s[i].t1 <= committed_end_ + 1e-9 && s[i].t1 > buffer_start())
        best = std::max(best, s[i].t1);
    if (best > 0.0) chunk_at(best);
  }
  // The next pass must fit the window with one more step of audio.
  if (decoded_samples_ + step_samples_ <= window_samples_) return forced;
  if (committed_end_ > buffer_start()) chunk_at(committed_end_);
  if (decoded_samples_ + step_samples_ <= window_samples_) return forced;

  // Nothing committed to cut at: commit the tentative words that end a guard interval before
  // the decoded audio's end (a word at the very end may be cut off), then cut before the next.
  const double window_seconds = static_cast<double>(window_samples_) / kSampleRate;
  const double guard = std::min(1.0, window_seconds / 4.0);
  const double limit = decoded_end() - guard;
  size_t k = 0;
  while (k < previous_.size() && previous_[k].end <= limit) ++k;
  forced.assign(previous_.begin(), previous_.begin() + static_cast<ptrdiff_t>(k));
  previous_.erase(previous_.begin(), previous_.begin() + static_cast<ptrdiff_t>(k));
  commit(forced);
  double cut = std::max(committed_end_, buffer_start());
  cut = std::max(cut, std::min(previous_.empty() ? limit : previous_.front().start, limit));
  if (cut <= buffer_start() + 1e-9 && !previous_.empty()) {
    // One tentative word from the buffer's start past the limit: commit it to move on.
    std::vector<Word> one(previous_.begin(), previous_.begin() + 1);
    previous_.erase(previous_.begin());
    commit(one);
    forced.push_back(one.front());
    cut = committed_end_;
  }
  if (cut <= buffer_start() + 1e-9) cut = limit;
  chunk_at(cut);
  return forced;
}

std::vector<Word> StreamingTranscriber::commit_without_agreement() {
  // The same guard as the window-limit trimming: a word at the very end may be cut off.
  const double window_seconds = static_cast<double>(window_samples_) / kSampleRate;
  const double guard = std::min(1.0, window_seconds / 4.0);
  const double limit = decoded_end() - guard;
  size_t k = 0;
  while (k < previous_.size() && previous_[k].end <= limit) ++k;
  std::vector<Word> forced(previous_.begin(), previous_.begin() + static_cast<ptrdiff_t>(k));
  previous_.erase(previous_.begin(), previous_.begin() + static_cast<ptrdiff_t>(k));
  commit(forced);
  if (committed_end_ > buffer_start()) chunk_at(committed_end_);
  return forced;
}

// Tentative words that cannot wait for another pass within options_.max_delay_seconds: the
// next pass decodes one step more audio and its text is out one pass overhead (at least a step)
// after that audio ends, so a word that ended more than max_delay - step - overhead before the
// decoded audio's end is committed now (and in any case only words a guard before that end, which
// may be cut off).
std::vector<Word> StreamingTranscriber::commit_due() {
  constexpr double kCutOffGuard = 0.3;
  const double decoded = decoded_end();
  const double step = static_cast<double>(step_samples_) / kSampleRate;
  // At least a step: the next pass may start late (the worker busy) and then covers more.
  const double overhead = std::max(pass_overhead_, step);
  const double limit =
      decoded - std::max(options_.max_delay_seconds - step - overhead, kCutOffGuard);
  size_t k = 0;
  while (k < previous_.size() && previous_[k].end <= limit) ++k;
  std::vector<Word> due(previous_.begin(), previous_.begin() + static_cast<ptrdiff_t>(k));
  previous_.erase(previous_.begin(), previous_.begin() + static_cast<ptrdiff_t>(k));
  commit(due);
  return due;
}

CommittedText StreamingTranscriber::make_item(const std::vector<Word>& words) const {
  CommittedText item;
  item.start = words.front().start;
  item.end = words.back().end;
  for (const Word& w : words) item.text += w.word;
  if (options_.keep_words) item.words = words;
  return item;
}

std::string StreamingTranscriber::prompt_tail() const {
  if (prompt_.size() <= options_.prompt_chars) return prompt_;
  // Cut at a space, so no word (or UTF-8 sequence) is split.
  size_t from = prompt_.size() - options_.prompt_chars;
  while (from < prompt_.size() && prompt_[from] != ' ') ++from;
  return prompt_.substr(from);
}

bool StreamingTranscriber::pass(std::vector<CommittedText>& out) {
  const size_t n = std::min(audio_.size(), window_samples_);
  if (n == 0 || n <= decoded_samples_) return false;
  const StreamHypothesis h =
      decoder_.decode(std::span(audio_).first(n), prompt_tail(), buffer_start());
  if (h.cancelled) return false;
  decoded_samples_ = n;
  std::vector<Word> words;
  for (const Segment& s : h.segments) words.insert(words.end(), s.words.begin(), s.words.end());
  std::vector<Word> committed = agree(std::move(words));
  commit(committed);
  if (options_.max_delay_seconds > 0.0) {
    std::vector<Word> due = commit_due();
    committed.insert(committed.end(), due.begin(), due.end());
  }
  if (catch_up_) {
    std::vector<Word> early = commit_without_agreement();
    committed.insert(committed.end(), early.begin(), early.end());
  }
  std::vector<Word> forced = trim_after_pass(h, n);
  committed.insert(committed.end(), forced.begin(), forced.end());
  if (!committed.empty()) out.push_back(make_item(committed));
  return true;
}

std::vector<CommittedText> StreamingTranscriber::process() {
  std::vector<CommittedText> out;
  pass(out);
  return out;
}

std::vector<CommittedText> StreamingTranscriber::finish() {
  std::vector<CommittedText> out;
  while (decoded_samples_ < audio_.size())
    if (!pass(out)) break;  // cancelled
  std::vector<Word> rest = std::move(previous_);
  previous_.clear();
  commit(rest);
  if (!rest.empty()) out.push_back(make_item(rest));
  // Everything is committed: the stream continues after the audio so far.
  chunk_at(buffer_end());
  return out;
}

}  // namespace oxi::whisper
