// oxinfer bench SUITE [...]: benchmarks. Each suite is one entry of kSuites; `kernels` measures
// the machine's limits and compares the kernels with them.
#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/cpu_features.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/bench/bench_formats.h"
#include "tools/oxinfer/bench/bench_llm.h"
#include "tools/oxinfer/bench/bench_math.h"
#include "tools/oxinfer/bench/bench_pipeline.h"
#include "tools/oxinfer/bench/bench_report.h"
#include "tools/oxinfer/bench/bench_whisper.h"
#include "tools/oxinfer/bench/machine_limits.h"
#include "tools/oxinfer/commands.h"

namespace oxi::cli {
namespace {

void print_table(const std::vector<bench::BenchRow>& rows) {
  int width = 42;  // the kernel column: as wide as its longest name
  for (const bench::BenchRow& r : rows) width = std::max(width, static_cast<int>(r.kernel.size()));
  std::printf("%-*s %12s %8s %12s %9s\n", width, "kernel", "value", "unit", "limit", "of limit");
  for (const bench::BenchRow& r : rows) {
    std::printf("%-*s %12.2f %8s %12.2f %8.1f%%\n", width, r.kernel.c_str(), r.value,
                r.unit.c_str(), r.limit, r.percent());
  }
}

nlohmann::json rows_json(const std::vector<bench::BenchRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const bench::BenchRow& r : rows) {
    out.push_back({{"kernel", r.kernel},
                   {"unit", r.unit},
                   {"value", r.value},
                   {"limit", r.limit},
                   {"percent", r.percent()}});
  }
  return out;
}

int run_kernels(const Argv& argv) {
  ArgParser p("bench kernels", "oxinfer bench kernels [--threads N] [--json]",
              "Measure read bandwidth and FMA peak, then the kernels as a share of them.");
  p.threads_option();
  p.flag("json", "print JSON");
  const ParsedArgs args = p.parse(argv);
  if (!args.positional().empty()) {
    throw UsageError("unexpected argument '" + args.positional()[0] + "'");
  }
  const long long hw = std::max(1u, std::thread::hardware_concurrency());
  const long long threads_arg = args.get_int("threads", hw);
  if (threads_arg < 1 || threads_arg > 4096) throw UsageError("--threads must be at least 1");
  const int threads = static_cast<int>(threads_arg);
  const bool json = args.flag("json");
  const std::string isa(kernels::isa_name(kernels::selected_isa()));

  if (!json)
    std::printf("threads %d, kernels %s\nmeasuring read bandwidth...\n", threads, isa.c_str());
  const double read_bw = bench::measure_read_bandwidth_gbs(threads);
  if (!json) std::printf("measuring FMA peak...\n");
  const double fma_peak = bench::measure_fma_peak_gflops(threads);
  if (!json) {
    std::printf("\nmachine limits\n  read bandwidth  %10.2f GB/s\n", read_bw);
    std::printf("  f32 FMA peak    %10.2f GFLOP/s\n", fma_peak);
    std::printf("\n");
    std::fflush(stdout);
  }

  std::vector<bench::BenchRow> rows = bench::bench_format_kernels(threads);
  const std::vector<bench::BenchRow> math = bench::bench_math_kernels(threads, fma_peak);
  rows.insert(rows.end(), math.begin(), math.end());

  if (json) {
    const nlohmann::json out = {
        {"threads", threads},
        {"isa", isa},
        {"limits", {{"read_bandwidth_gbs", read_bw}, {"fma_peak_gflops", fma_peak}}},
        {"rows", rows_json(rows)}};
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    print_table(rows);
  }
  return 0;
}

struct Suite {
  const char* name;
  const char* summary;
  int (*run)(const Argv&);
};

// New suites (llm, whisper, ...) are one line here.
constexpr Suite kSuites[] = {
    {"kernels", "machine limits, then matvec / GEMM / FFT kernels as a share of them", run_kernels},
    {"llm", "LLM prompt processing and generation tok/s, decode bandwidth", run_bench_llm},
    {"whisper", "Whisper encoder ms/window, decoder ms/token, real-time factor", run_bench_whisper},
    {"pipeline", "oxiwhisper element vs the library on the same audio; live decoder RTF",
     run_bench_pipeline},
};

std::string suite_list() {
  std::string s;
  for (const Suite& suite : kSuites) s += (s.empty() ? "" : ", ") + std::string(suite.name);
  return s;
}

void print_usage(std::FILE* out) {
  std::fprintf(out, "usage: oxinfer bench SUITE [OPTIONS]\n\nsuites:\n");
  for (const Suite& s : kSuites) std::fprintf(out, "  %-10s %s\n", s.name, s.summary);
  std::fprintf(out, "\noxinfer bench SUITE --help lists a suite's options.\n");
}

}  // namespace

int run_bench(const Argv& argv) {
  if (argv.empty()) {
    print_usage(stderr);
    throw UsageError("missing benchmark suite (one of: " + suite_list() + ")");
  }
  if (argv[0] == "--help" || argv[0] == "-h" || argv[0] == "help") {
    print_usage(stdout);
    return 0;
  }
  for (const Suite& s : kSuites) {
    if (argv[0] == s.name) return s.run(Argv(argv.begin() + 1, argv.end()));
  }
  throw UsageError("unknown benchmark suite '" + argv[0] + "' (one of: " + suite_list() + ")");
}

}  // namespace oxi::cli
