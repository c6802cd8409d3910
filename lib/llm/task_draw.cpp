#include "lib/llm/task_draw.h"

#include <algorithm>
#include <random>

namespace oxi::llm {

std::vector<size_t> draw_task_indices(size_t n_tasks, size_t count) {
  std::mt19937 rng(1);
  std::vector<size_t> left(n_tasks);
  for (size_t i = 0; i < n_tasks; ++i) left[i] = i;
  const float scale = 1 / (1.f + static_cast<float>(std::mt19937::max()));
  std::vector<size_t> drawn;
  for (size_t i = 0; i < std::min(count, n_tasks); ++i) {
    // A draw within 128 of 2^32 rounds to 1.0 in float; llama.cpp would index past its list.
    const auto j = std::min(
        static_cast<size_t>(scale * static_cast<float>(rng()) * static_cast<float>(left.size())),
        left.size() - 1);
    drawn.push_back(left[j]);
    left[j] = left.back();
    left.pop_back();
  }
  return drawn;
}

}  // namespace oxi::llm
