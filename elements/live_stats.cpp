#include "elements/live_stats.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

double LiveStats::rtf() const {
  return audio_samples ? decode_seconds / (static_cast<double>(audio_samples) / 16000.0) : 0.0;
}

GstClockTime LiveStats::p99_delay() const {
  if (delays.empty()) return 0;
  std::vector<GstClockTime> d = delays;
  const size_t k = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(d.size()))) - 1;
  std::nth_element(d.begin(), d.begin() + static_cast<ptrdiff_t>(k), d.end());
  return d[k];
}
