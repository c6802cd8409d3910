#include "lib/hub/progress_bar.h"

#include <cstdio>

#include <unistd.h>

namespace oxi::hub {

std::string format_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 4) {
    bytes /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[unit]);
  return text;
}

ProgressBar::ProgressBar(std::string label, uint64_t total_bytes, uint64_t already, bool enabled)
    : label_(std::move(label)),
      total_bytes_(total_bytes),
      start_bytes_(already),
      enabled_(enabled && ::isatty(STDERR_FILENO) == 1),
      last_bytes_(already),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() {
  // An interrupted bar still gets its line ended so later output starts clean.
  if (drawn_) std::fputc('\n', stderr);
}

void ProgressBar::update(uint64_t bytes_done) {
  last_bytes_ = bytes_done;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw(bytes_done);
}

void ProgressBar::finish() {
  if (!enabled_) return;
  draw(last_bytes_);
  std::fputc('\n', stderr);
  drawn_ = false;
  enabled_ = false;
}

void ProgressBar::draw(uint64_t bytes_done) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double speed =
      seconds > 0 && bytes_done > start_bytes_ ? (bytes_done - start_bytes_) / seconds : 0.0;
  std::string line = label_ + "  " + format_bytes(static_cast<double>(bytes_done));
  if (total_bytes_ > 0) {
    char percent[16];
    std::snprintf(percent, sizeof(percent), " (%3.0f%%)", 100.0 * bytes_done / total_bytes_);
    line += " / " + format_bytes(static_cast<double>(total_bytes_)) + percent;
  }
  line += "  " + format_bytes(speed) + "/s";
  // \r returns to the line start, \033[K clears what a longer previous line left behind.
  std::fprintf(stderr, "\r%s\033[K", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace oxi::hub
