// Subtitle and transcript writers: plain text, SRT, WebVTT and JSON from a Transcript.
//
// All writers skip segments whose text is empty after trimming white space, and round times to
// whole milliseconds. SRT and WebVTT cues can be wrapped to at most `max_lines` lines of at most
// `max_line_chars` characters (code points); a segment that does not fit is split into several
// cues, timed by its words when it has word timestamps and by character count otherwise. A word
// longer than a line is cut into line-long pieces (timed by character count within the word):
// a caption decoder cannot show a longer line, and no word is dropped.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "lib/whisper/transcript.h"

namespace oxi::whisper {

struct CueWrap {
  size_t max_line_chars = 0;  // 0: no wrapping, one line per segment
  size_t max_lines = 0;       // 0: any number of lines per cue
};

enum class SubtitleFormat { text, srt, vtt, json_lines };

// Writes cues one segment at a time, for live output: header() once, then add() per committed
// segment returns that segment's cues (numbering continues across calls). The whole-transcript
// writers below are this writer run over every segment.
class SubtitleWriter {
 public:
  explicit SubtitleWriter(SubtitleFormat format, CueWrap wrap = {});
  std::string header() const;
  // Empty for a segment whose text is blank. json_lines: one segment_json object per line.
  std::string add(const Segment& segment);

 private:
  SubtitleFormat format_;
  CueWrap wrap_;
  size_t next_index_ = 1;
};

// When a pending cue of CueMerger is complete. The defaults are common subtitle guidelines:
// at most two lines of 42 characters, shown for at most 6 s, broken at pauses.
struct CueMergeRule {
  double max_duration = 6.0;  // seconds from the first piece's start to the last one's end
  double max_pause = 0.5;     // a longer silence before a piece starts a new cue
  size_t max_chars = 84;      // code points of the cue's trimmed text
  CueWrap wrap;               // when it wraps (both limits set): the text also fits one cue
};

// Merges consecutive timed pieces of text (Whisper's one-word buffers, or the short commits of
// a live transcriber) into subtitle-sized segments, as they arrive. A piece joins the pending
// cue unless the silence before it is longer than max_pause, or the cue would then last longer
// than max_duration or no longer fit max_chars / one wrapped cue; then the pending cue is
// complete and the piece starts the next one. A cue whose text ends a sentence (. ! ? ... and
// the CJK full stops) is complete at once. Texts are joined as they are: Whisper's words carry
// their own leading space (and CJK words none). The merged segment has one Word per piece's
// word, so wrapping times its lines by them. Waiting for the next piece is the caller's
// choice: flush() completes the pending cue at any time (a live caller does so once it has
// waited long enough), advance() once the media time shows the pause rule will complete it.
class CueMerger {
 public:
  explicit CueMerger(CueMergeRule rule = {});
  // The cues `piece` completes, in order (none, the pending one, and/or the new one). Blank
  // pieces are ignored.
  std::vector<Segment> add(const Segment& piece);
  // The pending cue if media time `seconds` is more than max_pause past its end (nothing was
  // said in between, so no later piece can join it).
  std::optional<Segment> advance(double seconds);
  std::optional<Segment> flush();
  bool has_pending() const { return pending_.has_value(); }

 private:
  bool fits(const std::string& text) const;

  CueMergeRule rule_;
  std::optional<Segment> pending_;
};

// "HH:MM:SS<sep>mmm"; hours grow past two digits when needed, negative times print as zero.
std::string format_timestamp(double seconds, char millisecond_separator);

// One trimmed segment text per line.
std::string to_text(const Transcript& transcript);
// "1\n00:00:01,230 --> 00:00:04,560\ntext\n\n" per cue, numbered from 1.
std::string to_srt(const Transcript& transcript, const CueWrap& wrap = {});
// "WEBVTT\n\n" then "00:00:01.230 --> 00:00:04.560\ntext\n\n" per cue.
std::string to_vtt(const Transcript& transcript, const CueWrap& wrap = {});
// {"language", "language_probability", "text", "segments": [{"id", "start", "end", "text",
// "words": [{"word", "start", "end", "probability"}]}]}; "words" only when a segment has them.
// indent < 0 writes one line.
std::string to_json(const Transcript& transcript, int indent = 2);

}  // namespace oxi::whisper
