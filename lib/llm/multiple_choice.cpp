#include "lib/llm/multiple_choice.h"

#include <algorithm>
#include <cstring>

#include "lib/core/error.h"
#include "lib/llm/continuations.h"
#include "lib/llm/model.h"
#include "lib/llm/session.h"
#include "lib/llm/task_draw.h"
#include "lib/tokenizer/tokenizer.h"

namespace oxi::llm {
namespace {

// llama.cpp's bound on a task's answers ("good enough for any practical purpose").
constexpr uint32_t kMaxAnswers = 100;

[[noreturn]] void fail(const std::string& what) {
  throw Error("multiple choice", what);
}

// Reads the file's little-endian fields from a byte offset on; `where` names the task.
class FieldReader {
 public:
  FieldReader(std::string_view bytes, size_t at, std::string where)
      : bytes_(bytes), at_(at), where_(std::move(where)) {}

  uint32_t u32(const char* field) {
    need(4, field);
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<uint8_t>(bytes_[at_ + i]);
    at_ += 4;
    return v;
  }
  std::string string(const char* field) {
    const uint32_t n = u32(field);
    need(n, field);
    std::string s(bytes_.substr(at_, n));
    at_ += n;
    return s;
  }
  // An answer set: its answers and their labels.
  void answer_set(std::vector<std::string>& answers, std::vector<int32_t>& labels) {
    const uint32_t n = u32("the answer count");
    if (n > kMaxAnswers)
      fail(where_ + ": " + std::to_string(n) + " answers (at most " + std::to_string(kMaxAnswers) +
           ")");
    answers.clear();
    labels.clear();
    for (uint32_t i = 0; i < n; ++i) answers.push_back(string("an answer"));
    for (uint32_t i = 0; i < n; ++i) labels.push_back(static_cast<int32_t>(u32("a label")));
  }
  MultipleChoiceTask task() {
    MultipleChoiceTask t;
    t.question = string("the question");
    answer_set(t.answers, t.labels);
    std::vector<std::string> more_answers;  // the set with several correct answers: not scored
    std::vector<int32_t> more_labels;
    answer_set(more_answers, more_labels);
    if (t.question.empty() || t.answers.empty()) fail(where_ + ": an empty question or no answers");
    if (std::any_of(t.answers.begin(), t.answers.end(), [](const auto& a) { return a.empty(); }))
      fail(where_ + ": an empty answer");
    return t;
  }
  size_t at() const { return at_; }

 private:
  void need(size_t n, const char* field) const {
    if (bytes_.size() - at_ < n)
      fail(where_ + ": the file ends inside " + field + " (byte " + std::to_string(at_) + " of " +
           std::to_string(bytes_.size()) + ")");
  }
  std::string_view bytes_;
  size_t at_;
  std::string where_;
};

}  // namespace

size_t multiple_choice_task_count(std::string_view bytes) {
  const uint32_t n_task = bytes.size() < 4 ? 0 : FieldReader(bytes, 0, "").u32("");
  if (n_task == 0) fail("no tasks");
  return n_task;
}

std::vector<MultipleChoiceTask> read_multiple_choice(std::string_view bytes, size_t count) {
  const size_t n_task = multiple_choice_task_count(bytes);
  FieldReader header(bytes, 4, "the header");
  if ((bytes.size() - 4) / 4 < n_task)
    fail("the file ends inside the task offsets (" + std::to_string(n_task) + " tasks)");
  std::vector<size_t> offset(n_task);
  for (size_t i = 0; i < n_task; ++i) offset[i] = header.u32("the task offsets");

  std::vector<MultipleChoiceTask> tasks;
  if (count == 0 || count >= n_task) {
    // All of them, one after the other from the end of the offsets, as llama.cpp reads them.
    size_t at = header.at();
    for (size_t i = 0; i < n_task; ++i) {
      FieldReader r(bytes, at, "task " + std::to_string(i + 1) + " of " + std::to_string(n_task));
      tasks.push_back(r.task());
      at = r.at();
    }
    return tasks;
  }
  for (size_t i : draw_task_indices(n_task, count)) {
    if (offset[i] > bytes.size())
      fail("task " + std::to_string(i + 1) + ": its offset " + std::to_string(offset[i]) +
           " is past the file's end");
    FieldReader r(bytes, offset[i],
                  "task " + std::to_string(i + 1) + " at byte " + std::to_string(offset[i]));
    tasks.push_back(r.task());
  }
  return tasks;
}

MultipleChoiceResult score_multiple_choice(
    Session& session, const std::vector<MultipleChoiceTask>& tasks,
    const std::function<bool(size_t, const MultipleChoiceResult&)>& on_task, std::string_view what,
    std::string_view items) {
  const tokenizer::Tokenizer& tok = session.model().tokenizer();
  MultipleChoiceResult result;
  for (size_t t = 0; t < tasks.size(); ++t) {
    const MultipleChoiceTask& task = tasks[t];
    std::vector<std::vector<int32_t>> seq;
    for (const std::string& answer : task.answers)
      seq.push_back(tok.encode(task.question + " " + answer, tok.add_bos()));
    // Each answer's tokens after those all share, the first from the shared ones' logits.
    const Continuations c = score_continuations(session, seq, what, t + 1, items);
    std::vector<double> mean = c.means();
    const size_t pick =
        static_cast<size_t>(std::max_element(mean.begin(), mean.end()) - mean.begin());
    result.mean_log_prob.push_back(std::move(mean));
    result.picks.push_back(pick);
    result.correct += task.labels[pick] == 1;
    result.answers += task.answers.size();
    if (on_task && !on_task(t, result)) break;
  }
  return result;
}

}  // namespace oxi::llm
