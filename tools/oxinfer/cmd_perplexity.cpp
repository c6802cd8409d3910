// oxinfer perplexity -m MODEL -f FILE [--ctx N] [--chunks N]: a model's perplexity over a text,
// as llama.cpp's perplexity tool computes it (lib/llm/perplexity.h), to compare weight formats
// and check a converted model on a reference text such as wikitext-2's wiki.test.raw. With
// --kl-divergence-base FILE the base model's log-probabilities are saved in llama.cpp's file
// format; --kl-divergence then compares another model (a quantization of it) with them
// (lib/llm/kl_divergence.h), printing llama.cpp's statistics. --hellaswag scores llama.cpp's
// HellaSwag task file instead (lib/llm/hellaswag.h), --winogrande its Winogrande CSV
// (lib/llm/winogrande.h), --multiple-choice its binary file of questions and answers
// (lib/llm/multiple_choice.h). --ppl-stride S scores overlapping windows instead of whole chunks.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "lib/core/error.h"
#include "lib/llm/engine.h"
#include "lib/llm/hellaswag.h"
#include "lib/llm/kl_divergence.h"
#include "lib/llm/log_prob_file.h"
#include "lib/llm/multiple_choice.h"
#include "lib/llm/perplexity.h"
#include "lib/llm/winogrande.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/commands.h"
#include "tools/oxinfer/llm_cli_options.h"
#include "tools/oxinfer/text_input.h"

