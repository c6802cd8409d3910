#include "lib/llm/hellaswag.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "lib/core/error.h"
#include "lib/llm/continuations.h"
#include "lib/llm/model.h"
#include "lib/llm/session.h"
#include "lib/tokenizer/tokenizer.h"

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
  const tokenizer::Tokenizer& tok = session.model().tokenizer();
  HellaswagResult result;
  for (size_t t = 0; t < tasks.size(); ++t) {
    const HellaswagTask& task = tasks[t];
    std::array<std::vector<int32_t>, 4> seq;
    for (size_t e = 0; e < 4; ++e)
      seq[e] = tok.encode(task.context + " " + task.endings[e], tok.add_bos());
    // Each ending's tokens after those all four share, the first from the shared ones' logits.
    const Continuations c = score_continuations(session, seq, "hellaswag", t + 1, "endings");
    const std::vector<double> means = c.means();
    std::array<double, 4> mean{};
    std::copy_n(means.begin(), 4, mean.begin());
    const size_t pick =
        static_cast<size_t>(std::max_element(mean.begin(), mean.end()) - mean.begin());
    result.mean_log_prob.push_back(mean);
    result.picks.push_back(pick);
    result.correct += pick == task.gold;
    if (on_task && !on_task(t, result)) break;
  }
  return result;
}

std::array<double, 2> wilson_interval(double p, size_t n) {
  const double za = 1.95996398454;
  const double z = za * za / static_cast<double>(n);
  const double spread = z * std::sqrt(static_cast<double>(n) * (4.0 * p * (1 - p) + z)) / (2 * za);
  return {(p + z * 0.5 - spread) / (1.0 + z), (p + z * 0.5 + spread) / (1.0 + z)};
}

}  // namespace oxi::llm
