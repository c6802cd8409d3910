#include "tools/oxinfer/bench/bench_llm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_backend.h"
#include "kernels/formats/quant.h"
#include "lib/core/error.h"
#include "lib/hub/hub.h"
#include "lib/llm/engine.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/bench/llama_bench_table.h"
#include "tools/oxinfer/bench/machine_limits.h"
#include "tools/oxinfer/bench/process_memory.h"
#include "tools/oxinfer/bench/stopwatch.h"
#include "tools/oxinfer/bench/timed_backend.h"
#include "tools/oxinfer/llm_cli_options.h"

namespace oxi::bench {
namespace {

void mean_sd(const std::vector<double>& v, double& mean, double& sd) {
  mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  sd = v.size() > 1 ? std::sqrt(var / static_cast<double>(v.size() - 1)) : 0;
}

// The matrices one decode step multiplies, grouped into its parallel regions in its order.
std::vector<std::vector<const backends::WeightMatrix*>> decode_matrices(const llm::Model& model) {
  const llm::ModelWeights& w = model.weights();
  std::vector<std::vector<const backends::WeightMatrix*>> regions;
  for (const llm::LayerWeights& l : w.layers) {
    regions.push_back({&l.wq, &l.wk, &l.wv});
    regions.push_back({&l.wo});
    regions.push_back({&l.w_gate, &l.w_up});
    regions.push_back({&l.w_down});
  }
  regions.push_back({&w.output});
  return regions;
}

}  // namespace

std::vector<ReadRegion> decode_read_regions(const llm::Model& model) {
  std::vector<ReadRegion> regions;
  for (const auto& matrices : decode_matrices(model)) {
    ReadRegion& region = regions.emplace_back();
    for (const backends::WeightMatrix* m : matrices)
      region.emplace_back(static_cast<const std::byte*>(m->data), m->rows * m->row_bytes);
  }
  return regions;
}

std::vector<LayoutBytes> decode_stream_layouts(const llm::Model& model) {
  std::vector<LayoutBytes> layouts;
  for (const auto& matrices : decode_matrices(model)) {
    for (const backends::WeightMatrix* m : matrices) {
      if (!kernels::format_kernels().stream_layout(m->dtype)) continue;
      auto it = std::find_if(layouts.begin(), layouts.end(),
                             [&](const LayoutBytes& l) { return l.dtype == m->dtype; });
      if (it == layouts.end()) it = layouts.insert(layouts.end(), {m->dtype, 0.0});
      it->bytes += static_cast<double>(m->rows * m->row_bytes);
    }
  }
  std::stable_sort(layouts.begin(), layouts.end(),
                   [](const LayoutBytes& a, const LayoutBytes& b) { return a.bytes > b.bytes; });
  return layouts;
}

double decode_weight_bytes(const llm::Model& model) {
  double bytes = static_cast<double>(model.weights().token_embd.row_bytes);  // one lookup
  for (const ReadRegion& region : decode_read_regions(model))
    for (const std::span<const std::byte> range : region)
      bytes += static_cast<double>(range.size());
  return bytes;
}

LlmBenchResult bench_llm(llm::Session& session, size_t depth, size_t pp, size_t tg, int reps,
                         ReadPass& read_pass, ReadPass* buffer_pass, RegionsRead& weights_read) {
  const int n_vocab = session.model().config().n_vocab;
  if (depth + std::max(pp, tg) > session.n_ctx())
    throw Error("bench llm",
                "depth + pp/tg exceed the context of " + std::to_string(session.n_ctx()));
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> token(0, n_vocab - 1);
  auto random_ids = [&](size_t n) {
    std::vector<int32_t> ids(n);
    for (int32_t& id : ids) id = token(rng);
    return ids;
  };
  const double weight_bytes = decode_weight_bytes(session.model());

  // Warm-up: pages the mapped weights in and sizes the scratch buffers.
  session.truncate(0);
  session.eval(random_ids(std::min<size_t>(std::max<size_t>(pp, 1), 16)));
  // The context every run starts from: the runs drop what they added (truncate(depth)).
  session.truncate(0);
  if (depth > 0) session.eval(random_ids(depth));

  LlmBenchResult r;
  r.depth = depth;
  r.pp = pp;
  r.tg = tg;
  r.reps = reps;
  std::vector<double> pp_rates, tg_rates, bandwidths, bandwidth_pcts, weights_rates, weights_pcts,
      buffer_rates, buffer_pcts;
  for (int rep = 0; rep < reps; ++rep) {
    if (pp > 0) {
      session.truncate(depth);
      const std::vector<int32_t> ids = random_ids(pp);
      const Clock::time_point start = Clock::now();
      session.eval(ids);
      pp_rates.push_back(static_cast<double>(pp) / seconds_since(start));
    }
    if (tg > 0) {
      session.truncate(depth);
      const std::vector<int32_t> ids = random_ids(tg);
      double decode_seconds = 0, read_seconds = 0, weights_seconds = 0, buffer_seconds = 0;
      size_t passes = 0;
      for (size_t i = 0; i < tg; i += kTokensBetweenPasses) {
        // The block's first token once untimed, then dropped from the cache: each timed token
        // follows a decode step, as in generation, not the passes (bench_llm.h).
        session.eval(std::span<const int32_t>(&ids[i], 1));
        session.truncate(depth + i);
        {
          const Stopwatch watch(decode_seconds);
          for (size_t j = i; j < std::min(tg, i + kTokensBetweenPasses); ++j)
            session.eval(std::span<const int32_t>(&ids[j], 1));
        }
        ++passes;
        read_seconds += read_pass.seconds();
        if (buffer_pass) buffer_seconds += buffer_pass->seconds();
        weights_seconds += weights_read.seconds();
      }
      tg_rates.push_back(static_cast<double>(tg) / decode_seconds);
      const double decode_gbs = weight_bytes * tg_rates.back() / 1e9;
      bandwidths.push_back(static_cast<double>(passes * read_pass.bytes()) / read_seconds / 1e9);
      bandwidth_pcts.push_back(100.0 * decode_gbs / bandwidths.back());
      weights_rates.push_back(static_cast<double>(passes) * weights_read.bytes() / weights_seconds /
                              1e9);
      weights_pcts.push_back(100.0 * decode_gbs / weights_rates.back());
      if (buffer_pass) {
        buffer_rates.push_back(static_cast<double>(passes * buffer_pass->bytes()) / buffer_seconds /
                               1e9);
        buffer_pcts.push_back(100.0 * decode_gbs / buffer_rates.back());
      }
    }
  }
  double sd = 0;
  if (!bandwidths.empty()) mean_sd(bandwidths, r.read_bandwidth_gbs, sd);
  if (!bandwidth_pcts.empty()) mean_sd(bandwidth_pcts, r.decode_bandwidth_pct, sd);
  if (!weights_rates.empty()) mean_sd(weights_rates, r.weights_read_gbs, sd);
  if (!weights_pcts.empty()) mean_sd(weights_pcts, r.decode_pct_of_weights_read, sd);
  if (!buffer_rates.empty()) mean_sd(buffer_rates, r.buffer_read_gbs, sd);
  if (!buffer_pcts.empty()) mean_sd(buffer_pcts, r.decode_pct_of_buffer_read, sd);
  session.truncate(depth);  // the context, which split_decode continues from
  if (!pp_rates.empty()) mean_sd(pp_rates, r.pp_tok_s, r.pp_tok_s_sd);
  if (!tg_rates.empty()) mean_sd(tg_rates, r.tg_tok_s, r.tg_tok_s_sd);
  r.weight_bytes_per_token = weight_bytes;
  r.decode_gbs = r.weight_bytes_per_token * r.tg_tok_s / 1e9;
  return r;
}

DecodeSplit split_decode(std::shared_ptr<const llm::Model> model, backends::Backend& backend,
                         const llm::Session& context, size_t tg, kernels::DType kv_type) {
  TimedBackend timed(backend);
  const size_t depth = context.n_past();
  llm::Session session(model, timed, depth + tg + 2, kv_type);
  // The context's cache is copied: evaluating its tokens again took about as long as the runs
  // themselves (TinyLlama's shape at depth 4096: ~40 s).
  session.copy_context(context);
  std::mt19937 rng(4321);
  std::uniform_int_distribution<int32_t> token(0, model->config().n_vocab - 1);
  DecodeSplit d;
  d.context = session.n_past();
  // One token as a warm-up: not timed.
  const int32_t warm_up = token(rng);
  session.eval(std::span<const int32_t>(&warm_up, 1));
  timed.reset();
  double seconds = 0;
  for (size_t i = 0; i < tg; ++i) {
    const int32_t id = token(rng);
    const Stopwatch watch(seconds);
    session.eval(std::span<const int32_t>(&id, 1));
  }
  d.tokens = tg;
  if (tg == 0 || seconds <= 0) return d;
  const TimedBackend::Seconds& s = timed.seconds();
  d.ms_per_token = 1e3 * seconds / static_cast<double>(tg);
  d.products_pct = 100.0 * s.products / seconds;
  d.attention_pct = 100.0 * s.attention / seconds;
  d.other_pct = 100.0 - d.products_pct - d.attention_pct;
  if (s.products > 0)
    d.products_gbs = decode_weight_bytes(*model) * static_cast<double>(tg) / s.products / 1e9;
  const double n = static_cast<double>(tg);
  for (const TimedBackend::ProductKind& k : timed.product_kinds()) {
    d.kinds.push_back({k.name, static_cast<double>(k.calls) / n, 1e3 * k.seconds / n,
                       100.0 * k.seconds / seconds,
                       k.seconds > 0 ? k.weight_bytes / k.seconds / 1e9 : 0.0});
  }
  return d;
}

}  // namespace oxi::bench

