// The result of a transcription: timed segments of text, optionally with per-word timings,
// and the detected (or requested) language. Subtitle writers and the CLI consume it; the
// decoder produces it. Times are seconds from the start of the audio.
#pragma once

#include <string>
#include <vector>

namespace oxi::whisper {

struct Word {
  std::string word;  // as decoded, usually with its leading space (" country")
  double start = 0.0;
  double end = 0.0;
  float probability = 0.0f;
};

struct Segment {
  double t0 = 0.0;
  double t1 = 0.0;
  std::string text;
  std::vector<Word> words;  // empty unless word timestamps were requested
};

struct Transcript {
  std::vector<Segment> segments;
  std::string language;  // ISO code ("en"); empty when unknown
  float language_probability = 0.0f;
};

}  // namespace oxi::whisper
