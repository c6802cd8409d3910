/* What a live element measured since READY->PAUSED: decoding time against the audio received
 * (the real-time factor) and the delay of each output, with its 99th percentile. The element's
 * worker writes it and get_property reads it, under a mutex the element owns. */
#pragma once

#include <gst/gst.h>

#include <cstdint>
#include <vector>

struct LiveStats {
  uint64_t passes = 0;           // decoder calls
  double decode_seconds = 0.0;   // wall time they took
  uint64_t audio_samples = 0;    // live audio received (16 kHz), speech and silence
  uint64_t skipped_samples = 0;  // silence the VAD kept from the decoder
  uint64_t committed_words = 0;
  uint64_t shortened = 0;  // passes run in catch-up mode (behind the latency budget)
  GstClockTime max_delay = 0;
  std::vector<GstClockTime> delays;  // one per text buffer pushed

  double rtf() const;
  GstClockTime p99_delay() const;
};