namespace oxi::cli {

int run_bench_llm(const std::vector<std::string>& argv) {
  ArgParser p("bench llm",
              "oxinfer bench llm -m MODEL [--threads N] [--json] [--pp 512] [--tg 128] "
              "[--depth 0]",
              "Prompt processing (pp tokens, one batched eval) and generation (tg tokens, one at\n"
              "a time) in tokens/s, and decode's weight reads as a share of the measured read\n"
              "bandwidth. With --depth N both run after N tokens of context.");
  p.option("model", "MODEL", "a .gguf file, an HF directory, or org/name[:QUANT]", "m");
  p.threads_option();
  p.flag("json", "print one JSON object");
  p.option("output", "md|json", "md: llama-bench's markdown table; json: as --json", "o");
  // The short names are llama-bench's (-p, -n, -r, -d, -o).
  p.option("pp", "N", "prompt tokens (default 512; 0 = skip)", "p");
  p.option("tg", "N", "generated tokens (default 128; 0 = skip)", "n");
  p.option("reps", "N", "repetitions, averaged (default 3)", "r");
  p.option("depth", "N", "tokens already in the context before pp and tg (default 0)", "d");
  p.option("quant", "q8|q4", "quantize an HF checkpoint's matrices at load");
  add_cache_type_option(p);
  const ParsedArgs args = p.parse(argv);
  if (!args.positional().empty())
    throw UsageError("unexpected argument '" + args.positional()[0] + "'");
  const auto model_spec = args.get("model");
  if (!model_spec) throw UsageError("-m MODEL is required");
  const long long hw = std::max(1u, std::thread::hardware_concurrency());
  const long long threads = args.get_int("threads", hw);
  if (threads < 1 || threads > 4096) throw UsageError("--threads must be at least 1");
  const long long pp = args.get_int("pp", 512), tg = args.get_int("tg", 128);
  const long long reps = args.get_int("reps", 3);
  if (pp < 0 || tg < 0 || pp + tg == 0) throw UsageError("--pp and --tg must be >= 0, one > 0");
  if (reps < 1) throw UsageError("--reps must be at least 1");
  const long long depth = args.get_int("depth", 0);
  if (depth < 0 || depth > (1 << 24)) throw UsageError("--depth must be between 0 and 16777216");
  const std::string output = args.get_or("output", args.flag("json") ? "json" : "text");
  if (output != "md" && output != "json" && output != "text")
    throw UsageError("-o must be md or json, not '" + output + "'");
  const bool json = output == "json", markdown = output == "md";
  const std::optional<kernels::DType> cache_type = cache_type_option(args);

  const double baseline = static_cast<double>(bench::resident_bytes());  // libraries, no model
  llm::LoadOptions load_options;
  if (const auto quant = args.get("quant")) load_options.quant = llm::parse_load_quant(*quant);
  const auto path = hub::resolve_model(*model_spec, hub::HubOptions::from_environment());
  const auto model = llm::Model::load(path, load_options);
  const auto backend = backends::make_cpu_backend(static_cast<int>(threads));
  const kernels::DType kv_type = cache_type.value_or(llm::Session::default_kv_type(*model));
  llm::Session session(model, *backend, static_cast<size_t>(depth + std::max(pp, tg)) + 1, kv_type);

  // llama-bench's label for runs after a context: "pp512 @ d4096"
  const std::string depth_label = depth > 0 ? " @ d" + std::to_string(depth) : "";
  if (!json && !markdown) {
    std::printf("model %s (%s, %d layers), threads %lld\n", path.filename().string().c_str(),
                model->config().arch.c_str(), model->config().n_layer, threads);
    std::fflush(stdout);
  }
  if (!json && !markdown) {
    std::printf(
        "running pp%lld / tg%lld x %lld%s (after every %zu generated tokens read-bandwidth "
        "passes and a pass reading the weights in decode's regions)...\n",
        pp, tg, reps, depth_label.c_str(), bench::kTokensBetweenPasses);
    std::fflush(stdout);
  }
  // The peak: best single pass, before the runs. The limit decode is compared with: the mean of
  // the passes interleaved with its tokens (bench_llm.h says why).
  double read_peak = 0;
  bench::LlmBenchResult r;
  bench::DecodeSplit split;
  const std::vector<bench::ReadRegion> regions = bench::decode_read_regions(*model);
  std::vector<std::span<const std::byte>> weight_memory;
  double weight_memory_bytes = 0;
  for (const bench::ReadRegion& region : regions) {
    for (const std::span<const std::byte> range : region) {
      weight_memory.push_back(range);
      weight_memory_bytes += static_cast<double>(range.size());
    }
  }
  // The limit reads the weights' own pages where they are far larger than the caches
  // (machine_limits.h: where memory sits changes its read rate); a separate buffer's passes are
  // then run beside them for comparison.
  const bool limit_on_weights = weight_memory_bytes >= bench::kLimitOnWeightsMinBytes;
  {  // the buffer is freed before the memory figures below
    bench::ReadPass buffer_pass(*backend);
    std::optional<bench::ReadPass> weights_pass;
    if (limit_on_weights) weights_pass.emplace(*backend, weight_memory);
    bench::ReadPass& read_pass = limit_on_weights ? *weights_pass : buffer_pass;
    read_peak = bench::measure_read_bandwidth_gbs(read_pass);
    // The same weight bytes read without arithmetic, in decode's order and parallel regions,
    // after every block of tokens: where decode falls short of the read bandwidth, how much the
    // access pattern itself loses and how much the arithmetic.
    bench::RegionsRead weights_read(regions, *backend);
    r = bench::bench_llm(session, static_cast<size_t>(depth), static_cast<size_t>(pp),
                         static_cast<size_t>(tg), static_cast<int>(reps), read_pass,
                         limit_on_weights ? &buffer_pass : nullptr, weights_read);
    if (tg > 0)
      split = bench::split_decode(model, *backend, session, static_cast<size_t>(tg), kv_type);
  }
  const char* const limit_memory = limit_on_weights ? "weights" : "buffer";
  const double read_bw = r.read_bandwidth_gbs, bandwidth_pct = r.decode_bandwidth_pct;
  const double pct_of_peak = read_peak > 0 ? 100.0 * r.decode_gbs / read_peak : 0.0;
  const double weights_read_gbs = r.weights_read_gbs;
  const double weights_read_pct = read_bw > 0 ? 100.0 * weights_read_gbs / read_bw : 0.0;
  // Memory after the run (the bandwidth buffer is freed by then): every weight page has been
  // read, the KV cache and the scratch buffers are allocated. Budget: file + KV cache.
  const double resident = static_cast<double>(bench::resident_bytes());
  const double file_bytes = static_cast<double>(bench::model_bytes_on_disk(path));
  const double kv_bytes = static_cast<double>(session.kv_cache_bytes());
  const double resident_pct = 100.0 * resident / (file_bytes + kv_bytes);
  // How the one-token products streamed, per weight layout with a choice (calibrated on the
  // first decode steps unless OXI_STREAM_LINES says; backends/cpu/stream_calibration.h);
  // matvec_stream_lines / _choice are those of the layout holding most of decode's bytes.
  const std::vector<bench::LayoutBytes> layouts = bench::decode_stream_layouts(*model);
  const backends::MatvecStreaming streaming =
      layouts.empty() ? backends::MatvecStreaming{} : backends::matvec_streaming(layouts[0].dtype);

  if (markdown) {
    std::vector<bench::LlamaBenchRow> rows;
    if (pp > 0)
      rows.push_back({"pp" + std::to_string(pp) + depth_label, r.pp_tok_s, r.pp_tok_s_sd});
    if (tg > 0)
      rows.push_back({"tg" + std::to_string(tg) + depth_label, r.tg_tok_s, r.tg_tok_s_sd});
    bench::print_llama_bench_table(path, model->config().arch, threads, rows);
  } else if (json) {
    nlohmann::json products_by_kind = nlohmann::json::array();
    for (const bench::DecodeSplit::Kind& k : split.kinds) {
      products_by_kind.push_back({{"kind", k.name},
                                  {"calls_per_token", k.calls_per_token},
                                  {"ms_per_token", k.ms_per_token},
                                  {"pct", k.pct},
                                  {"gbs", k.gbs}});
    }
    nlohmann::json stream_by_layout = nlohmann::json::object();
    for (const bench::LayoutBytes& l : layouts) {
      const backends::MatvecStreaming m = backends::matvec_streaming(l.dtype);
      stream_by_layout[std::string(kernels::name(l.dtype))] = {{"lines", m.lines},
                                                               {"choice", m.how}};
    }
    const std::string pp_key = "pp" + std::to_string(pp), tg_key = "tg" + std::to_string(tg);
    const nlohmann::json out = {{"model", path.string()},
                                {"arch", model->config().arch},
                                {"threads", threads},
                                {"pp", pp},
                                {"tg", tg},
                                {"depth", depth},
                                {"reps", reps},
                                {pp_key + "_tok_s", r.pp_tok_s},
                                {pp_key + "_tok_s_sd", r.pp_tok_s_sd},
                                {tg_key + "_tok_s", r.tg_tok_s},
                                {tg_key + "_tok_s_sd", r.tg_tok_s_sd},
                                {"weight_bytes_per_token", r.weight_bytes_per_token},
                                {"decode_gbs", r.decode_gbs},
                                {"read_bandwidth_gbs", read_bw},
                                {"read_bandwidth_memory", limit_memory},
                                {"decode_bandwidth_pct", bandwidth_pct},
                                {"buffer_read_bandwidth_gbs", r.buffer_read_gbs},
                                {"decode_pct_of_buffer_read", r.decode_pct_of_buffer_read},
                                {"read_bandwidth_peak_gbs", read_peak},
                                {"decode_pct_of_peak_read", pct_of_peak},
                                {"weights_read_gbs", weights_read_gbs},
                                {"weights_read_pct_of_read", weights_read_pct},
                                {"decode_pct_of_weights_read", r.decode_pct_of_weights_read},
                                {"decode_split_ms_per_token", split.ms_per_token},
                                {"decode_split_context", split.context},
                                {"decode_products_pct", split.products_pct},
                                {"decode_attention_pct", split.attention_pct},
                                {"decode_other_pct", split.other_pct},
                                {"decode_products_gbs", split.products_gbs},
                                {"decode_products_by_kind", products_by_kind},
                                {"resident_bytes", resident},
                                {"resident_before_load_bytes", baseline},
                                {"model_file_bytes", file_bytes},
                                {"kv_cache_bytes", kv_bytes},
                                {"kv_cache_type", std::string(kernels::name(kv_type))},
                                {"matvec_stream_lines", streaming.lines},
                                {"matvec_stream_choice", streaming.how},
                                {"matvec_stream_by_layout", stream_by_layout},
                                {"resident_pct_of_file_plus_kv", resident_pct}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("\n%-28s %12s\n", "test", "value");
    const auto test_name = [&](const char* kind, long long n) {
      return kind + std::to_string(n) + depth_label;
    };
    if (pp > 0)
      std::printf("%-28s %9.2f tok/s (+- %.2f)\n", test_name("pp", pp).c_str(), r.pp_tok_s,
                  r.pp_tok_s_sd);
    if (tg > 0)
      std::printf("%-28s %9.2f tok/s (+- %.2f)\n", test_name("tg", tg).c_str(), r.tg_tok_s,
                  r.tg_tok_s_sd);
    if (tg > 0)
      std::printf(
          "%-28s %9.2f GB/s = %.1f%% of %.2f GB/s, the passes over the %s (%.1f MB of weights "
          "per token)\n",
          "decode weight reads", r.decode_gbs, bandwidth_pct, read_bw, limit_memory,
          r.weight_bytes_per_token / 1e6);
    if (tg > 0 && limit_on_weights)
      std::printf("%-28s %9.2f GB/s (decode: %.1f%% of it)\n", "read bandwidth, own buffer",
                  r.buffer_read_gbs, r.decode_pct_of_buffer_read);
    if (tg > 0)
      std::printf("%-28s %9.2f GB/s (decode: %.1f%% of it)\n", "read bandwidth, best pass",
                  read_peak, pct_of_peak);
    if (tg > 0)
      std::printf(
          "%-28s %9.2f GB/s = %.1f%% of the read bandwidth (decode's regions and order, no "
          "arithmetic; decode: %.1f%% of it)\n",
          "weights read alone", weights_read_gbs, weights_read_pct, r.decode_pct_of_weights_read);
    if (tg > 0)
      std::printf(
          "%-28s %9.2f ms a token: products %.1f%% (their weight reads %.2f GB/s), attention "
          "%.1f%%, the rest %.1f%% (%zu more tokens, timed by call)\n",
          "decode split", split.ms_per_token, split.products_pct, split.products_gbs,
          split.attention_pct, split.other_pct, split.tokens);
    for (size_t i = 0; i < split.kinds.size(); ++i) {
      const bench::DecodeSplit::Kind& k = split.kinds[i];
      std::printf("%-28s %9.3f ms a token (%4.1f%%), %4.1f calls, %6.2f GB/s: %s\n",
                  i == 0 ? "  products by kind" : "", k.ms_per_token, k.pct, k.calls_per_token,
                  k.gbs, k.name.c_str());
    }
    if (layouts.empty()) std::printf("%-28s fixed by the kernels\n", "one-token streams");
    for (size_t i = 0; i < layouts.size(); ++i) {
      const backends::MatvecStreaming m = backends::matvec_streaming(layouts[i].dtype);
      std::printf("%-28s %s: %s (%s)\n", i == 0 ? "one-token streams" : "",
                  std::string(kernels::name(layouts[i].dtype)).c_str(),
                  m.lines ? "line requests" : "page starts alone", m.how);
    }
    std::printf(
        "%-28s %9.1f MB = %.1f%% of file %.1f MB + KV cache %.1f MB (%s; %.1f MB before "
        "loading)\n",
        "resident memory", resident / 1e6, resident_pct, file_bytes / 1e6, kv_bytes / 1e6,
        std::string(kernels::name(kv_type)).c_str(), baseline / 1e6);
  }
  return 0;
}

}  // namespace oxi::cli
