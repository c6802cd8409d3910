#include "lib/whisper/subtitles.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace oxi::whisper {
namespace {

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Line width is counted in code points, so accented and CJK text wraps like ASCII does.
size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

int64_t round_ms(double seconds) {
  if (!(seconds > 0.0)) return 0;  // negative and NaN
  return std::llround(seconds * 1000.0);
}

// "-->" inside a cue's text would end the cue's timing line early in some players.
std::string escape_arrow(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.substr(i, 3) == "-->") {
      out += "->";
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

struct Cue {
  double start = 0.0;
  double end = 0.0;
  std::string text;  // lines joined by '\n'
};

struct TimedWord {
  std::string text;  // trimmed
  double start = 0.0;
  double end = 0.0;
};

// The segment's words with times: its word timestamps when it has them, otherwise its text
// split at spaces with the segment's duration shared out by character count.
std::vector<TimedWord> timed_words(const Segment& segment) {
  std::vector<TimedWord> words;
  if (!segment.words.empty()) {
    for (const Word& w : segment.words) {
      std::string_view text = trim(w.word);
      if (!text.empty()) words.push_back({std::string(text), w.start, w.end});
    }
    return words;
  }
  std::string_view rest = trim(segment.text);
  size_t total_chars = 0;
  while (!rest.empty()) {
    size_t end = rest.find(' ');
    std::string_view word = rest.substr(0, end);
    if (!word.empty()) {
      words.push_back({std::string(word), 0.0, 0.0});
      total_chars += utf8_length(word);
    }
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
  }
  const double duration = segment.t1 - segment.t0;
  size_t chars_before = 0;
  for (TimedWord& w : words) {
    const size_t n = utf8_length(w.text);
    w.start = segment.t0 + duration * static_cast<double>(chars_before) / total_chars;
    chars_before += n;
    w.end = segment.t0 + duration * static_cast<double>(chars_before) / total_chars;
  }
  return words;
}

// A word longer than `max_chars` code points becomes line-long pieces, each timed by its share
// of the word's characters; shorter words pass unchanged.
std::vector<TimedWord> split_long_words(std::vector<TimedWord> words, size_t max_chars) {
  std::vector<TimedWord> out;
  out.reserve(words.size());
  const auto is_lead = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; };
  for (TimedWord& w : words) {
    const size_t n = utf8_length(w.text);
    if (n <= max_chars) {
      out.push_back(std::move(w));
      continue;
    }
    const double duration = w.end - w.start;
    size_t done = 0, begin = 0;
    while (done < n) {
      const size_t take = std::min(max_chars, n - done);
      size_t end = begin, count = 0;
      while (end < w.text.size()) {
        if (is_lead(w.text[end])) {
          if (count == take) break;
          ++count;
        }
        ++end;
      }
      out.push_back({w.text.substr(begin, end - begin),
                     w.start + duration * static_cast<double>(done) / n,
                     w.start + duration * static_cast<double>(done + take) / n});
      done += take;
      begin = end;
    }
  }
  return out;
}

struct Line {
  std::string text;
  double start = 0.0;
  double end = 0.0;
};

// Greedy filling: a word goes on the current line when it fits, else on a new line. Words are
// at most a line long (split_long_words), so every line fits.
std::vector<Line> layout_lines(const std::vector<TimedWord>& words, size_t max_line_chars) {
  std::vector<Line> lines;
  for (const TimedWord& w : words) {
    if (!lines.empty() &&
        utf8_length(lines.back().text) + 1 + utf8_length(w.text) <= max_line_chars) {
      lines.back().text += " " + w.text;
      lines.back().end = w.end;
    } else {
      lines.push_back({w.text, w.start, w.end});
    }
  }
  return lines;
}

std::vector<Line> wrapped_lines(const Segment& segment, size_t max_line_chars) {
  return layout_lines(split_long_words(timed_words(segment), max_line_chars), max_line_chars);
}

std::vector<Cue> make_cues(const Segment& segment, const CueWrap& wrap) {
  std::vector<Cue> cues;
  const std::string_view text = trim(segment.text);
  if (text.empty()) return cues;
  if (wrap.max_line_chars == 0) {
    cues.push_back({segment.t0, segment.t1, escape_arrow(text)});
    return cues;
  }
  // max_lines lines per cue (all of them when 0); a cue spans its first word's start to its
  // last word's end.
  const std::vector<Line> lines = wrapped_lines(segment, wrap.max_line_chars);
  const size_t per_cue = wrap.max_lines == 0 ? lines.size() : wrap.max_lines;
  for (size_t first = 0; first < lines.size(); first += per_cue) {
    const size_t last = std::min(lines.size(), first + per_cue);
    Cue cue{lines[first].start, lines[last - 1].end, {}};
    for (size_t i = first; i < last; ++i) cue.text += (i > first ? "\n" : "") + lines[i].text;
    cue.text = escape_arrow(cue.text);
    cues.push_back(std::move(cue));
  }
  return cues;
}

// Whether a text ends a sentence: its last character (after closing quotes and brackets) is a
// full stop, question or exclamation mark, or an ellipsis, in ASCII or CJK.
bool ends_sentence(std::string_view text) {
  text = trim(text);
  while (!text.empty() && (text.back() == '"' || text.back() == '\'' || text.back() == ')'))
    text.remove_suffix(1);
  if (text.empty()) return false;
  const char last = text.back();
  if (last == '.' || last == '!' || last == '?') return true;
  for (std::string_view mark : {"\u2026", "\u3002", "\uFF01", "\uFF1F"})
    if (text.ends_with(mark)) return true;
  return false;
}

// The double nearest the shortest decimal that reads back as `f`: JSON then shows 0.97, not
// 0.9700000286102295.
double shortest_double(float f) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf) - 1, f);
  if (ec != std::errc()) return f;
  *end = '\0';
  return std::strtod(buf, nullptr);
}

