// StreamingTranscriber: live speech to text with the LocalAgreement-2 policy of whisper_streaming
// (Macháček, Dabre, Bojar 2023, "Turning Whisper into Real-Time Transcription System").
//
// Audio is appended to a buffer of at most one model window. Every pass decodes the whole buffer
// with the committed text before it as the prompt; the words of the new hypothesis that agree
// with the previous pass's hypothesis (their longest common prefix after what is committed) are
// committed. Committed text is never revised. The rest of the hypothesis is tentative.
//
//   auto decoder = TranscriberStreamDecoder(transcriber, window_options);
//   StreamingTranscriber stream(decoder, options, /*start_time=*/0.0);
//   stream.insert_audio(chunk);
//   if (stream.ready()) for (const CommittedText& c : stream.process()) show(c);
//   ...
//   for (const CommittedText& c : stream.finish()) show(c);   // end of stream: commit the rest
//
// The buffer is cut (the audio before the cut dropped, its committed words moved into the
// prompt) at the end of the last complete segment that is committed once the buffer is longer
// than StreamingOptions::trim_seconds, as whisper_streaming's "segment" trimming. Since the
// buffer must never outgrow the model's window (8 s for the demo model, 30 s for OpenAI's), a
// buffer that would not fit one more step is cut at the end of the committed text, and when
// nothing is committed in it (one long unstable hypothesis, which whisper_streaming leaves to
// grow to 30 s) the tentative words that end a guard interval before the buffer's end are
// committed without agreement and the buffer is cut after them.
//
// A caller that gates the audio with a voice activity detector calls finish() when speech ends
// and resume_at() when it starts again: the silence between is never decoded, and the committed
// text before it stays the prompt. A caller whose decoding falls behind real time turns on
// set_catch_up(): each pass then commits its words up to a guard interval before the decoded
// audio's end without waiting for a second pass, and the buffer is cut there, so the next pass
// decodes a short buffer (one-pass quality, but the backlog shrinks instead of growing).
//
// The decoder is an interface so the policy is tested with scripted hypotheses;
// TranscriberStreamDecoder runs Transcriber::decode_window. Not thread-safe: one thread drives a
// StreamingTranscriber (the decoder's cancel flag may be set from any thread).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lib/whisper/transcriber.h"
#include "lib/whisper/transcript.h"

namespace oxi::whisper {

// One pass of a recogniser over the buffer. Times are absolute (stream seconds); every segment
// carries its words (timed by the decoder, or spread over the segment by length).
struct StreamHypothesis {
  std::vector<Segment> segments;
  bool cancelled = false;  // the pass was stopped: the policy ignores it
};

class StreamDecoder {
 public:
  virtual ~StreamDecoder() = default;
  // The longest buffer decode() accepts, in 16 kHz samples (the model's window).
  virtual size_t max_samples() const = 0;
  // Transcribes `samples`, whose first sample is `time_offset` seconds into the stream, with
  // `prompt` (text said before them) as context.
  virtual StreamHypothesis decode(std::span<const float> samples, const std::string& prompt,
                                  double time_offset) = 0;
};

// A StreamDecoder on Transcriber::decode_window. Without word timestamps each segment's text is
// split at spaces and its span shared out by character count: LocalAgreement compares words,
// and approximate times are enough to place and trim them. A language of "auto" is detected on
// the first pass that gives text and kept from then on, so a stream does not flip languages.
class TranscriberStreamDecoder : public StreamDecoder {
 public:
  TranscriberStreamDecoder(Transcriber& transcriber, WindowOptions options);
  size_t max_samples() const override;
  StreamHypothesis decode(std::span<const float> samples, const std::string& prompt,
                          double time_offset) override;
  const std::string& language() const { return options_.language; }

 private:
  Transcriber& transcriber_;
  WindowOptions options_;
};

// Splits `segment.text` into words at the spaces that start them (" Hello", " world.") and
// times them over [t0, t1] by byte count (for segments without word timestamps).
std::vector<Word> spread_words(const Segment& segment);

struct StreamingOptions {
  // The step: a pass runs once this much audio arrived since the last one.
  double min_chunk_seconds = 1.0;
  // Buffer length after which it is cut at the last committed segment's end; 0: half the
  // model's window (whisper_streaming: 15 s of 30).
  double trim_seconds = 0.0;
  // Committed text before the buffer passed as the prompt (whisper_streaming's 200 characters).
  size_t prompt_chars = 200;
  std::string initial_prompt;  // text before the stream (names, spelling)
  // CommittedText::words filled (the element's word-timestamps mode); the policy always
  // compares words.
  bool keep_words = false;
  // The latency budget (seconds; 0: none). A tentative word that could not be committed
  // within it by waiting for the next pass's agreement (the next pass comes one step later, and
  // its text is out one pass overhead after that: see set_pass_overhead) is committed at once:
  // LocalAgreement-2 alone waits as long as consecutive passes disagree on a word.
  double max_delay_seconds = 0.0;

