// Winogrande scoring as llama.cpp's perplexity tool does it (--winogrande): each task is a
// sentence with a blank ("_") and two choices for it; the model's pick is the choice after which
// the rest of the sentence is likelier (mean log-probability of its tokens but the last, the
// choice's own tokens scored too when the rest is 3 tokens or fewer). The task file is llama.cpp's
// CSV: index, sentence (quoted when it holds commas), choice 1, choice 2, answer (1 or 2).
//
// One difference from llama.cpp: when the choices' own tokens are scored, llama.cpp scores the
// second choice's first token with the wrong logits (its FIXME); here both use the logits after
// the tokens the two sentences share.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace oxi::llm {

class Session;

struct WinograndeTask {
  std::string first, second;  // the sentence before and after the blank
  std::array<std::string, 2> choices;
  int answer = 1;  // 1 or 2
};

// Lines that are not such a row are skipped (as llama.cpp does); throws oxi::Error when none is.
std::vector<WinograndeTask> parse_winogrande(std::string_view csv);

// `count` tasks drawn as llama.cpp draws them (std::mt19937 seeded 1); all, in file order, when
// count is 0 or not below their number.
std::vector<WinograndeTask> select_winogrande_tasks(std::vector<WinograndeTask> tasks,
                                                    size_t count);

struct WinograndeResult {
  std::vector<std::array<double, 2>> scores;  // per task, per choice
  std::vector<int> picks;                     // 1 or 2
  size_t correct = 0;
  double accuracy() const { return picks.empty() ? 0 : double(correct) / picks.size(); }
};

// on_task(index, result so far) after each task; false stops. Throws oxi::Error when a task does
// not fit the session's context.
WinograndeResult score_winogrande(
    Session& session, const std::vector<WinograndeTask>& tasks,
    const std::function<bool(size_t, const WinograndeResult&)>& on_task = {});

}  // namespace oxi::llm
