// Fill-in-the-middle prompts for code models (llama-server's /infill): the text before and
// after a gap, perhaps other files of the project, become one token sequence the model
// continues with the middle:
//
//   [extra] <BOS> <FIM_PRE> prefix prompt <FIM_SUF> suffix <FIM_MID>
//
// where [extra] is the repository-level pattern (arXiv 2409.12186) when the model has its
// tokens, <FIM_REP>myproject\n <FIM_SEP>file\n text ... <FIM_SEP>filename\n, else each chunk
// after a "\n\n--- snippet ---\n\n" line. What is kept of each part fits llama.cpp's budget: the
// last 3/4 of a batch of the prefix, the first (batch/4 - 2 - prompt) tokens of the suffix, and
// of the extra context the last (n_ctx - batch - 2 n_predict) tokens. With spm (llama-server's
// --spm-infill) the suffix comes before the prefix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/tokenizer/tokenizer.h"

namespace oxi::llm {

struct InfillChunk {
  std::string filename = "tmp";
  std::string text;
};

struct InfillInput {
  std::vector<int32_t> prefix, suffix;  // the text before and after the gap, tokenized
  std::vector<InfillChunk> extra;       // other files of the project
  std::vector<int32_t> prompt;          // the start of the middle, if any
};

struct InfillBudget {
  size_t n_batch = 2048;  // llama-server's default batch
  size_t n_ctx = 4096;
  int n_predict = -1;  // the reply's tokens, < 0: unbounded
  bool spm = false;    // suffix, then prefix
};

// The prompt's tokens. Throws oxi::Error naming the markers the model lacks (prefix, suffix,
// middle).
std::vector<int32_t> infill_tokens(const tokenizer::Tokenizer& tok, const InfillInput& input,
                                   const InfillBudget& budget);

}  // namespace oxi::llm
