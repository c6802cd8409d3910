#include "lib/vad/speech_segments.h"

#include <algorithm>
#include <string>

#include "lib/core/error.h"

namespace oxi::vad {
namespace {

void check(const SegmentParams& p) {
  const auto fail = [](const std::string& what) { throw Error("speech segments", what); };
  if (!(p.threshold >= 0.0f && p.threshold <= 1.0f)) fail("threshold must be within [0, 1]");
  if (p.neg_threshold && !(*p.neg_threshold >= 0.0f && *p.neg_threshold <= p.threshold))
    fail("the end threshold must be within [0, threshold]");
  if (p.min_speech_ms < 0 || p.min_silence_ms < 0 || p.speech_pad_ms < 0)
    fail("durations must not be negative");
  if (p.sample_rate <= 0 || p.window <= 0) fail("sample rate and window must be positive");
}

// The authors' sample counts are floats (sampling_rate * ms / 1000); kept so for other rates.
double samples_of(const SegmentParams& p, int ms) {
  return static_cast<double>(p.sample_rate) * ms / 1000.0;
}

}  // namespace

double SegmentParams::end_threshold() const {
  return neg_threshold ? static_cast<double>(*neg_threshold)
                       : std::max(static_cast<double>(threshold) - 0.15, 0.01);
}

// A transcription of get_speech_timestamps' two loops (without max_speech_duration), kept
// close to the original so the two can be read side by side.
std::vector<SpeechSegment> speech_timestamps(std::span<const float> probs, int64_t n_samples,
                                             const SegmentParams& params) {
  check(params);
  const double threshold = params.threshold, neg_threshold = params.end_threshold();
  const double min_speech = samples_of(params, params.min_speech_ms);
  const double min_silence = samples_of(params, params.min_silence_ms);
  const double pad = samples_of(params, params.speech_pad_ms);
  const int64_t window = params.window;

  std::vector<SpeechSegment> speeches;
  bool triggered = false;
  std::optional<SpeechSegment> current;
  int64_t temp_end = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    const double prob = probs[i];
    const int64_t at = window * static_cast<int64_t>(i);
    if (prob >= threshold && temp_end) temp_end = 0;
    if (prob >= threshold && !triggered) {
      triggered = true;
      current = SpeechSegment{at, 0};
      continue;
    }
    if (prob < neg_threshold && triggered) {
      if (!temp_end) temp_end = at;
      if (static_cast<double>(at - temp_end) < min_silence) continue;
      current->end = temp_end;
      if (static_cast<double>(current->end - current->start) > min_speech)
        speeches.push_back(*current);
      current.reset();
      temp_end = 0;
      triggered = false;
    }
  }
  if (current && static_cast<double>(n_samples - current->start) > min_speech) {
    current->end = n_samples;
    speeches.push_back(*current);
  }

  const auto n = static_cast<double>(n_samples);
  for (size_t i = 0; i < speeches.size(); ++i) {
    SpeechSegment& s = speeches[i];
    if (i == 0) s.start = static_cast<int64_t>(std::max(0.0, static_cast<double>(s.start) - pad));
    if (i + 1 < speeches.size()) {
      SpeechSegment& next = speeches[i + 1];
      const int64_t silence = next.start - s.end;
      if (static_cast<double>(silence) < 2 * pad) {
        s.end += silence / 2;
        next.start = std::max<int64_t>(0, next.start - silence / 2);
      } else {
        s.end = static_cast<int64_t>(std::min(n, static_cast<double>(s.end) + pad));
        next.start = static_cast<int64_t>(std::max(0.0, static_cast<double>(next.start) - pad));
      }
    } else {
      s.end = static_cast<int64_t>(std::min(n, static_cast<double>(s.end) + pad));
    }
  }
  return speeches;
}

SpeechSegmenter::SpeechSegmenter(const SegmentParams& params) : params_(params) {
  check(params_);
  threshold_ = params_.threshold;
  neg_threshold_ = params_.end_threshold();
  min_speech_ = samples_of(params_, params_.min_speech_ms);
  min_silence_ = samples_of(params_, params_.min_silence_ms);
  pad_ = samples_of(params_, params_.speech_pad_ms);
}

void SpeechSegmenter::reset() {
  index_ = 0;
  triggered_ = false;
  start_ = 0;
  temp_end_ = 0;
  pending_.reset();
}

void SpeechSegmenter::accept(int64_t start, int64_t end, std::vector<SpeechSegment>& out) {
  int64_t padded_start = static_cast<int64_t>(std::max(0.0, static_cast<double>(start) - pad_));
  if (pending_) {
    const int64_t silence = start - pending_->end;
    if (static_cast<double>(silence) < 2 * pad_) {
      out.push_back({pending_->start, pending_->end + silence / 2});
      padded_start = std::max<int64_t>(0, start - silence / 2);
    } else {
      // The stream already reaches `start`, past end + pad: the authors' clamp to the stream
      // length cannot bite.
      out.push_back({pending_->start, static_cast<int64_t>(pending_->end + pad_)});
    }
  }
  pending_ = Raw{padded_start, end};
}

std::vector<SpeechSegment> SpeechSegmenter::push(float prob_f) {
  std::vector<SpeechSegment> out;
  const double prob = prob_f;
  const int64_t at = static_cast<int64_t>(params_.window) * index_++;
  // The same steps as speech_timestamps' first loop.
  if (prob >= threshold_ && temp_end_) temp_end_ = 0;
  if (prob >= threshold_ && !triggered_) {
    triggered_ = true;
    start_ = at;
  } else if (prob < neg_threshold_ && triggered_) {
    if (!temp_end_) temp_end_ = at;
    if (static_cast<double>(at - temp_end_) >= min_silence_) {
      if (static_cast<double>(temp_end_ - start_) > min_speech_) accept(start_, temp_end_, out);
      temp_end_ = 0;
      triggered_ = false;
    }
  }
  // The pending segment is final once no later segment can start within twice the pad of its
  // end (later segments start at the current speech's start, or after this window), and its
  // padded end lies inside the samples seen (the stream reaches at least at + 1), so the
  // authors' clamp to the stream length cannot bite.
  if (pending_) {
    const int64_t earliest_next = triggered_ ? start_ : at + params_.window;
    const double padded_end = static_cast<double>(pending_->end) + pad_;
    if (static_cast<double>(earliest_next - pending_->end) >= 2 * pad_ &&
        padded_end <= static_cast<double>(at + 1)) {
      out.push_back({pending_->start, static_cast<int64_t>(pending_->end + pad_)});
      pending_.reset();
    }
  }
  return out;
}

std::vector<SpeechSegment> SpeechSegmenter::finish(int64_t n_samples) {
  std::vector<SpeechSegment> out;
  if (triggered_ && static_cast<double>(n_samples - start_) > min_speech_)
    accept(start_, n_samples, out);
  if (pending_) {
    const double end =
        std::min(static_cast<double>(n_samples), static_cast<double>(pending_->end) + pad_);
    out.push_back({pending_->start, static_cast<int64_t>(end)});
  }
  reset();
  return out;
}

}  // namespace oxi::vad
