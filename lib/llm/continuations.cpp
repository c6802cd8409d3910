#include "lib/llm/continuations.h"

#include <algorithm>
#include <string>

#include "lib/core/error.h"
#include "lib/llm/model.h"
#include "lib/llm/perplexity.h"
#include "lib/llm/session.h"

namespace oxi::llm {

std::vector<double> Continuations::means() const {
  std::vector<double> mean;
  for (const std::vector<double>& lp : log_probs) {
    double sum = 0;
    for (double v : lp) sum += v;
    mean.push_back(sum / static_cast<double>(lp.size()));
  }
  return mean;
}

Continuations score_continuations(Session& session, std::span<const std::vector<int32_t>> sequences,
                                  std::string_view what, size_t task, std::string_view items) {
  const std::string where = "task " + std::to_string(task);
  Continuations c;
  size_t shortest = sequences.front().size();
  for (const auto& s : sequences) shortest = std::min(shortest, s.size());
  const auto all_share = [&](size_t at) {
    return std::all_of(sequences.begin(), sequences.end(),
                       [&](const auto& s) { return s[at] == sequences.front()[at]; });
  };
  while (c.shared + 1 < shortest && all_share(c.shared)) ++c.shared;
  if (c.shared == 0) throw Error(what, where + ": its " + std::string(items) + " share no token");
  for (const auto& s : sequences)
    if (s.size() > session.n_ctx())
      throw Error(what, where + " has " + std::to_string(s.size()) + " tokens, the context only " +
                            std::to_string(session.n_ctx()));

  const size_t n_vocab = static_cast<size_t>(session.model().config().n_vocab);
  session.truncate(0);
  const std::span<const float> last =
      session.eval(std::span<const int32_t>(sequences.front()).first(c.shared));
  const std::vector<float> shared_logits(last.begin(), last.end());
  for (const auto& s : sequences) {
    std::vector<double>& lp = c.log_probs.emplace_back();
    lp.push_back(-negative_log_likelihood(shared_logits, s[c.shared]));
    session.truncate(c.shared);
    if (s.size() - 1 > c.shared) {
      const std::span<const float> own = session.eval(
          std::span<const int32_t>(s).subspan(c.shared, s.size() - 1 - c.shared), true);
      for (size_t j = c.shared; j + 1 < s.size(); ++j)
        lp.push_back(
            -negative_log_likelihood(own.subspan((j - c.shared) * n_vocab, n_vocab), s[j + 1]));
    }
  }
  return c;
}

}  // namespace oxi::llm
