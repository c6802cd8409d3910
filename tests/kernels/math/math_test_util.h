// Helpers shared by the math kernel tests: the instruction sets to run, and tolerances.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"

namespace oxi::kernels::test_util {

// Every instruction set this build and CPU can run (scalar first).
inline std::vector<Isa> available_isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::scalar, Isa::sse42, Isa::avx2, Isa::neon}) {
    if (isa_available(isa)) out.push_back(isa);
  }
  return out;
}

inline std::string isa_label(Isa isa) {
  return std::string(isa_name(isa));
}

}  // namespace oxi::kernels::test_util
