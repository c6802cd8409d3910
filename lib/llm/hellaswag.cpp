#include "lib/llm/hellaswag.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "lib/core/error.h"
#include "lib/llm/multiple_choice.h"

namespace oxi::llm {

std::vector<HellaswagTask> parse_hellaswag(std::string_view text) {
  std::vector<std::string> lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    lines.emplace_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  if (lines.empty() || lines.size() % 6 != 0)
    throw Error("hellaswag", std::to_string(lines.size()) +
                                 " lines: a task file has six lines a task (context, gold "
                                 "index, four endings)");
  std::vector<HellaswagTask> tasks(lines.size() / 6);
  for (size_t t = 0; t < tasks.size(); ++t) {
    const std::string& gold = lines[6 * t + 1];
    if (gold.size() != 1 || gold[0] < '0' || gold[0] > '3')
      throw Error("hellaswag", "line " + std::to_string(6 * t + 2) +
                                   ": the gold ending's index "
                                   "must be 0, 1, 2 or 3, not '" +
                                   gold + "'");
    tasks[t].context = lines[6 * t];
    tasks[t].gold = static_cast<size_t>(gold[0] - '0');
    for (size_t e = 0; e < 4; ++e) tasks[t].endings[e] = lines[6 * t + 2 + e];
  }
  return tasks;
}

std::vector<HellaswagTask> select_hellaswag_tasks(std::vector<HellaswagTask> tasks, size_t count) {
  std::mt19937 rng(1);
  std::vector<HellaswagTask> selected;
  count = std::min(count, tasks.size());
  for (size_t i = 0; i < count; ++i) {
    std::uniform_int_distribution<size_t> pick(0, tasks.size() - 1);
    const size_t at = pick(rng);
    selected.push_back(std::move(tasks[at]));
    tasks.erase(tasks.begin() + static_cast<std::ptrdiff_t>(at));
  }
  return selected;
}

HellaswagResult score_hellaswag(
    Session& session, const std::vector<HellaswagTask>& tasks,
    const std::function<bool(size_t, const HellaswagResult&)>& on_task) {
  // A HellaSwag task is a multiple-choice one: the context, four endings, the gold one correct.
  std::vector<MultipleChoiceTask> choices;
  for (const HellaswagTask& task : tasks) {
    MultipleChoiceTask& c = choices.emplace_back();
    c.question = task.context;
    c.answers.assign(task.endings.begin(), task.endings.end());
    for (size_t e = 0; e < 4; ++e) c.labels.push_back(e == task.gold ? 1 : 0);
  }
  HellaswagResult result;
  score_multiple_choice(
      session, choices,
      [&](size_t t, const MultipleChoiceResult& so_far) {
        std::array<double, 4> mean{};
        std::copy_n(so_far.mean_log_prob[t].begin(), 4, mean.begin());
        result.mean_log_prob.push_back(mean);
        result.picks.push_back(so_far.picks[t]);
        result.correct = so_far.correct;
        return !on_task || on_task(t, result);
      },
      "hellaswag", "endings");
  return result;
}

std::array<double, 2> wilson_interval(double p, size_t n) {
  const double za = 1.95996398454;
  const double z = za * za / static_cast<double>(n);
  const double spread = z * std::sqrt(static_cast<double>(n) * (4.0 * p * (1 - p) + z)) / (2 * za);
  return {(p + z * 0.5 - spread) / (1.0 + z), (p + z * 0.5 + spread) / (1.0 + z)};
}

}  // namespace oxi::llm
