// Subtitle and transcript writers: plain text, SRT, WebVTT and JSON from a Transcript.
//
// All writers skip segments whose text is empty after trimming white space, and round times to
// whole milliseconds. SRT and WebVTT cues can be wrapped to at most `max_lines` lines of at most
// `max_line_chars` characters (code points); a segment that does not fit is split into several
// cues, timed by its words when it has word timestamps and by character count otherwise.
#pragma once

#include <cstddef>
#include <string>

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
