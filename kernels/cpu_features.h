// What the running CPU can execute, and which kernel instruction set that selects.
#pragma once

#include <string_view>

namespace oxi::kernels {

struct CpuFeatures {
  bool sse42 = false;
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool neon = false;
};

enum class Isa { scalar, sse42, avx2, neon };

// Detected once (cpuid / compile target), then cached.
const CpuFeatures& cpu_features() noexcept;

// The best instruction set this build has kernels for and this CPU runs. The environment
// variable OXI_ISA=scalar|sse42|avx2|neon lowers it (tests use it to compare paths).
Isa selected_isa() noexcept;

// Whether this build has kernels for `isa` and this CPU can run them.
bool isa_available(Isa isa) noexcept;

std::string_view isa_name(Isa isa) noexcept;

}  // namespace oxi::kernels
