// The draw of evaluation tasks llama.cpp's perplexity tool makes for --winogrande-tasks and
// --multiple-choice-tasks: std::mt19937 seeded 1, each pick an index into the tasks not drawn
// yet, computed in float as llama.cpp computes it, the drawn one's place taken by the last.
#pragma once

#include <cstddef>
#include <vector>

namespace oxi::llm {

// `count` distinct indices below n_tasks in llama.cpp's order (count <= n_tasks).
std::vector<size_t> draw_task_indices(size_t n_tasks, size_t count);

}  // namespace oxi::llm
