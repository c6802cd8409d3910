// oxinfer perplexity -m MODEL -f FILE [--ctx N] [--chunks N]: a model's perplexity over a text,
// as llama.cpp's perplexity tool computes it (lib/llm/perplexity.h), to compare weight formats
// and check a converted model on a reference text such as wikitext-2's wiki.test.raw.
#include <chrono>
#include <cstdio>
#include <string>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "lib/core/error.h"
#include "lib/llm/engine.h"
#include "lib/llm/perplexity.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/commands.h"
#include "tools/oxinfer/llm_cli_options.h"
#include "tools/oxinfer/text_input.h"

namespace oxi::cli {

int run_perplexity(const Argv& argv) {
  ArgParser p("perplexity", "oxinfer perplexity -m MODEL -f FILE [--ctx N] [--chunks N]",
              "Perplexity of MODEL over the text in FILE, as llama.cpp's perplexity: the tokens\n"
              "in chunks of --ctx, each from an empty cache (BOS first where the model adds "
              "one),\nthe second half of each chunk scored. Prints [1]PPL,[2]PPL,... (the "
              "perplexity\nover the chunks so far) and 'Final estimate: PPL = X +/- E'; with "
              "--json one object.");
  p.option("model", "MODEL", "a GGUF file, an HF directory or org/name[:QUANT]", "m");
  p.option("file", "FILE", "the text (- = stdin); at least 2 x --ctx tokens", "f");
  p.option("ctx", "N", "tokens per chunk (default 512)", "c");
  p.option("chunks", "N", "score at most N chunks (default: all)");
  p.flag("json", "print one JSON object: ppl, ppl_error, chunks, tokens_scored, ...");
  add_cache_type_option(p);
  p.threads_option();
  p.option("quant", "q8|q4", "quantize an HF checkpoint's matrices at load");
  const ParsedArgs args = p.parse(argv);
  if (!args.positional().empty())
    throw UsageError("unexpected argument '" + args.positional()[0] + "' (the text is -f FILE)");
  const auto model = args.get("model");
  if (!model) throw UsageError("-m MODEL is required");
  const auto file = args.get("file");
  if (!file) throw UsageError("-f FILE is required");
  const long long ctx = args.get_int("ctx", 512);
  if (ctx < 4 || ctx > 1 << 20) throw UsageError("--ctx must be 4..1048576");
  const long long chunks = args.get_int("chunks", 0);
  if (chunks < 0) throw UsageError("--chunks must not be negative");
  const long long threads = args.get_int("threads", 0);
  if (threads < 0 || threads > 4096) throw UsageError("--threads must be 0..4096");

  const std::string text = *file == "-" ? read_stdin() : read_text_file(*file);
  llm::EngineOptions eo;
  eo.threads = static_cast<int>(threads);
  eo.n_ctx = static_cast<size_t>(ctx);
  eo.kv_type = cache_type_option(args);
  if (const auto quant = args.get("quant")) eo.quant = llm::parse_load_quant(*quant);
  const std::unique_ptr<llm::Engine> engine = llm::Engine::load(*model, eo);
  const tokenizer::Tokenizer& tok = engine->model().tokenizer();
  const std::vector<int32_t> tokens = tok.encode(text, tok.add_bos());

  llm::PerplexityOptions options;
  options.n_ctx = static_cast<size_t>(ctx);
  options.max_chunks = static_cast<size_t>(chunks);
  const bool json = args.flag("json");
  spdlog::info("perplexity: {} tokens, chunks of {}", tokens.size(), options.n_ctx);
  const auto start = std::chrono::steady_clock::now();
  llm::PerplexityResult r;
  try {
    r = llm::perplexity(engine->session(), tokens, options, [&](size_t i, double ppl) {
      if (!json) {
        std::printf("[%zu]%.4f,", i + 1, ppl);
        std::fflush(stdout);
      }
      return true;
    });
  } catch (const Error& e) {
    throw Error(*file, e.what());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (json) {
    const nlohmann::ordered_json out = {{"ppl", r.ppl},
                                        {"ppl_error", r.ppl_error},
                                        {"mean_nll", r.mean_nll},
                                        {"chunks", r.chunks},
                                        {"ctx", options.n_ctx},
                                        {"tokens", tokens.size()},
                                        {"tokens_scored", r.scored},
                                        {"chunk_ppl", r.running},
                                        {"seconds", seconds}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", r.ppl, r.ppl_error);
  }
  spdlog::info("perplexity: {} chunks, {} tokens scored in {:.1f} s", r.chunks, r.scored, seconds);
  return 0;
}

}  // namespace oxi::cli
