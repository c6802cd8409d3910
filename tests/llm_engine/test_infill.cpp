// Fill-in-the-middle prompts (lib/llm/infill.h) laid out as llama-server lays them out: the
// markers found by their GGUF keys (the older keys winning) or by their text, the repository
// pattern or snippet separators for other files, the prefix / suffix / extra budgets, the SPM
// order; the markers' padding / repository / separator tokens end generation; a model without
// markers is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/core/error.h"
#include "lib/llm/infill.h"
#include "lib/llm/model.h"
#include "lib/tokenizer/tokenizer.h"
#include "tests/common/test_data.h"
#include "tests/llm_engine/engine_fixture.h"

namespace oxi::llm::test {
namespace {

using tokenizer::TokenType;
using Ids = std::vector<int32_t>;

// Byte-fallback SentencePiece (<unk> <s> </s>, 256 bytes) and, when asked, control tokens with
// these texts after them (ids 259, 260, ...).
tokenizer::Tokenizer byte_tokenizer(const std::vector<std::string>& specials) {
  tokenizer::TokenizerSpec spec = byte_fallback_spec();
  for (const std::string& s : specials) {
    spec.tokens.push_back(s);
    spec.types.push_back(TokenType::control);
  }
  spec.scores.assign(spec.tokens.size(), 0.0f);
  spec.bos = 1;
  spec.eos = 2;
  spec.unk = 0;
  spec.add_bos = true;
  return tokenizer::Tokenizer(std::move(spec));
}

Ids text(const tokenizer::Tokenizer& tok, const std::string& s) {
  return tok.encode(s, false, false);
}
Ids cat(std::initializer_list<Ids> parts) {
  Ids out;
  for (const Ids& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}
Ids last(const Ids& v, size_t n) {
  return Ids(v.end() - static_cast<std::ptrdiff_t>(std::min(n, v.size())), v.end());
}
Ids first(const Ids& v, size_t n) {
  return Ids(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(n, v.size())));
}

TEST(Infill, MarkersFoundByTheirText) {
  // Qwen's names, then CodeLlama's (with SentencePiece's space mark).
  const auto qwen = byte_tokenizer({"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>",
                                    "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"});
  EXPECT_EQ(qwen.fim().pre, 259);
  EXPECT_EQ(qwen.fim().suf, 260);
  EXPECT_EQ(qwen.fim().mid, 261);
  EXPECT_EQ(qwen.fim().pad, 262);
  EXPECT_EQ(qwen.fim().rep, 263);
  EXPECT_EQ(qwen.fim().sep, 264);
  const auto codellama = byte_tokenizer({"\xE2\x96\x81<SUF>", "\xE2\x96\x81<PRE>", "<MID>"});
  EXPECT_EQ(codellama.fim().pre, 260);
  EXPECT_EQ(codellama.fim().suf, 259);
  EXPECT_EQ(codellama.fim().mid, 261);
  EXPECT_FALSE(codellama.fim().rep);
  EXPECT_FALSE(byte_tokenizer({}).fim().pre);
}

TEST(Infill, PromptLayoutsAndBudgets) {
  const auto tok = byte_tokenizer({"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"});
  const int32_t pre = 259, suf = 260, mid = 261, bos = 1;
  InfillInput in;
  in.prefix = text(tok, "def add(a, b):\n    return");
  in.suffix = text(tok, "\n\nprint(add(1, 2))\n");
  in.prompt = text(tok, " a");
  InfillBudget budget;
  budget.n_ctx = 4096;
  // Whole parts: <BOS> <PRE> prefix prompt <SUF> suffix <MID>.
  EXPECT_EQ(infill_tokens(tok, in, budget),
            cat({{bos, pre}, in.prefix, in.prompt, {suf}, in.suffix, {mid}}));
  // SPM order: the suffix first.
  budget.spm = true;
  EXPECT_EQ(infill_tokens(tok, in, budget),
            cat({{bos, suf}, in.suffix, {pre}, in.prefix, in.prompt, {mid}}));
  budget.spm = false;

  // A batch of 40: the prefix's last 30 tokens, the suffix's first 10 - 2 - prompt.
  budget.n_batch = 40;
  budget.n_ctx = 100;
  budget.n_predict = 20;
  EXPECT_EQ(infill_tokens(tok, in, budget), cat({{bos, pre},
                                                 last(in.prefix, 30),
                                                 in.prompt,
                                                 {suf},
                                                 first(in.suffix, 10 - 2 - in.prompt.size()),
                                                 {mid}}));

  // Other files without repository tokens: each after a snippet line, before everything; their
  // last n_ctx - batch - 2 n_predict tokens kept.
  in.extra = {{"a.py", "x = 1\n"}, {"b.py", "y = 2\n"}};
  const Ids extra = cat({text(tok, "\n\n--- snippet ---\n\n"), text(tok, "x = 1\n"),
                         text(tok, "\n\n--- snippet ---\n\n"), text(tok, "y = 2\n")});
  ASSERT_GT(extra.size(), 20u);
  const Ids rest = cat({{bos, pre},
                        last(in.prefix, 30),
                        in.prompt,
                        {suf},
                        first(in.suffix, 10 - 2 - in.prompt.size()),
                        {mid}});
  EXPECT_EQ(infill_tokens(tok, in, budget), cat({last(extra, 100 - 40 - 40), rest}));
  budget.n_ctx = 4096;
  EXPECT_EQ(infill_tokens(tok, in, budget), cat({extra, rest}));
}

TEST(Infill, RepositoryPatternWithItsTokens) {
  const auto tok = byte_tokenizer({"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>",
                                   "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"});
  const int32_t pre = 259, suf = 260, mid = 261, rep = 263, sep = 264, bos = 1;
  InfillInput in;
  in.prefix = text(tok, "int main() {");
  in.suffix = text(tok, "}");
  in.extra = {{"util.h", "int f();\n"}, {"", "// no name\n"}};
  in.extra[1].filename = "tmp";  // llama-server's name for a chunk without one
  EXPECT_EQ(infill_tokens(tok, in, {}), cat({{rep},
                                             text(tok, "myproject\n"),
                                             {sep},
                                             text(tok, "util.h\n"),
                                             text(tok, "int f();\n"),
                                             {sep},
                                             text(tok, "tmp\n"),
                                             text(tok, "// no name\n"),
                                             {sep},
                                             text(tok, "filename\n"),
                                             {bos, pre},
                                             in.prefix,
                                             {suf},
                                             in.suffix,
                                             {mid}}));
}

TEST(Infill, AModelWithoutMarkersIsRefusedNamingThem) {
  const auto tok = byte_tokenizer({"<|fim_prefix|>"});
  try {
    infill_tokens(tok, {}, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("suffix middle"), std::string::npos) << e.what();
  }
}

// GGUF keys name the markers (the older prefix / suffix / middle keys winning, as llama.cpp
// reads them last); an id outside the vocabulary is dropped; padding / repository / separator
// end generation.
TEST(Infill, MarkersFromGgufKeysAndTheirEndTokens) {
  oxi::test::TempDir dir;
  write_tiny_llama(dir / "plain.gguf");
  rewrite_gguf(dir / "plain.gguf", dir / "fim.gguf", {}, [](gguf::Writer& w) {
    w.set_u32("tokenizer.ggml.fim_pre_token_id", 290);
    w.set_u32("tokenizer.ggml.prefix_token_id", 291);
    w.set_u32("tokenizer.ggml.fim_suf_token_id", 292);
    w.set_u32("tokenizer.ggml.middle_token_id", 293);
    w.set_u32("tokenizer.ggml.fim_pad_token_id", 294);
    w.set_u32("tokenizer.ggml.fim_sep_token_id", 295);
    w.set_u32("tokenizer.ggml.fim_rep_token_id", 100000);
  });
  const auto model = Model::load(dir / "fim.gguf");
  const tokenizer::TokenizerSpec::Fim& fim = model->tokenizer().fim();
  EXPECT_EQ(fim.pre, 291);
  EXPECT_EQ(fim.suf, 292);
  EXPECT_EQ(fim.mid, 293);
  EXPECT_EQ(fim.pad, 294);
  EXPECT_EQ(fim.sep, 295);
  EXPECT_FALSE(fim.rep);
  const std::vector<int32_t> ends = model->eos_ids();
  for (int32_t id : {294, 295}) EXPECT_NE(std::find(ends.begin(), ends.end(), id), ends.end());
  for (int32_t id : {291, 292, 293}) EXPECT_EQ(std::find(ends.begin(), ends.end(), id), ends.end());
  EXPECT_FALSE(Model::load(dir / "plain.gguf")->tokenizer().fim().pre);
}

}  // namespace
}  // namespace oxi::llm::test
