// The log-probabilities of token sequences that share a start, as the multiple-choice scorers
// (hellaswag.h, winogrande.h) need them: the shared tokens are evaluated once, then each
// sequence's own tokens after them (but its last, whose logits score nothing).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace oxi::llm {

class Session;

struct Continuations {
  size_t shared = 0;  // tokens all sequences share (each keeps at least one of its own)
  // Per sequence s: log p(s[j + 1] | s[0..j]) for j = shared - 1 .. s.size() - 2, at j - shared
  // + 1.
  std::vector<std::vector<double>> log_probs;

  // Per sequence, the mean of its log-probabilities (what the scorers compare).
  std::vector<double> means() const;
};

// Throws oxi::Error "WHAT: task TASK: ..." (1-based) when the sequences share no token (ITEMS
// names them: "endings", "sentences") or one is longer than the session's context.
Continuations score_continuations(Session& session, std::span<const std::vector<int32_t>> sequences,
                                  std::string_view what, size_t task, std::string_view items);

}  // namespace oxi::llm
