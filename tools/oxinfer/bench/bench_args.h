// The arguments every model benchmark parses alike: -m MODEL, --threads and a repetition count.
#pragma once

#include <string>

#include "tools/oxinfer/args.h"

namespace oxi::cli {

struct BenchModelArgs {
  std::string model;  // -m: path or Hub repo id
  long long threads;  // --threads, default every core
};

// -m MODEL (required), --threads N (1..4096), and no positional arguments; UsageError otherwise.
BenchModelArgs parse_bench_model_args(const ParsedArgs& args);

// --NAME N, repetitions of a timing, between 1 and 1000 (default `fallback`).
long long parse_bench_count(const ParsedArgs& args, const std::string& name, long long fallback);

}  // namespace oxi::cli
