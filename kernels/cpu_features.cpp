#include "kernels/cpu_features.h"

#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace oxi::kernels {
namespace {

CpuFeatures detect() noexcept {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
    f.sse42 = (ecx & bit_SSE4_2) != 0;
    f.fma = (ecx & bit_FMA) != 0;
    f.f16c = (ecx & bit_F16C) != 0;
    const bool osxsave = (ecx & bit_OSXSAVE) != 0;
    bool ymm_enabled = false, zmm_enabled = false;
    if (osxsave) {
      unsigned xcr0_lo = 0, xcr0_hi = 0;
      __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
      ymm_enabled = (xcr0_lo & 0x6) == 0x6;  // the OS saves XMM and YMM state
      // ... and the opmask registers, the upper halves of ZMM0-15 and ZMM16-31
      zmm_enabled = ymm_enabled && (xcr0_lo & 0xE0) == 0xE0;
    }
    f.avx = (ecx & bit_AVX) != 0 && ymm_enabled;
    if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
      f.avx2 = f.avx && (ebx & bit_AVX2) != 0;
      f.avx512f = zmm_enabled && (ebx & bit_AVX512F) != 0;
      f.avx512bw = f.avx512f && (ebx & bit_AVX512BW) != 0;
      f.avx512vl = f.avx512f && (ebx & bit_AVX512VL) != 0;
      f.avx512dq = f.avx512f && (ebx & bit_AVX512DQ) != 0;
      f.avx512vnni = f.avx512f && (ecx & bit_AVX512VNNI) != 0;
    }
    if (!f.avx) f.fma = f.f16c = false;
  }
#elif defined(__aarch64__)
  f.neon = true;
#if defined(__linux__)
  f.dotprod = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#endif
#endif
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() noexcept {
  static const CpuFeatures features = detect();
  return features;
}

bool isa_available(Isa isa) noexcept {
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case Isa::scalar:
      return true;
    case Isa::sse42:
#if defined(OXI_HAVE_ARCH_SSE42)
      return f.sse42;
#else
      return false;
#endif
    case Isa::avx2:
#if defined(OXI_HAVE_ARCH_AVX2)
      return f.avx2 && f.fma && f.f16c;
#else
      return false;
#endif
    case Isa::avx512:
#if defined(OXI_HAVE_ARCH_AVX512)
      return isa_available(Isa::avx2) && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq &&
             f.avx512vnni;
#else
      return false;
#endif
    case Isa::neon:
#if defined(OXI_HAVE_ARCH_NEON)
      return f.neon;
#else
      return false;
#endif
    case Isa::neon_dotprod:
#if defined(OXI_HAVE_ARCH_NEON_DOTPROD)
      return f.neon && f.dotprod;
#else
      return false;
#endif
  }
  return false;
}

std::string_view isa_name(Isa isa) noexcept {
  switch (isa) {
    case Isa::scalar:
      return "scalar";
    case Isa::sse42:
      return "sse4.2";
    case Isa::avx2:
      return "avx2+fma+f16c";
    case Isa::avx512:
      return "avx512+vnni";
    case Isa::neon:
      return "neon";
    case Isa::neon_dotprod:
      return "neon_dotprod";
  }
  return "?";
}

std::vector<Isa> available_isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::scalar, Isa::sse42, Isa::neon, Isa::neon_dotprod, Isa::avx2, Isa::avx512}) {
    if (isa_available(isa)) out.push_back(isa);
  }
  return out;
}

Isa selected_isa() noexcept {
  static const Isa chosen = [] {
    const std::vector<Isa> available = available_isas();
    Isa best = available.back();
    // OXI_ISA may only lower the choice: asking for an unavailable set keeps the best one. A
    // set is named by isa_name or its short form: the part before the first '+', dots dropped
    // ("sse4.2" or "sse42", "avx2+fma+f16c" or "avx2", "avx512+vnni" or "avx512").
    if (const char* want = std::getenv("OXI_ISA")) {
      const auto short_name = [](std::string_view n) {
        std::string s;
        for (char c : n.substr(0, n.find('+')))
          if (c != '.') s += c;
        return s;
      };
      for (Isa isa : available) {
        const std::string_view n = isa_name(isa);
        if (n == want || short_name(n) == want) best = isa;
      }
    }
    return best;
  }();
  return chosen;
}

}  // namespace oxi::kernels
