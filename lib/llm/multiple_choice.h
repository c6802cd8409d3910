// Multiple-choice scoring as llama.cpp's perplexity tool does it (--multiple-choice): each task
// is a question and its answers (ARC, MMLU, TruthfulQA, HellaSwag as llama.cpp's datasets hold
// them); the model's pick is the answer whose tokens after "question answer"'s shared start have
// the highest mean log-probability, and the score is the share of picks labelled correct.
//
// The task file is llama.cpp's binary format (little-endian): uint32 task count, that many
// uint32 byte offsets of the tasks in the file, then the tasks; a task is the question (a
// string: uint32 length and its bytes) and two answer sets, each a uint32 count (at most 100),
// that many strings and as many int32 labels (1 = correct). The first set (one correct answer)
// is scored; the second (several correct answers) is read past, as llama.cpp does.
//
//   std::vector<MultipleChoiceTask> tasks = read_multiple_choice(file_bytes, 0);
//   MultipleChoiceResult r = score_multiple_choice(session, tasks);
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace oxi::llm {

class Session;

struct MultipleChoiceTask {
  std::string question;
  std::vector<std::string> answers;
  std::vector<int32_t> labels;  // per answer; 1 = correct
};

// All tasks in file order when count is 0 or not below their number, else `count` of them drawn
// as llama.cpp draws them (task_draw.h), each read at its offset. Throws oxi::Error naming the
// task and what is wrong (cut short, an answer count above 100, an empty question or answer).
std::vector<MultipleChoiceTask> read_multiple_choice(std::string_view bytes, size_t count);

// The task count in the file's header; throws oxi::Error where there is none or it is 0.
size_t multiple_choice_task_count(std::string_view bytes);

struct MultipleChoiceResult {
  std::vector<std::vector<double>> mean_log_prob;  // per task, per answer
  std::vector<size_t> picks;                       // per task: the answer with the highest
  size_t correct = 0;
  size_t answers = 0;  // answers of the tasks scored, all together
  double accuracy() const { return picks.empty() ? 0 : double(correct) / picks.size(); }
};

// Each answer tokenized after "question " (BOS as the model adds it), as llama.cpp joins them.
// on_task(index, result so far) after each task; false stops. Throws oxi::Error when a task
// does not fit the session's context.
// `what` and `items` name the tasks and their answers in errors (HellaSwag scores its endings
// through this too).
MultipleChoiceResult score_multiple_choice(
    Session& session, const std::vector<MultipleChoiceTask>& tasks,
    const std::function<bool(size_t, const MultipleChoiceResult&)>& on_task = {},
    std::string_view what = "multiple choice", std::string_view items = "answers");

}  // namespace oxi::llm
