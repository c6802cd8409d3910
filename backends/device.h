// What this machine offers to compute on: the CPU (model, instruction sets, cores, caches),
// memory, and NVIDIA GPUs seen through the CUDA driver, which is loaded with dlopen at run
// time (nothing GPU-related is linked at build time, so the probe is empty where there is none).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace oxi::backends {

struct CpuCache {
  int level = 0;       // 1, 2, 3
  std::string type;    // "data", "instruction", "unified"
  uint64_t bytes = 0;  // size of one instance
  int shared_by = 0;   // logical CPUs sharing one instance; 0 when unknown
};

struct CpuInfo {
  std::string model;                  // "AMD EPYC 7763 64-Core Processor"; "unknown" if absent
  std::string arch;                   // "x86_64", "aarch64", ...
  std::vector<std::string> features;  // instruction sets kernels care about: "avx2", "fma", ...
  std::string kernel_isa;             // the kernel instruction set selected (isa_name)
  int physical_cores = 0;             // distinct (package, core) pairs
  int logical_cores = 0;              // hardware threads online
  int usable_cores = 0;               // logical CPUs this process may run on (affinity mask)
  std::vector<CpuCache> caches;       // empty when the system does not say
};

struct MemoryInfo {
  uint64_t total_bytes = 0;
  uint64_t available_bytes = 0;
};

struct GpuInfo {
  int index = 0;
  std::string name;
  uint64_t total_memory_bytes = 0;
  int compute_major = 0;  // compute capability, e.g. 9.0 for H100/H200
  int compute_minor = 0;
  int multiprocessors = 0;
};

struct GpuProbe {
  std::string api;         // "cuda"
  int driver_version = 0;  // cuDriverGetVersion: 12040 = 12.4; 0 when no driver was loaded
  std::vector<GpuInfo> devices;
  std::string note;  // why the list is empty ("libcuda.so.1 not found", ...); "" otherwise
};

struct DeviceReport {
  CpuInfo cpu;
  MemoryInfo memory;
  GpuProbe cuda;
};

CpuInfo detect_cpu();
MemoryInfo detect_memory();
// Loads `library` with dlopen and asks the CUDA driver API for its devices. Never throws: a
// missing library, a failed cuInit or zero devices all give an empty list and a note.
GpuProbe probe_cuda_gpus(const char* library = "libcuda.so.1");
DeviceReport detect_devices();

// Parsers behind detection, exposed so tests can feed them text.
// "model name" (x86) or "Processor"/"CPU part" fallbacks of /proc/cpuinfo; "" when absent.
std::string parse_cpuinfo_model(std::string_view cpuinfo);
// MemTotal / MemAvailable of /proc/meminfo (kB in the file, bytes here).
MemoryInfo parse_meminfo(std::string_view meminfo);
// sysfs cache sizes: "32K", "1024K", "32M" -> bytes; 0 when unparseable.
uint64_t parse_size_with_unit(std::string_view text);
// A sysfs CPU list ("0-3,8,10-11") -> the number of CPUs in it.
int count_cpu_list(std::string_view list);

}  // namespace oxi::backends
