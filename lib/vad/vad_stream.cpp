#include "lib/vad/vad_stream.h"

#include <algorithm>

namespace oxi::vad {

VadStream::VadStream(std::shared_ptr<const SileroVadModel> model) : vad_(std::move(model)) {
  pending_.reserve(kWindow);
}

std::vector<float> VadStream::push(std::span<const float> samples) {
  std::vector<float> probs;
  probs.reserve((pending_.size() + samples.size()) / kWindow);
  samples_ += samples.size();
  // Top up a partial window first, then run whole windows straight from the input.
  if (!pending_.empty()) {
    const size_t take = std::min(kWindow - pending_.size(), samples.size());
    pending_.insert(pending_.end(), samples.begin(), samples.begin() + take);
    samples = samples.subspan(take);
    if (pending_.size() < kWindow) return probs;
    probs.push_back(vad_.process(std::span<const float, kWindow>(pending_.data(), kWindow)));
    pending_.clear();
  }
  while (samples.size() >= kWindow) {
    probs.push_back(vad_.process(samples.first<kWindow>()));
    samples = samples.subspan(kWindow);
  }
  pending_.assign(samples.begin(), samples.end());
  windows_ += probs.size();
  return probs;
}

std::optional<float> VadStream::flush() {
  std::optional<float> prob;
  if (!pending_.empty()) {
    pending_.resize(kWindow, 0.0f);
    prob = vad_.process(std::span<const float, kWindow>(pending_.data(), kWindow));
  }
  reset();
  return prob;
}

void VadStream::reset() {
  vad_.reset();
  pending_.clear();
  samples_ = 0;
  windows_ = 0;
}

SpeechDetection detect_speech(std::shared_ptr<const SileroVadModel> model,
                              std::span<const float> samples, const SegmentParams& params) {
  SpeechDetection d;
  VadStream stream(std::move(model));
  d.probs = stream.push(samples);
  if (const auto last = stream.flush()) d.probs.push_back(*last);
  d.segments = speech_timestamps(d.probs, static_cast<int64_t>(samples.size()), params);
  return d;
}

}  // namespace oxi::vad
