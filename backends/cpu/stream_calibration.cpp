#include "backends/cpu/stream_calibration.h"

namespace oxi::backends {

std::optional<bool> StreamCalibration::mode_for(const void* weights) {
  if (decision_) return std::nullopt;
  Matrix& m = matrices_[weights];
  if (m.encounters() >= 2 * kRoundsPerMode) {
    decide();
    return std::nullopt;
  }
  return m.encounters() % 2 == 0;  // lines first, then the page starts alone, in turn
}

void StreamCalibration::record(const void* weights, bool lines, double seconds) {
  if (decision_) return;
  Matrix& m = matrices_[weights];
  ++m.runs[lines];
  m.seconds[lines] += seconds;
}

void StreamCalibration::decide() {
  // Only the matrices timed as often in each mode: the same bytes on both sides.
  double seconds[2] = {0, 0};
  for (const auto& [weights, m] : matrices_) {
    if (m.runs[0] != m.runs[1] || m.runs[0] == 0) continue;
    seconds[0] += m.seconds[0];
    seconds[1] += m.seconds[1];
  }
  decision_ = seconds[1] <= seconds[0];
  matrices_.clear();
}

}  // namespace oxi::backends
