// HellaSwag scoring as llama.cpp's perplexity tool does it (--hellaswag): each task is a
// context and four endings; the model's pick is the ending whose tokens (after the tokens all
// four share) have the highest mean log-probability, and acc_norm is the share of picks that
// are the gold ending. The task file is llama.cpp's: six lines a task (the context, the gold
// ending's index 0-3, the four endings), as its hellaswag_val_full.txt holds them.
//
//   std::vector<HellaswagTask> tasks = select_hellaswag_tasks(parse_hellaswag(text), 400);
//   HellaswagResult r = score_hellaswag(session, tasks);
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace oxi::llm {

class Session;

struct HellaswagTask {
  std::string context;
  size_t gold = 0;
  std::array<std::string, 4> endings;
};

// Throws oxi::Error (line number and what is wrong) for a text that is not six lines a task.
std::vector<HellaswagTask> parse_hellaswag(std::string_view text);

// `count` tasks drawn as llama.cpp draws them (std::mt19937 seeded 1, each task picked
// uniformly among those left), all of them in that order when count >= their number.
std::vector<HellaswagTask> select_hellaswag_tasks(std::vector<HellaswagTask> tasks, size_t count);

struct HellaswagResult {
  std::vector<std::array<double, 4>> mean_log_prob;  // per task, per ending
  std::vector<size_t> picks;                         // per task: the ending with the highest
  size_t correct = 0;
  double accuracy() const { return picks.empty() ? 0 : double(correct) / picks.size(); }
};

// The endings tokenized after "context " (BOS as the model adds it), as llama.cpp joins them.
// on_task(index, result so far) after each task; false stops. Throws oxi::Error when a task
// does not fit the session's context.
HellaswagResult score_hellaswag(
    Session& session, const std::vector<HellaswagTask>& tasks,
    const std::function<bool(size_t, const HellaswagResult&)>& on_task = {});

// The Wilson score interval (95 %) of a share `p` of n trials, as llama.cpp prints it.
std::array<double, 2> wilson_interval(double p, size_t n);

}  // namespace oxi::llm
