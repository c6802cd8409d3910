#include "tools/oxinfer/bench/bench_args.h"

#include <algorithm>
#include <thread>

namespace oxi::cli {

BenchModelArgs parse_bench_model_args(const ParsedArgs& args) {
  const auto model_arg = args.get("model");
  if (!model_arg) throw UsageError("-m MODEL is required");
  if (!args.positional().empty())
    throw UsageError("unexpected argument '" + args.positional()[0] + "'");
  const long long hw = std::max(1u, std::thread::hardware_concurrency());
  const long long threads = args.get_int("threads", hw);
  if (threads < 1 || threads > 4096) throw UsageError("--threads must be at least 1");
  return {*model_arg, threads};
}

long long parse_bench_count(const ParsedArgs& args, const std::string& name, long long fallback) {
  const long long n = args.get_int(name, fallback);
  if (n < 1 || n > 1000) throw UsageError("--" + name + " must be between 1 and 1000");
  return n;
}

}  // namespace oxi::cli
