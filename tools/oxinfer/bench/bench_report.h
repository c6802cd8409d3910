// One row of a benchmark table: what was measured and how it compares with the machine.
#pragma once

#include <string>

namespace oxi::bench {

struct BenchRow {
  std::string kernel;  // "matvec q4_0 4096x4096"
  std::string unit;    // "GB/s" or "GFLOP/s"
  double value = 0;    // measured throughput in `unit`
  double limit = 0;    // the machine's measured limit in the same unit
  double percent() const { return limit > 0 ? 100.0 * value / limit : 0; }
};

}  // namespace oxi::bench
