// The real Silero VAD v5 weights on the authors' test file against the reference computed in
// torch (../shared/data/vad/speech-with-pauses.silero.json): probabilities, segments, and the
// streaming paths (odd chunk sizes, the incremental segmenter) against the whole-file ones.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/media/audio_decoder.h"
#include "lib/vad/vad_stream.h"
#include "tests/common/test_data.h"

namespace oxi::vad {
namespace {

namespace fs = std::filesystem;

class SileroReference : public ::testing::Test {
 protected:
  void SetUp() override {
    OXI_REQUIRE_SHARED_DATA(data);
    const fs::path dir = data / "vad";
    if (!fs::exists(dir / "silero_vad_16k.safetensors"))
      GTEST_SKIP() << "no " << (dir / "silero_vad_16k.safetensors") << " in the shared data";
    model_ = SileroVadModel::load(dir / "silero_vad_16k.safetensors");
    samples_ = media::decode_audio_file(dir / "speech-with-pauses.wav");
    std::ifstream in(dir / "speech-with-pauses.silero.json");
    const nlohmann::json ref = nlohmann::json::parse(in);
    ref_probs_ = ref.at("probs").get<std::vector<float>>();
    for (const auto& s : ref.at("segments"))
      ref_segments_.push_back({s.at(0).get<int64_t>(), s.at(1).get<int64_t>()});
    const auto& p = ref.at("segment_params");
    params_.threshold = p.at("threshold").get<float>();
    params_.min_speech_ms = p.at("min_speech_duration_ms").get<int>();
    params_.min_silence_ms = p.at("min_silence_duration_ms").get<int>();
    params_.speech_pad_ms = p.at("speech_pad_ms").get<int>();
  }

  std::shared_ptr<const SileroVadModel> model_;
  std::vector<float> samples_;
  std::vector<float> ref_probs_;
  std::vector<SpeechSegment> ref_segments_;
  SegmentParams params_;
};

TEST_F(SileroReference, ProbabilitiesAndSegmentsMatchTorch) {
  ASSERT_EQ(samples_.size(), 960000u);
  const SpeechDetection d = detect_speech(model_, samples_, params_);
  ASSERT_EQ(d.probs.size(), ref_probs_.size());
  float worst = 0.0f;
  for (size_t i = 0; i < d.probs.size(); ++i) {
    EXPECT_NEAR(d.probs[i], ref_probs_[i], 1e-4f) << "window " << i;
    worst = std::max(worst, std::abs(d.probs[i] - ref_probs_[i]));
  }
  RecordProperty("max_abs_prob_error", std::to_string(worst));
  EXPECT_EQ(d.segments, ref_segments_);
  // With the reference's own probabilities the segmentation is exact as well.
  EXPECT_EQ(speech_timestamps(ref_probs_, static_cast<int64_t>(samples_.size()), params_),
            ref_segments_);
}

TEST_F(SileroReference, ChunkedStreamingEqualsWholeFile) {
  const SpeechDetection whole = detect_speech(model_, samples_, params_);
  for (const std::vector<size_t>& sizes :
       {std::vector<size_t>{1}, {100}, {511}, {4000}, {1, 100, 511, 4000, 513, 7}}) {
    VadStream stream(model_);
    std::vector<float> probs;
    size_t at = 0, k = 0;
    while (at < samples_.size()) {
      const size_t n = std::min(sizes[k++ % sizes.size()], samples_.size() - at);
      const std::vector<float> got = stream.push({samples_.data() + at, n});
      probs.insert(probs.end(), got.begin(), got.end());
      at += n;
      EXPECT_EQ(stream.windows(), probs.size());
    }
    if (const auto last = stream.flush()) probs.push_back(*last);
    EXPECT_EQ(probs, whole.probs) << "chunk size " << sizes.front();
  }
}

TEST_F(SileroReference, IncrementalSegmenterEqualsWholeFile) {
  const SpeechDetection whole = detect_speech(model_, samples_, params_);
  SpeechSegmenter segmenter(params_);
  std::vector<SpeechSegment> segments;
  for (float p : whole.probs)
    for (const SpeechSegment& s : segmenter.push(p)) segments.push_back(s);
  // With the default parameters every segment but an open last one is out before the end.
  EXPECT_EQ(segments.size(), ref_segments_.size());
  for (const SpeechSegment& s : segmenter.finish(static_cast<int64_t>(samples_.size())))
    segments.push_back(s);
  EXPECT_EQ(segments, ref_segments_);
}

}  // namespace
}  // namespace oxi::vad
