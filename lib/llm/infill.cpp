#include "lib/llm/infill.h"

#include <algorithm>
#include <string_view>

#include "lib/core/error.h"

namespace oxi::llm {
namespace {

// Text as llama.cpp's common_tokenize(text, add_special=false, parse_special=false).
std::vector<int32_t> plain(const tokenizer::Tokenizer& tok, std::string_view text) {
  return tok.encode(text, /*add_bos=*/false, /*parse_special=*/false);
}

void append(std::vector<int32_t>& to, const std::vector<int32_t>& ids) {
  to.insert(to.end(), ids.begin(), ids.end());
}

}  // namespace

std::vector<int32_t> infill_tokens(const tokenizer::Tokenizer& tok, const InfillInput& input,
                                   const InfillBudget& budget) {
  const tokenizer::TokenizerSpec::Fim& fim = tok.fim();
  std::string missing;
  if (!fim.pre) missing += " prefix";
  if (!fim.suf) missing += " suffix";
  if (!fim.mid) missing += " middle";
  if (!missing.empty())
    throw Error("infill", "the model has no fill-in-the-middle token for:" + missing);

  // The project's other files, before everything.
  std::vector<int32_t> extra;
  if (fim.rep) {
    extra.push_back(*fim.rep);
    append(extra, plain(tok, "myproject\n"));
  }
  for (const InfillChunk& chunk : input.extra) {
    if (fim.sep) {
      extra.push_back(*fim.sep);
      append(extra, plain(tok, chunk.filename + "\n"));
    } else {
      append(extra, plain(tok, "\n\n--- snippet ---\n\n"));
    }
    append(extra, plain(tok, chunk.text));
  }
  if (fim.sep) {
    extra.push_back(*fim.sep);
    append(extra, plain(tok, "filename\n"));
  }

  // The prefix's end and the suffix's start that fit a batch (3 : 1), the rest of the context
  // for the extra files' end.
  const auto batch = static_cast<long long>(budget.n_batch);
  const long long prefix_take =
      std::min<long long>(static_cast<long long>(input.prefix.size()), 3 * (batch / 4));
  const long long suffix_take = std::min<long long>(
      static_cast<long long>(input.suffix.size()),
      std::max<long long>(0, batch / 4 - (2 + static_cast<long long>(input.prompt.size()))));
  const long long extra_take =
      std::min<long long>(std::max<long long>(0, static_cast<long long>(budget.n_ctx) - batch -
                                                     2 * static_cast<long long>(budget.n_predict)),
                          static_cast<long long>(extra.size()));

  std::vector<int32_t> prefix{*fim.pre};
  prefix.insert(prefix.end(), input.prefix.end() - prefix_take, input.prefix.end());
  append(prefix, input.prompt);
  std::vector<int32_t> suffix{*fim.suf};
  suffix.insert(suffix.end(), input.suffix.begin(), input.suffix.begin() + suffix_take);

  std::vector<int32_t> out(extra.end() - extra_take, extra.end());
  if (tok.add_bos() && tok.bos()) out.push_back(*tok.bos());
  append(out, budget.spm ? suffix : prefix);
  append(out, budget.spm ? prefix : suffix);
  out.push_back(*fim.mid);
  return out;
}

}  // namespace oxi::llm
