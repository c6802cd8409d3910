#include "lib/llm/winogrande.h"

#include <algorithm>
#include <sstream>

#include "lib/core/error.h"
#include "lib/llm/continuations.h"
#include "lib/llm/model.h"
#include "lib/llm/session.h"
#include "lib/llm/task_draw.h"
#include "lib/tokenizer/tokenizer.h"

namespace oxi::llm {
namespace {

// The rest of the sentence this many tokens or fewer: the choice's tokens are scored too.
constexpr size_t kMinTrailing = 3;

}  // namespace

std::vector<WinograndeTask> parse_winogrande(std::string_view csv) {
  std::vector<WinograndeTask> tasks;
  std::istringstream in{std::string(csv)};
  for (std::string line; std::getline(in, line);) {
    // The first four commas outside quotes.
    std::array<size_t, 4> comma{};
    size_t found = 0;
    bool quoted = false;
    for (size_t i = 0; i < line.size() && found < 4; ++i) {
      if (line[i] == '"') quoted = !quoted;
      if (!quoted && line[i] == ',') comma[found++] = i;
    }
    if (found != 4) continue;
    std::string sentence = line.substr(comma[0] + 1, comma[1] - comma[0] - 1);
    if (sentence.size() >= 2 && sentence.front() == '"' && sentence.back() == '"')
      sentence = sentence.substr(1, sentence.size() - 2);
    const size_t blank = sentence.find('_');
    const std::string answer = line.substr(comma[3] + 1);
    if (blank == std::string::npos || (answer.rfind('1', 0) != 0 && answer.rfind('2', 0) != 0))
      continue;
    WinograndeTask t;
    t.first = sentence.substr(0, blank);
    t.second = sentence.substr(blank + 1);
    t.choices = {line.substr(comma[1] + 1, comma[2] - comma[1] - 1),
                 line.substr(comma[2] + 1, comma[3] - comma[2] - 1)};
    t.answer = answer[0] - '0';
    tasks.push_back(std::move(t));
  }
  if (tasks.empty())
    throw Error("winogrande",
                "no task: expected CSV rows of index, sentence with _, choice 1, "
                "choice 2, answer 1 or 2");
  return tasks;
}

std::vector<WinograndeTask> select_winogrande_tasks(std::vector<WinograndeTask> tasks,
                                                    size_t count) {
  if (count == 0 || count >= tasks.size()) return tasks;
  std::vector<WinograndeTask> selected;
  for (size_t i : draw_task_indices(tasks.size(), count)) selected.push_back(std::move(tasks[i]));
  return selected;
}

WinograndeResult score_winogrande(
    Session& session, const std::vector<WinograndeTask>& tasks,
    const std::function<bool(size_t, const WinograndeResult&)>& on_task) {
  const tokenizer::Tokenizer& tok = session.model().tokenizer();
  WinograndeResult result;
  for (size_t t = 0; t < tasks.size(); ++t) {
    const WinograndeTask& task = tasks[t];
    std::array<std::vector<int32_t>, 2> seq;
    std::array<size_t, 2> base{};
    for (size_t c = 0; c < 2; ++c) {
      seq[c] = tok.encode(task.first + task.choices[c] + task.second, tok.add_bos());
      base[c] = tok.encode(task.first + task.choices[c], tok.add_bos()).size();
    }
    const Continuations cont = score_continuations(session, seq, "winogrande", t + 1, "sentences");
    const size_t shared = cont.shared;
    const bool skip_choice =
        seq[0].size() - shared > kMinTrailing && seq[1].size() - shared > kMinTrailing;
    std::array<double, 2> score{};
    for (size_t c = 0; c < 2; ++c) {
      const std::vector<int32_t>& s = seq[c];
      const size_t from = std::clamp(skip_choice ? base[c] : shared, shared, s.size() - 1);
      const size_t drop_last = s.size() - from > 1 ? 1 : 0;
      // The tokens after `from - 1` up to the last (or the one before it): log_probs holds
      // position j's at j - shared + 1.
      double sum = 0;
      size_t n = 0;
      for (size_t j = from - 1; j + 1 + drop_last < s.size(); ++j, ++n)
        sum += cont.log_probs[c][j + 1 - shared];
      score[c] = n > 0 ? sum / static_cast<double>(n) : 0;
    }
    const int pick = score[0] > score[1] ? 1 : 2;
    result.scores.push_back(score);
    result.picks.push_back(pick);
    result.correct += pick == task.answer;
    if (on_task && !on_task(t, result)) break;
  }
  return result;
}

}  // namespace oxi::llm
