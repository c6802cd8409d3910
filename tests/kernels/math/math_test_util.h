// Helpers shared by the math kernel tests: the instruction sets to run, and tolerances.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"

namespace oxi::kernels::test_util {

using kernels::available_isas;

inline std::string isa_label(Isa isa) {
  return std::string(isa_name(isa));
}

}  // namespace oxi::kernels::test_util