double json_time(double seconds) {
  return static_cast<double>(round_ms(seconds)) / 1000.0;
}

// One segment as the JSON writers show it.
nlohmann::ordered_json segment_json(const Segment& segment, size_t id) {
  using Json = nlohmann::ordered_json;
  Json s;
  s["id"] = id;
  s["start"] = json_time(segment.t0);
  s["end"] = json_time(segment.t1);
  s["text"] = segment.text;
  if (!segment.words.empty()) {
    Json words = Json::array();
    for (const Word& w : segment.words) {
      words.push_back({{"word", w.word},
                       {"start", json_time(w.start)},
                       {"end", json_time(w.end)},
                       {"probability", shortest_double(w.probability)}});
    }
    s["words"] = std::move(words);
  }
  return s;
}

}  // namespace

std::string format_timestamp(double seconds, char millisecond_separator) {
  const int64_t total_ms = round_ms(seconds);
  const int64_t ms = total_ms % 1000;
  const int64_t total_s = total_ms / 1000;
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%02lld:%02lld:%02lld%c%03lld",
                static_cast<long long>(total_s / 3600), static_cast<long long>(total_s / 60 % 60),
                static_cast<long long>(total_s % 60), millisecond_separator,
                static_cast<long long>(ms));
  return buf;
}

SubtitleWriter::SubtitleWriter(SubtitleFormat format, CueWrap wrap)
    : format_(format), wrap_(wrap) {}

std::string SubtitleWriter::header() const {
  return format_ == SubtitleFormat::vtt ? "WEBVTT\n\n" : "";
}