  // The step for an end-to-end latency budget: a word is committed when a second pass agrees on
  // it, one step after the pass that first saw it, which started up to one step after the word
  // was spoken, and each pass takes up to a step to compute when decoding keeps up with real
  // time: about three steps in all. Clamped to [0.1 s, half the window].
  static double step_for_latency(double latency_seconds, double window_seconds);
};

// One pass's newly committed words as a unit of text.
struct CommittedText {
  double start = 0.0;       // the first word's start, stream seconds
  double end = 0.0;         // the last word's end
  std::string text;         // the words' text concatenated (with their leading spaces)
  std::vector<Word> words;  // when StreamingOptions::keep_words
};

class StreamingTranscriber {
 public:
  // `start_time`: the stream time (seconds) of the first sample inserted.
  StreamingTranscriber(StreamDecoder& decoder, StreamingOptions options, double start_time = 0.0);

  // Appends 16 kHz mono samples. Does no decoding.
  void insert_audio(std::span<const float> samples);
  // At least one step of audio arrived since the last pass (or the buffer holds more than one
  // window, which only happens when passes fell behind).
  bool ready() const;
  // One pass over the buffer (at most one window of it); returns what it committed, at most one
  // item. Nothing when the pass was cancelled or no audio arrived since the last pass.
  std::vector<CommittedText> process();
  // End of stream: passes over the audio not yet decoded, then commits every tentative word.
  // Returns the text committed by those passes and that final commit, in order. The stream may
  // go on afterwards, continuing at buffer_end().
  std::vector<CommittedText> finish();
  // Forgets the buffer, hypotheses and prompt context (a flush or discontinuity); the next
  // sample is at `start_time`.
  void reset(double start_time);
  // Continues the stream at `time` (>= buffer_end()), skipping the audio in between (silence a
  // VAD left out), with the committed text kept as the prompt. Only on an empty buffer (after
  // finish(), or before any audio): throws oxi::Error otherwise.
  void resume_at(double time);
  // Catch-up mode (the caller fell behind its latency budget): passes commit without agreement
  // and keep the buffer short. See the comment at the top.
  void set_catch_up(bool on) { catch_up_ = on; }
  bool catch_up() const { return catch_up_; }
  // The caller's rule for catch-up mode, from the audio waiting for decoding before a pass
  // (`backlog`: the buffer's undecoded audio plus what the caller still queues, seconds): on
  // when it exceeds the latency budget, off again once it is a step below the budget (or down
  // to a step, for budgets under two steps). A pass starts with at least a step waiting, so
  // "down to a step" alone was almost never seen: one late pass kept a stream in catch-up mode
  // for good. Returns whether the mode changed.
  bool update_catch_up(double backlog_seconds, double budget_seconds);
  // How long after the end of its audio a pass's text reaches the output (the wait before the
  // pass plus the pass itself), as the caller measures it. The latency budget's rule assumes
  // the next pass is as late, and never less than one step (a pass keeping up with real time,
  // which is all it assumes until told). Negative: back to that assumption.
  void set_pass_overhead(double seconds) { pass_overhead_ = seconds; }

  // The unstable tail of the latest hypothesis (may still change or vanish).
  const std::vector<Word>& tentative() const { return previous_; }
  double buffer_start() const;  // stream time of the buffer's first sample
  double buffer_end() const;    // stream time just after the last sample inserted
  double decoded_end() const;   // stream time just after the audio the last pass decoded
  double committed_end() const { return committed_end_; }
  // Before this time the transcript is final: no later commit starts earlier.
  double final_until() const;
  size_t buffered_samples() const { return audio_.size(); }
  // Samples inserted that no pass has decoded yet (the decoding backlog).
  size_t pending_samples() const { return audio_.size() - decoded_samples_; }
  double step_seconds() const { return options_.min_chunk_seconds; }
  double trim_seconds() const { return trim_seconds_; }

 private:
  // Keeps the words of `words` that agree with the previous hypothesis; returns them.
  std::vector<Word> agree(std::vector<Word> words);
  // Appends `words` to what is committed (clamped so times never go backwards).
  void commit(std::vector<Word>& words);
  // Cuts the buffer after a pass over its first `decoded` samples; returns the tentative words
  // it had to commit to make room.
  std::vector<Word> trim_after_pass(const StreamHypothesis& hypothesis, size_t decoded);
  // Catch-up mode: commits the tentative words that end a guard interval before the decoded
  // audio's end and cuts the buffer after them; returns them.
  std::vector<Word> commit_without_agreement();
  std::vector<Word> commit_due();
  // One pass; false when there was nothing new to decode or it was cancelled.
  bool pass(std::vector<CommittedText>& out);
  std::string prompt_tail() const;
  // Drops the audio before stream time `t` (clamped to the buffer).
  void chunk_at(double t);
  CommittedText make_item(const std::vector<Word>& words) const;

  StreamDecoder& decoder_;
  StreamingOptions options_;
  double trim_seconds_ = 0.0;
  size_t window_samples_ = 0;
  size_t step_samples_ = 0;

  double start_time_ = 0.0;                // stream time of sample 0 since the last reset
  uint64_t buffer_offset_ = 0;             // samples dropped from the front since the last reset
  std::vector<float> audio_;               // the buffer
  size_t decoded_samples_ = 0;             // samples of audio_ the last pass saw
  std::vector<Word> previous_;             // the previous hypothesis, after what is committed
  std::vector<Word> committed_in_buffer_;  // committed words still in the buffer
  double committed_end_ = 0.0;             // end of the last committed word (or the stream start)
  std::string prompt_;  // committed text before the buffer (and the initial prompt)
  bool catch_up_ = false;
  double pass_overhead_ = -1.0;  // seconds; < 0: one step
};

}  // namespace oxi::whisper
