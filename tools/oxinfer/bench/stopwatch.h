// Wall-clock timing for the benchmarks: the steady clock, read as seconds in a double.
#pragma once

#include <chrono>

namespace oxi::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Adds the seconds from construction to destruction to `total` (also when the timed call
// throws).
class Stopwatch {
 public:
  explicit Stopwatch(double& total) : total_(total), start_(Clock::now()) {}
  ~Stopwatch() { total_ += seconds_since(start_); }
  Stopwatch(const Stopwatch&) = delete;
  Stopwatch& operator=(const Stopwatch&) = delete;

 private:
  double& total_;
  Clock::time_point start_;
};

}  // namespace oxi::bench
