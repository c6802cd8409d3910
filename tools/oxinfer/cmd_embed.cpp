// oxinfer embed -m MODEL [--pooling mean|cls|last] [--embd-normalize N] [--json] TEXT... | -:
// text embeddings, as llama.cpp's llama-embedding computes them (lib/llm/embeddings.h): each
// TEXT (or each line of standard input for -) tokenized as the model says (BOS / EOS), run from
// an empty cache, its tokens' final-normed states pooled and normalized. One line of numbers
// per text, or with --json OpenAI's embeddings object (as `oxinfer serve` answers
// /v1/embeddings).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "lib/core/error.h"
#include "lib/llm/embeddings.h"
#include "lib/llm/engine.h"
#include "lib/llm/model.h"
#include "lib/llm/openai_api.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/commands.h"
#include "tools/oxinfer/llm_cli_options.h"
#include "tools/oxinfer/text_input.h"

namespace oxi::cli {

int run_embed(const Argv& argv) {
  ArgParser p("embed", "oxinfer embed -m MODEL [--pooling P] [--embd-normalize N] [--json] TEXT...",
              "Text embeddings (as llama-embedding): one line of numbers per TEXT, or with\n"
              "--json OpenAI's embeddings object. - reads one text per line of standard input.");
  p.option("model", "MODEL", "a .gguf file, an HF directory, or org/name[:QUANT]", "m");
  p.option("threads", "N", "CPU threads (default: every core)", "t");
  p.option("quant", "q8|q4", "quantize an HF checkpoint's matrices at load");
  p.option("pooling", "P",
           "mean, cls (the first token) or last (default: the model's pooling_type, else mean)");
  p.option("embd-normalize", "N",
           "-1 none, 0 int16 scale, 1 taxicab, 2 euclidean (default), p > 2 the p-norm");
  p.flag("json", "print OpenAI's embeddings object");
  const ParsedArgs args = p.parse(argv);
  std::vector<std::string> texts;
  for (const std::string& a : args.positional()) {
    if (a != "-") {
      texts.push_back(a);
      continue;
    }
    const std::string all = read_stdin();
    for (size_t start = 0; start < all.size();) {
      const size_t end = std::min(all.find('\n', start), all.size());
      if (end > start) texts.push_back(all.substr(start, end - start));
      start = end + 1;
    }
  }
  if (texts.empty()) throw UsageError("expected TEXT arguments (or - for standard input)");
  const long long norm = args.get_int("embd-normalize", 2);
  if (norm < -1 || norm > 64) throw UsageError("--embd-normalize must be -1..64");
  const std::unique_ptr<llm::Engine> engine = load_engine(args);
  const llm::Model& model = engine->model();
  llm::Pooling pooling = llm::default_pooling(model);
  if (const auto name = args.get("pooling")) {
    const auto parsed = llm::parse_pooling(*name);
    if (!parsed) throw UsageError("--pooling must be mean, cls or last");
    pooling = *parsed;
  }
  std::vector<std::vector<int32_t>> inputs;
  size_t total = 0;
  for (const std::string& text : texts) {
    inputs.push_back(llm::embedding_tokens(model, text));
    if (inputs.back().empty()) throw Error("embed", "'" + text + "' has no tokens");
    total += inputs.back().size();
  }
  const std::vector<std::vector<float>> vectors = llm::embed_all(
      engine->model_ptr(), engine->backend(), inputs, pooling, static_cast<int>(norm));
  if (args.flag("json")) {
    const std::string name = std::filesystem::path(*args.get("model")).filename().string();
    std::printf("%s\n",
                llm::openai::dump(llm::openai::embeddings_response(name, vectors, total)).c_str());
    return 0;
  }
  for (const std::vector<float>& v : vectors) {
    std::string line;
    for (size_t i = 0; i < v.size(); ++i) {
      char number[32];
      std::snprintf(number, sizeof number, "%s%.6f", i == 0 ? "" : " ", v[i]);
      line += number;
    }
    std::printf("%s\n", line.c_str());
  }
  return 0;
}

}  // namespace oxi::cli
