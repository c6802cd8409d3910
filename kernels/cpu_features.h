// What the running CPU can execute, and which kernel instruction set that selects.
#pragma once

#include <string_view>
#include <vector>

namespace oxi::kernels {

struct CpuFeatures {
  bool sse42 = false;
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  // The AVX-512 subset the avx512 kernels need besides F: byte/word ops, 128/256-bit forms,
  // dword/qword ops and VNNI dot products (Ice Lake, Zen 4 and later), with the OS saving the
  // opmask and upper ZMM state.
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
  bool neon = false;
  bool dotprod = false;  // Armv8.2-A's SDOT / UDOT (HWCAP_ASIMDDP)
};

// avx512: the AVX2 kernels compiled with AVX-512 F/BW/VL/DQ/VNNI enabled: 256-bit vectors
// still, but 32 registers, EVEX-only instructions and VNNI dot products (kernels/arch.h).
// neon_dotprod: the NEON kernels compiled for Armv8.2-A with its dot-product instructions.
enum class Isa { scalar, sse42, avx2, avx512, neon, neon_dotprod };

// Detected once (cpuid / compile target), then cached.
const CpuFeatures& cpu_features() noexcept;

// The best instruction set this build has kernels for and this CPU runs. The environment
// variable OXI_ISA=scalar|sse42|avx2|avx512|neon|neon_dotprod lowers it (tests use it to compare paths).
Isa selected_isa() noexcept;

// Whether this build has kernels for `isa` and this CPU can run them.
bool isa_available(Isa isa) noexcept;

std::string_view isa_name(Isa isa) noexcept;

// Every instruction set this build has kernels for and this CPU runs, scalar first, from the
// least to the most capable (tests run each).
std::vector<Isa> available_isas();

}  // namespace oxi::kernels