std::string SubtitleWriter::add(const Segment& segment) {
  std::string out;
  if (format_ == SubtitleFormat::text) {
    const std::string_view text = trim(segment.text);
    if (!text.empty()) out = std::string(text) + "\n";
    return out;
  }
  if (format_ == SubtitleFormat::json_lines) {
    if (trim(segment.text).empty()) return out;
    return segment_json(segment, next_index_++ - 1)
               .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
           "\n";
  }
  const char sep = format_ == SubtitleFormat::srt ? ',' : '.';
  for (const Cue& cue : make_cues(segment, wrap_)) {
    if (format_ == SubtitleFormat::srt) out += std::to_string(next_index_++) + "\n";
    out += format_timestamp(cue.start, sep) + " --> " + format_timestamp(cue.end, sep) + "\n" +
           cue.text + "\n\n";
  }
  return out;
}

CueMerger::CueMerger(CueMergeRule rule) : rule_(rule) {}

bool CueMerger::fits(const std::string& text) const {
  if (utf8_length(trim(text)) > rule_.max_chars) return false;
  if (rule_.wrap.max_line_chars == 0 || rule_.wrap.max_lines == 0) return true;
  return wrapped_lines(Segment{0.0, 0.0, text, {}}, rule_.wrap.max_line_chars).size() <=
         rule_.wrap.max_lines;
}

std::vector<Segment> CueMerger::add(const Segment& piece) {
  std::vector<Segment> done;
  if (trim(piece.text).empty()) return done;
  if (pending_ &&
      (piece.t0 - pending_->t1 > rule_.max_pause || piece.t1 - pending_->t0 > rule_.max_duration ||
       !fits(pending_->text + piece.text))) {
    done.push_back(std::move(*pending_));
    pending_.reset();
  }
  // The piece's words: its own word timestamps, else its text cut at spaces and timed by
  // character count within the piece (not within the whole cue).
  std::vector<Word> words = piece.words;
  if (words.empty()) {
    for (TimedWord& w : timed_words(piece)) words.push_back({std::move(w.text), w.start, w.end});
  }
  if (!pending_) {
    pending_ = Segment{piece.t0, piece.t1, piece.text, std::move(words)};
  } else {
    pending_->t1 = std::max(pending_->t1, piece.t1);
    pending_->text += piece.text;
    pending_->words.insert(pending_->words.end(), std::make_move_iterator(words.begin()),
                           std::make_move_iterator(words.end()));
  }
  if (ends_sentence(pending_->text)) {
    done.push_back(std::move(*pending_));
    pending_.reset();
  }
  return done;
}

std::optional<Segment> CueMerger::advance(double seconds) {
  if (pending_ && seconds - pending_->t1 > rule_.max_pause) return flush();
  return std::nullopt;
}

std::optional<Segment> CueMerger::flush() {
  std::optional<Segment> out = std::move(pending_);
  pending_.reset();
  return out;
}

namespace {

std::string write_all(const Transcript& transcript, SubtitleFormat format, const CueWrap& wrap) {
  SubtitleWriter writer(format, wrap);
  std::string out = writer.header();
  for (const Segment& segment : transcript.segments) out += writer.add(segment);
  return out;
}

}  // namespace

std::string to_srt(const Transcript& transcript, const CueWrap& wrap) {
  return write_all(transcript, SubtitleFormat::srt, wrap);
}

std::string to_vtt(const Transcript& transcript, const CueWrap& wrap) {
  return write_all(transcript, SubtitleFormat::vtt, wrap);
}

std::string to_text(const Transcript& transcript) {
  return write_all(transcript, SubtitleFormat::text, {});
}

std::string to_json(const Transcript& transcript, int indent) {
  using Json = nlohmann::ordered_json;
  Json segments = Json::array();
  std::string full_text;
  for (const Segment& segment : transcript.segments) {
    if (trim(segment.text).empty()) continue;
    segments.push_back(segment_json(segment, segments.size()));
    full_text += segment.text;
  }
  Json root;
  root["language"] = transcript.language;
  root["language_probability"] = shortest_double(transcript.language_probability);
  root["text"] = std::string(trim(full_text));
  root["segments"] = std::move(segments);
  // Replace invalid UTF-8 rather than throw: a decoder can stop mid-character.
  return root.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace oxi::whisper
