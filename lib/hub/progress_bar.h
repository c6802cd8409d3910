// A one-line download progress bar on stderr: name, bytes / total, percentage, speed.
// Draws nothing when disabled or when stderr is not a terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace oxi::hub {

class ProgressBar {
 public:
  // `already` bytes were on disk before this transfer (a resumed download): they count toward
  // the position but not the speed.
  ProgressBar(std::string label, uint64_t total_bytes, uint64_t already, bool enabled);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Redraws at most ten times a second.
  void update(uint64_t bytes_done);
  // Draws the final state and ends the line.
  void finish();

 private:
  void draw(uint64_t bytes_done);

  std::string label_;
  uint64_t total_bytes_;
  uint64_t start_bytes_;
  bool enabled_;
  bool drawn_ = false;
  uint64_t last_bytes_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

// "1.5 GiB", "12.0 MiB", "512 B".
std::string format_bytes(double bytes);

}  // namespace oxi::hub
