// oxinfer imatrix -m MODEL -f FILE [-o imatrix.gguf] [--ctx 512] [--chunks N]
// [--process-output] [--output-format gguf|dat]: an importance matrix, as llama.cpp's
// llama-imatrix computes it (lib/llm/imatrix.h): the text's tokens in chunks of --ctx evaluated
// as perplexity does (its "[1]PPL,..." and the final estimate printed as it goes), each layer
// matrix's input columns' squares summed; `oxinfer quantize --imatrix FILE` then weighs each
// column's rounding error by them.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "lib/core/error.h"
#include "lib/llm/engine.h"
#include "lib/llm/imatrix.h"
#include "lib/llm/model.h"
#include "lib/llm/perplexity.h"
#include "lib/llm/session.h"
#include "lib/tokenizer/tokenizer.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/commands.h"
#include "tools/oxinfer/llm_cli_options.h"
#include "tools/oxinfer/text_input.h"

namespace oxi::cli {

int run_imatrix(const Argv& argv) {
  ArgParser p("imatrix",
              "oxinfer imatrix -m MODEL -f FILE [-o imatrix.gguf] [--ctx N] [--chunks N]",
              "An importance matrix for `oxinfer quantize --imatrix` (as llama-imatrix): the\n"
              "text in chunks of --ctx tokens, each layer matrix's input columns' squares summed.");
  p.option("model", "MODEL", "a .gguf file, an HF directory, or org/name[:QUANT]", "m");
  p.option("file", "FILE", "the text (- = stdin); at least 2 x --ctx tokens", "f");
  p.option("output", "FILE", "where to write it (default imatrix.gguf)", "o");
  p.option("output-format", "gguf|dat", "llama.cpp's GGUF form (default) or its older .dat");
  p.option("ctx", "N", "tokens per chunk (default 512)", "c");
  p.option("chunks", "N", "chunks to evaluate at most (default: all)");
  p.option("threads", "N", "CPU threads (default: every core)", "t");
  p.option("quant", "q8|q4", "quantize an HF checkpoint's matrices at load");
  p.flag("process-output", "collect output.weight too (llama-imatrix's --process-output)");
  const ParsedArgs args = p.parse(argv);
  if (!args.positional().empty())
    throw UsageError("unexpected argument '" + args.positional()[0] + "' (the text is -f FILE)");
  const auto file = args.get("file");
  if (!file) throw UsageError("-f FILE is required");
  const long long ctx = args.get_int("ctx", 512);
  if (ctx < 4 || ctx > 1 << 20) throw UsageError("--ctx must be 4..1048576");
  const long long chunks = args.get_int("chunks", 0);
  if (chunks < 0) throw UsageError("--chunks must not be negative");
  const std::string output = args.get_or("output", "imatrix.gguf");
  const std::string format =
      args.get_or("output-format", output.ends_with(".dat") ? "dat" : "gguf");
  if (format != "gguf" && format != "dat") throw UsageError("--output-format must be gguf or dat");

  const std::string text = read_text_input(*file);
  const std::unique_ptr<llm::Engine> engine = load_engine(args);
  const llm::Model& model = engine->model();
  const tokenizer::Tokenizer& tok = model.tokenizer();
  const std::vector<int32_t> tokens = tok.encode(text, tok.add_bos());

  llm::ImportanceMatrix im;
  im.datasets = {*file};
  im.chunk_size = static_cast<uint32_t>(ctx);
  llm::ImatrixCollector collector(model, engine->backend(), im, args.flag("process-output"));
  llm::Session session(engine->model_ptr(), collector, static_cast<size_t>(ctx));
  llm::PerplexityOptions options;
  options.n_ctx = static_cast<size_t>(ctx);
  options.max_chunks = static_cast<size_t>(chunks);
  llm::PerplexityResult r;
  try {
    r = llm::perplexity(session, tokens, options, [](size_t i, double ppl) {
      std::printf("[%zu]%.4f,", i + 1, ppl);
      std::fflush(stdout);
      return true;
    });
  } catch (const Error& e) {
    throw Error(*file, e.what());
  }
  im.chunk_count = static_cast<uint32_t>(r.chunks);
  im.save(output, format == "dat");
  std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", r.ppl, r.ppl_error);
  std::printf("imatrix: %zu matrices from %zu chunks of %lld tokens -> %s\n", im.entries.size(),
              r.chunks, ctx, output.c_str());
  return 0;
}

}  // namespace oxi::cli
