// speech_timestamps (the authors' get_speech_timestamps) on hand-worked cases, and the
// incremental SpeechSegmenter against it on many random probability sequences and parameters.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "lib/core/error.h"
#include "lib/vad/speech_segments.h"

namespace oxi::vad {
namespace {

using Segments = std::vector<SpeechSegment>;

// probs: `value` over windows [from, to).
void fill(std::vector<float>& probs, size_t from, size_t to, float value) {
  for (size_t i = from; i < to; ++i) probs[i] = value;
}

// The incremental segmenter's output, and after which window (push index, or -1 for finish)
// each segment came out.
struct Incremental {
  Segments segments;
  std::vector<long> emitted_at;
};
Incremental run_incremental(const std::vector<float>& probs, int64_t n, const SegmentParams& p) {
  Incremental r;
  SpeechSegmenter s(p);
  for (size_t i = 0; i < probs.size(); ++i)
    for (const SpeechSegment& seg : s.push(probs[i])) {
      r.segments.push_back(seg);
      r.emitted_at.push_back(static_cast<long>(i));
    }
  for (const SpeechSegment& seg : s.finish(n)) {
    r.segments.push_back(seg);
    r.emitted_at.push_back(-1);
  }
  return r;
}

TEST(SpeechSegments, OneSegmentPaddedAndEmittedWhenItsSilenceEnds) {
  // Speech in windows 2..11: starts at 2 * 512 = 1024; the first silent window, 12, is the
  // end (6144); 100 ms = 1600 samples of silence are reached at window 16 (8192 - 6144 = 2048;
  // window 15 has only 1536). Padding 30 ms = 480 samples on each side.
  std::vector<float> probs(20, 0.05f);
  fill(probs, 2, 12, 0.9f);
  const Segments expected{{1024 - 480, 6144 + 480}};
  EXPECT_EQ(speech_timestamps(probs, 20 * 512), expected);
  const Incremental inc = run_incremental(probs, 20 * 512, {});
  EXPECT_EQ(inc.segments, expected);
  EXPECT_EQ(inc.emitted_at, std::vector<long>{16});
}

TEST(SpeechSegments, CloseSegmentsSplitTheSilence) {
  // Pad 100 ms = 1600 samples: segments closer than 3200 samples share the gap half and half.
  SegmentParams p;
  p.speech_pad_ms = 100;
  std::vector<float> probs(40, 0.05f);
  fill(probs, 2, 12, 0.9f);   // [1024, 6144)
  fill(probs, 17, 31, 0.9f);  // [8704, 15872): gap 2560 < 3200
  const Segments expected{{0, 6144 + 1280}, {8704 - 1280, 15872 + 1600}};
  EXPECT_EQ(speech_timestamps(probs, 40 * 512, p), expected);
  const Incremental inc = run_incremental(probs, 40 * 512, p);
  EXPECT_EQ(inc.segments, expected);
  // The first waits for the second's start to be settled (its end at window 35); the second
  // for 3200 samples after its end (window 37: 19456 - 15872 = 3584).
  EXPECT_EQ(inc.emitted_at, (std::vector<long>{35, 37}));
}

TEST(SpeechSegments, HysteresisShortSpeechAndOpenEnd) {
  std::vector<float> probs(40, 0.05f);
  fill(probs, 1, 5, 0.9f);    // 4 windows = 2048 samples: not longer than 250 ms, dropped
  fill(probs, 10, 14, 0.9f);  // speech...
  fill(probs, 14, 20, 0.4f);  // ...held by values between 0.35 and 0.5
  fill(probs, 20, 22, 0.9f);
  fill(probs, 22, 24, 0.2f);         // 2 silent windows (1024 < 1600 samples) do not end it
  fill(probs, 24, 40, 0.9f);         // speech to the end of the stream
  const int64_t n = 39 * 512 + 100;  // the last window is partial
  const Segments expected{{10 * 512 - 480, n}};
  EXPECT_EQ(speech_timestamps(probs, n), expected);
  EXPECT_EQ(run_incremental(probs, n, {}).segments, expected);
}

TEST(SpeechSegments, LiveDecision) {
  SpeechSegmenter s;
  EXPECT_FALSE(s.in_speech());
  s.push(0.6f);
  EXPECT_TRUE(s.in_speech());
  s.push(0.4f);  // between the thresholds: still speech
  EXPECT_TRUE(s.in_speech());
  s.push(0.1f);  // below the end threshold: tentatively silent
  EXPECT_FALSE(s.in_speech());
  s.push(0.7f);
  EXPECT_TRUE(s.in_speech());
  EXPECT_EQ(s.windows(), 4);
}

TEST(SpeechSegments, RejectsBadParameters) {
  SegmentParams p;
  p.threshold = 1.5f;
  EXPECT_THROW(SpeechSegmenter{p}, Error);
  p = {};
  p.min_silence_ms = -1;
  EXPECT_THROW(speech_timestamps({}, 0, p), Error);
  p = {};
  p.neg_threshold = 0.7f;  // above the start threshold
  EXPECT_THROW(SpeechSegmenter{p}, Error);
}

TEST(SpeechSegments, IncrementalEqualsWholeFileOnRandomStreams) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::uniform_int_distribution<int> ms(0, 400);
  size_t total_segments = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    SegmentParams p;
    p.threshold = 0.3f + 0.5f * unit(rng);
    if (trial % 3 == 0) p.neg_threshold = p.threshold * unit(rng);
    p.min_speech_ms = ms(rng);
    p.min_silence_ms = ms(rng) / 2;
    p.speech_pad_ms = ms(rng) / 2;
    // A two-state chain with noisy probabilities: runs of speech and silence of varied length.
    std::vector<float> probs(static_cast<size_t>(50 + rng() % 300));
    bool speech = false;
    for (float& v : probs) {
      if (unit(rng) < 0.12f) speech = !speech;
      v = speech ? 0.2f + 0.8f * unit(rng) : 0.6f * unit(rng);
    }
    const int64_t n =
        static_cast<int64_t>(probs.size() - 1) * 512 + 1 + static_cast<int64_t>(rng() % 512);
    const Segments whole = speech_timestamps(probs, n, p);
    EXPECT_EQ(run_incremental(probs, n, p).segments, whole) << "trial " << trial;
    total_segments += whole.size();
  }
  EXPECT_GT(total_segments, 4000u);  // the streams did exercise segmentation
}

}  // namespace
}  // namespace oxi::vad