namespace oxi::cli {
namespace {

void print_kl_chunk(size_t index, const llm::KlDivergence& k) {
  if (index == 0)
    std::printf(
        "chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence"
        "              \u0394p RMS            Same top p\n");
  const llm::Estimate ppl = k.ppl(), ratio = k.ln_ppl_ratio(), kld = k.mean_kld(),
                      rms = k.rms_p_diff(), top = k.same_top();
  std::printf(
      "%4zu    %9.4f \u00b1 %9.4f    %10.5f \u00b1 %10.5f    %10.5f \u00b1 %10.5f    %6.3f "
      "\u00b1 %6.3f %%    %6.3f \u00b1 %6.3f %%\n",
      index + 1, ppl.value, ppl.error, ratio.value, ratio.error, kld.value, kld.error,
      100 * rms.value, 100 * rms.error, 100 * top.value, 100 * top.error);
  std::fflush(stdout);
}

// llama.cpp's three blocks of statistics, with its labels.
void print_kl_summary(const llm::KlDivergence& k) {
  const auto line = [](const char* label, llm::Estimate e) {
    std::printf("%-30s: %10.6f \u00b1 %10.6f\n", label, e.value, e.error);
  };
  std::printf("\n====== Perplexity statistics ======\n");
  line("Mean PPL(Q)", k.ppl());
  line("Mean PPL(base)", k.base_ppl());
  std::printf("Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%\n", 100 * k.ln_ppl_correlation());
  line("Mean ln(PPL(Q)/PPL(base))", k.ln_ppl_ratio());
  line("Mean PPL(Q)/PPL(base)", k.ppl_ratio());
  line("Mean PPL(Q)-PPL(base)", k.ppl_difference());
  std::printf("\n====== KL divergence statistics ======\n");
  const llm::Estimate kld = k.mean_kld();
  std::printf("Mean    KLD: %10.6f \u00b1 %10.6f\n", kld.value, kld.error);
  const std::pair<const char*, double> kld_rows[] = {
      {"Maximum KLD", 1.0},  {"99.9%   KLD", 0.999}, {"99.0%   KLD", 0.99}, {"95.0%   KLD", 0.95},
      {"90.0%   KLD", 0.9},  {"Median  KLD", 0.5},   {"10.0%   KLD", 0.1},  {" 5.0%   KLD", 0.05},
      {" 1.0%   KLD", 0.01}, {" 0.1%   KLD", 0.001}, {"Minimum KLD", 0.0}};
  for (const auto& [label, q] : kld_rows) std::printf("%s: %10.6f\n", label, k.kld_quantile(q));
  std::printf("\n====== Token probability statistics ======\n");
  const llm::Estimate dp = k.mean_p_diff();
  std::printf("Mean    \u0394p: %6.3f \u00b1 %5.3f %%\n", 100 * dp.value, 100 * dp.error);
  const std::pair<const char*, double> dp_rows[] = {
      {"Maximum \u0394p", 1.0},  {"99.9%   \u0394p", 0.999}, {"99.0%   \u0394p", 0.99},
      {"95.0%   \u0394p", 0.95}, {"90.0%   \u0394p", 0.9},   {"75.0%   \u0394p", 0.75},
      {"Median  \u0394p", 0.5},  {"25.0%   \u0394p", 0.25},  {"10.0%   \u0394p", 0.1},
      {" 5.0%   \u0394p", 0.05}, {" 1.0%   \u0394p", 0.01},  {" 0.1%   \u0394p", 0.001},
      {"Minimum \u0394p", 0.0}};
  for (const auto& [label, q] : dp_rows)
    std::printf("%s: %6.3f%%\n", label, 100 * k.p_diff_quantile(q));
  const llm::Estimate rms = k.rms_p_diff(), top = k.same_top();
  std::printf("RMS \u0394p    : %6.3f \u00b1 %5.3f %%\n", 100 * rms.value, 100 * rms.error);
  std::printf("Same top p: %6.3f \u00b1 %5.3f %%\n", 100 * top.value, 100 * top.error);
}

nlohmann::ordered_json kl_json(const llm::KlDivergence& k, size_t chunks, size_t n_ctx) {
  const auto estimate = [](nlohmann::ordered_json& j, const std::string& name, llm::Estimate e) {
    j[name] = e.value;
    j[name + "_error"] = e.error;
  };
  nlohmann::ordered_json j;
  estimate(j, "ppl", k.ppl());
  estimate(j, "base_ppl", k.base_ppl());
  j["ln_ppl_correlation"] = k.ln_ppl_correlation();
  estimate(j, "ln_ppl_ratio", k.ln_ppl_ratio());
  estimate(j, "ppl_ratio", k.ppl_ratio());
  estimate(j, "ppl_difference", k.ppl_difference());
  estimate(j, "kld_mean", k.mean_kld());
  j["kld_max"] = k.kld_quantile(1);
  j["kld_99"] = k.kld_quantile(0.99);
  j["kld_median"] = k.kld_quantile(0.5);
  j["kld_min"] = k.kld_quantile(0);
  estimate(j, "p_diff_mean", k.mean_p_diff());
  estimate(j, "p_diff_rms", k.rms_p_diff());
  estimate(j, "same_top", k.same_top());
  j["chunks"] = chunks;
  j["ctx"] = n_ctx;
  j["tokens_scored"] = k.count();
  return j;
}

// --kl-divergence: the model against the base file's log-probabilities.
int run_kl_divergence(const ParsedArgs& args, const std::string& model, llm::EngineOptions eo,
                      size_t max_chunks, bool json) {
  const std::string base_file = *args.get("kl-divergence-base");
  llm::LogProbReader base(base_file);
  if (args.has("ctx") && static_cast<size_t>(args.get_int("ctx", 0)) != base.n_ctx())
    throw UsageError("--ctx " + *args.get("ctx") + " is not the base file's " +
                     std::to_string(base.n_ctx()) + " (leave it out)");
  eo.n_ctx = base.n_ctx();
  const std::unique_ptr<llm::Engine> engine = llm::Engine::load(model, eo);
  size_t chunks = 0;
  const llm::KlDivergence k = naming_file(base_file, [&] {
    return llm::kl_divergence(engine->session(), base, max_chunks,
                              [&](size_t i, const llm::KlDivergence& so_far) {
                                chunks = i + 1;
                                if (!json) print_kl_chunk(i, so_far);
                                return true;
                              });
  });
  if (json)
    std::printf("%s\n", kl_json(k, chunks, base.n_ctx()).dump().c_str());
  else
    print_kl_summary(k);
  return 0;
}

// --hellaswag: FILE holds llama.cpp's HellaSwag tasks.
int run_hellaswag(const std::string& file, const std::string& model, const llm::EngineOptions& eo,
                  size_t count, bool json) {
  const std::string text = read_text_input(file);
  const std::vector<llm::HellaswagTask> tasks = naming_file(
      file, [&] { return llm::select_hellaswag_tasks(llm::parse_hellaswag(text), count); });
  spdlog::info("hellaswag: {} tasks", tasks.size());
  const std::unique_ptr<llm::Engine> engine = llm::Engine::load(model, eo);
  if (!json) std::printf("\ntask\tacc_norm\t95%% confidence interval\n");
  const llm::HellaswagResult r = naming_file(file, [&] {
    return llm::score_hellaswag(
        engine->session(), tasks, [&](size_t i, const llm::HellaswagResult& so_far) {
          if (json) return true;
          const double p = so_far.accuracy();
          const auto [lo, hi] = llm::wilson_interval(p, i + 1);
          std::printf("%zu\t%3.8f%%\t[%3.4f%%, %3.4f%%]\n", i + 1, 100 * p, 100 * lo, 100 * hi);
          std::fflush(stdout);
          return true;
        });
  });
  if (json) {
    const auto [lo, hi] = llm::wilson_interval(r.accuracy(), r.picks.size());
    const nlohmann::ordered_json out = {{"tasks", r.picks.size()},
                                        {"correct", r.correct},
                                        {"acc_norm", 100 * r.accuracy()},
                                        {"ci95", {100 * lo, 100 * hi}},
                                        {"picks", r.picks}};
    std::printf("%s\n", out.dump().c_str());
  }
  return 0;
}

// --winogrande: FILE holds llama.cpp's Winogrande CSV.
int run_winogrande(const std::string& file, const std::string& model, const llm::EngineOptions& eo,
                   size_t count, bool json) {
  const std::string text = read_text_input(file);
  const std::vector<llm::WinograndeTask> tasks = naming_file(
      file, [&] { return llm::select_winogrande_tasks(llm::parse_winogrande(text), count); });
  spdlog::info("winogrande: {} tasks", tasks.size());
  const std::unique_ptr<llm::Engine> engine = llm::Engine::load(model, eo);
  const llm::WinograndeResult r = naming_file(file, [&] {
    return llm::score_winogrande(
        engine->session(), tasks, [&](size_t i, const llm::WinograndeResult& so_far) {
          if (json) return true;
          std::printf("%zu\t%.4f\t%10.6f  %10.6f  %d  %d\n", i + 1, 100 * so_far.accuracy(),
                      so_far.scores[i][0], so_far.scores[i][1], so_far.picks[i], tasks[i].answer);
          std::fflush(stdout);
          return true;
        });
  });
  const size_t n = r.picks.size();
  const double p = r.accuracy();
  const double sigma = n > 1 ? 100 * std::sqrt(p * (1 - p) / static_cast<double>(n - 1)) : 0;
  if (json) {
    const nlohmann::ordered_json out = {{"tasks", n},
                                        {"correct", r.correct},
                                        {"score", 100 * p},
                                        {"score_error", sigma},
                                        {"picks", r.picks}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("\nFinal Winogrande score(%zu tasks): %.4f +/- %.4f\n", n, 100 * p, sigma);
  }
  return 0;
}

// --multiple-choice: FILE holds llama.cpp's binary multiple-choice tasks.
int run_multiple_choice(const std::string& file, const std::string& model,
                        const llm::EngineOptions& eo, size_t count, bool json) {
  const std::string bytes = read_text_input(file);
  const std::vector<llm::MultipleChoiceTask> tasks =
      naming_file(file, [&] { return llm::read_multiple_choice(bytes, count); });
  spdlog::info("multiple choice: {} tasks", tasks.size());
  const std::unique_ptr<llm::Engine> engine = llm::Engine::load(model, eo);
  if (!json) std::printf("\ntask\tacc_norm\n");
  const llm::MultipleChoiceResult r = naming_file(file, [&] {
    return llm::score_multiple_choice(
        engine->session(), tasks, [&](size_t i, const llm::MultipleChoiceResult& so_far) {
          if (!json) {
            std::printf("%zu\t%.8f\n", i + 1, 100 * so_far.accuracy());
            std::fflush(stdout);
          }
          return true;
        });
  });
  // llama.cpp's final shares and their errors, in float as it computes them.
  const size_t n = r.picks.size();
  const auto share_error = [n](float p) {
    return n > 1 ? std::sqrt(p * (1 - p) / static_cast<float>(n - 1)) : 0.f;
  };
  const float p = static_cast<float>(r.correct) / static_cast<float>(n);
  const float chance = static_cast<float>(n) / static_cast<float>(r.answers);
  if (json) {
    const nlohmann::ordered_json out = {{"tasks", n},
                                        {"correct", r.correct},
                                        {"accuracy", 100 * p},
                                        {"accuracy_error", 100 * share_error(p)},
                                        {"random_chance", 100 * chance},
                                        {"random_chance_error", 100 * share_error(chance)},
                                        {"picks", r.picks}};
    std::printf("%s\n", out.dump().c_str());
  } else if (n >= 100 || count == 0 || count >= llm::multiple_choice_task_count(bytes)) {
    // (llama.cpp gives no final shares for fewer than 100 tasks drawn from more)
    std::printf("\nFinal result: %.4f +/- %.4f\n", 100 * p, 100 * share_error(p));
    std::printf("Random chance: %.4f +/- %.4f\n", 100 * chance, 100 * share_error(chance));
  }
  return 0;
}

}  // namespace

int run_perplexity(const Argv& argv) {
  ArgParser p("perplexity",
              "oxinfer perplexity -m MODEL -f FILE [--ctx N] [--chunks N] [--ppl-stride S] "
              "[--kl-divergence-base FILE [--kl-divergence]] [--hellaswag | --winogrande | "
              "--multiple-choice]",
              "Perplexity of MODEL over the text in FILE, as llama.cpp's perplexity: the tokens\n"
              "in chunks of --ctx, each from an empty cache (BOS first where the model adds "
              "one),\nthe second half of each chunk scored. Prints [1]PPL,[2]PPL,... (the "
              "perplexity\nover the chunks so far) and 'Final estimate: PPL = X +/- E'; with "
              "--json one object.");
  p.option("model", "MODEL", "a GGUF file, an HF directory or org/name[:QUANT]", "m");
  p.option("file", "FILE", "the text (- = stdin); at least 2 x --ctx tokens", "f");
  p.option("ctx", "N", "tokens per chunk (default 512)", "c");
  p.option("chunks", "N", "score at most N chunks (default: all)");
  p.option("ppl-stride", "S",
           "strided perplexity: windows of --ctx + S/2 tokens starting S apart, each window's "
           "last S tokens scored (no BOS put in, as llama.cpp's)");
  p.flag("json", "print one JSON object: ppl, ppl_error, chunks, tokens_scored, ...");
  p.option("kl-divergence-base", "FILE",
           "save the model's log-probabilities to FILE (llama.cpp's format); with "
           "--kl-divergence, compare with the ones saved there");
  p.flag("kl-divergence",
         "compare the model's next-token distributions with --kl-divergence-base's (the text "
         "and --ctx come from that file)");
  p.flag("hellaswag",
         "score llama.cpp's HellaSwag task file (-f: six lines a task) instead: acc_norm with "
         "its 95 % interval after each task");
  p.option("hellaswag-tasks", "N", "tasks drawn from the file as llama.cpp draws them (400)");
  p.flag("winogrande",
         "score llama.cpp's Winogrande CSV (-f) instead: the accuracy after each task and a final "
         "score");
  p.option("winogrande-tasks", "N", "tasks drawn from the file as llama.cpp draws them (0: all)");
  p.flag("multiple-choice",
         "score llama.cpp's binary multiple-choice file (-f: ARC, MMLU, TruthfulQA) instead: the "
         "accuracy after each task and a final result");
  p.option("multiple-choice-tasks", "N",
           "tasks drawn from the file as llama.cpp draws them (0: all)");
  add_cache_type_option(p);
  p.threads_option();
  p.option("quant", "q8|q4", "quantize an HF checkpoint's matrices at load");
  const ParsedArgs args = p.parse(argv);
  if (!args.positional().empty())
    throw UsageError("unexpected argument '" + args.positional()[0] + "' (the text is -f FILE)");
  const auto model = args.get("model");
  if (!model) throw UsageError("-m MODEL is required");
  const long long ctx = args.get_int("ctx", 512);
  if (ctx < 4 || ctx > 1 << 20) throw UsageError("--ctx must be 4..1048576");
  const long long chunks = args.get_int("chunks", 0);
  if (chunks < 0) throw UsageError("--chunks must not be negative");
  const long long threads = args.get_int("threads", 0);
  if (threads < 0 || threads > 4096) throw UsageError("--threads must be 0..4096");
  const long long stride = args.get_int("ppl-stride", 0);
  if (stride < 0 || stride > 1 << 20) throw UsageError("--ppl-stride must be 0..1048576");
  llm::EngineOptions eo;
  eo.threads = static_cast<int>(threads);
  eo.n_ctx = static_cast<size_t>(ctx);
  eo.kv_type = cache_type_option(args);
  if (const auto quant = args.get("quant")) eo.quant = llm::parse_load_quant(*quant);
  const bool json = args.flag("json");
  const auto base_file = args.get("kl-divergence-base");
  const int tasks_modes =
      args.flag("hellaswag") + args.flag("winogrande") + args.flag("multiple-choice");
  if (tasks_modes > 0 && base_file)
    throw UsageError(
        "--hellaswag / --winogrande / --multiple-choice cannot go with --kl-divergence-base");
  if (stride > 0 && (base_file || tasks_modes > 0))
    throw UsageError("--ppl-stride goes with plain perplexity only");
  if (tasks_modes > 1)
    throw UsageError("--hellaswag, --winogrande and --multiple-choice cannot go together");
  if (args.flag("kl-divergence")) {
    if (!base_file) throw UsageError("--kl-divergence needs --kl-divergence-base FILE");
    if (args.has("file")) throw UsageError("--kl-divergence reads its text from the base file");
    return run_kl_divergence(args, *model, eo, static_cast<size_t>(chunks), json);
  }
  const auto file = args.get("file");
  if (!file) throw UsageError("-f FILE is required");
  if (args.flag("hellaswag")) {
    const long long tasks = args.get_int("hellaswag-tasks", 400);
    if (tasks < 1) throw UsageError("--hellaswag-tasks must be 1 or more");
    return run_hellaswag(*file, *model, eo, static_cast<size_t>(tasks), json);
  }
  if (args.has("hellaswag-tasks")) throw UsageError("--hellaswag-tasks needs --hellaswag");
  if (args.flag("winogrande")) {
    const long long tasks = args.get_int("winogrande-tasks", 0);
    if (tasks < 0) throw UsageError("--winogrande-tasks must not be negative");
    return run_winogrande(*file, *model, eo, static_cast<size_t>(tasks), json);
  }
  if (args.has("winogrande-tasks")) throw UsageError("--winogrande-tasks needs --winogrande");
  if (args.flag("multiple-choice")) {
    const long long tasks = args.get_int("multiple-choice-tasks", 0);
    if (tasks < 0) throw UsageError("--multiple-choice-tasks must not be negative");
    return run_multiple_choice(*file, *model, eo, static_cast<size_t>(tasks), json);
  }
  if (args.has("multiple-choice-tasks"))
    throw UsageError("--multiple-choice-tasks needs --multiple-choice");

  llm::PerplexityOptions options;
  options.n_ctx = static_cast<size_t>(ctx);
  options.max_chunks = static_cast<size_t>(chunks);
  options.stride = static_cast<size_t>(stride);
  if (options.stride >= options.window())
    throw UsageError(std::string("--ppl-stride ")
                         .append(std::to_string(stride))
                         .append(" must be below its window, --ctx + S/2 = ")
                         .append(std::to_string(options.window())));
  eo.n_ctx = options.window();  // llama.cpp's strided run widens its context by S/2 too

  const std::string text = read_text_input(*file);
  const std::unique_ptr<llm::Engine> engine = llm::Engine::load(*model, eo);
  const int trained = engine->model().config().n_ctx_train;
  if (trained > 0 && options.window() > static_cast<size_t>(trained))
    spdlog::warn("the model was trained on {} positions; chunks of {} go beyond them", trained,
                 options.window());
  const tokenizer::Tokenizer& tok = engine->model().tokenizer();
  const std::vector<int32_t> tokens = tok.encode(text, tok.add_bos());

  // --kl-divergence-base: the scored positions' log-probabilities, as llama.cpp saves them.
  std::optional<llm::LogProbWriter> writer;
  if (const size_t n_chunk = llm::perplexity_chunks(tokens.size(), options);
      base_file && n_chunk > 0) {
    writer.emplace(*base_file, options.n_ctx, tok.vocab_size(), n_chunk,
                   std::span<const int32_t>(tokens).first(n_chunk * options.n_ctx));
  }
  spdlog::info("perplexity: {} tokens, chunks of {} (stride {})", tokens.size(), options.window(),
               options.stride);
  const auto start = std::chrono::steady_clock::now();
  llm::PerplexityResult r;
  try {
    r = llm::perplexity(
        engine->session(), tokens, options,
        [&](size_t i, double ppl) {
          if (!json) {
            std::printf("[%zu]%.4f,", i + 1, ppl);
            std::fflush(stdout);
          }
          return true;
        },
        [&](size_t, std::span<const float> logits, int32_t) {
          if (writer) writer->add(logits);
        });
  } catch (const Error& e) {
    if (writer) {  // no half-written base file left behind
      writer.reset();
      std::error_code ignored;
      std::filesystem::remove(*base_file, ignored);
    }
    throw Error(*file, e.what());
  }
  if (writer) writer->finish();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (json) {
    const nlohmann::ordered_json out = {{"ppl", r.ppl},
                                        {"ppl_error", r.ppl_error},
                                        {"mean_nll", r.mean_nll},
                                        {"chunks", r.chunks},
                                        {"ctx", options.n_ctx},
                                        {"stride", options.stride},
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
