// NVIDIA GPUs through the CUDA driver API, loaded with dlopen: the build links no GPU library,
// and a machine without the driver gets an empty list and a note, never an error.
#include <dlfcn.h>

#include <array>
#include <memory>
#include <string>

#include "backends/device.h"

namespace oxi::backends {
namespace {

// The few driver API types and constants used here (cuda.h is not needed to build).
using CUresult = int;
using CUdevice = int;
constexpr CUresult kCudaSuccess = 0;
constexpr int kAttrMultiprocessorCount = 16;
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;

struct CudaDriver {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*driver_get_version)(int*) = nullptr;
  CUresult (*device_get_count)(int*) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_get_name)(char*, int, CUdevice) = nullptr;
  CUresult (*device_total_mem)(size_t*, CUdevice) = nullptr;
  CUresult (*device_get_attribute)(int*, int, CUdevice) = nullptr;
  CUresult (*device_compute_capability)(int*, int*, CUdevice) = nullptr;  // deprecated fallback
  CUresult (*get_error_string)(CUresult, const char**) = nullptr;
};

struct DlClose {
  void operator()(void* handle) const { dlclose(handle); }
};
using DlHandle = std::unique_ptr<void, DlClose>;

template <typename Fn>
void bind(void* handle, const char* symbol, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(handle, symbol));
}

std::string error_text(const CudaDriver& cuda, const char* call, CUresult rc) {
  const char* text = nullptr;
  if (cuda.get_error_string) cuda.get_error_string(rc, &text);
  return std::string(call) + " failed: " + (text ? text : "error " + std::to_string(rc));
}

}  // namespace

GpuProbe probe_cuda_gpus(const char* library) {
  GpuProbe probe;
  probe.api = "cuda";
  DlHandle handle(dlopen(library, RTLD_NOW | RTLD_LOCAL));
  if (!handle) {
    probe.note = std::string(library) + " not found (no NVIDIA driver)";
    return probe;
  }
  CudaDriver cuda;
  bind(handle.get(), "cuInit", cuda.init);
  bind(handle.get(), "cuDriverGetVersion", cuda.driver_get_version);
  bind(handle.get(), "cuDeviceGetCount", cuda.device_get_count);
  bind(handle.get(), "cuDeviceGet", cuda.device_get);
  bind(handle.get(), "cuDeviceGetName", cuda.device_get_name);
  bind(handle.get(), "cuDeviceTotalMem_v2", cuda.device_total_mem);
  bind(handle.get(), "cuDeviceGetAttribute", cuda.device_get_attribute);
  bind(handle.get(), "cuDeviceComputeCapability", cuda.device_compute_capability);
  bind(handle.get(), "cuGetErrorString", cuda.get_error_string);
  if (!cuda.init || !cuda.device_get_count || !cuda.device_get || !cuda.device_get_name) {
    probe.note = std::string(library) + " lacks the CUDA driver API entry points";
    return probe;
  }
  if (const CUresult rc = cuda.init(0); rc != kCudaSuccess) {
    probe.note = error_text(cuda, "cuInit", rc);
    return probe;
  }
  // After cuInit the driver runs threads of its own; unloading it under them is unsafe, so it
  // stays loaded for the life of the process.
  static_cast<void>(handle.release());
  if (cuda.driver_get_version) cuda.driver_get_version(&probe.driver_version);
  int count = 0;
  if (const CUresult rc = cuda.device_get_count(&count); rc != kCudaSuccess) {
    probe.note = error_text(cuda, "cuDeviceGetCount", rc);
    return probe;
  }
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CUdevice device = 0;
    if (cuda.device_get(&device, ordinal) != kCudaSuccess) continue;
    GpuInfo gpu;
    gpu.index = ordinal;
    std::array<char, 256> name{};
    if (cuda.device_get_name(name.data(), static_cast<int>(name.size()), device) == kCudaSuccess)
      gpu.name = name.data();
    size_t bytes = 0;
    if (cuda.device_total_mem && cuda.device_total_mem(&bytes, device) == kCudaSuccess)
      gpu.total_memory_bytes = bytes;
    if (cuda.device_get_attribute) {
      cuda.device_get_attribute(&gpu.compute_major, kAttrComputeCapabilityMajor, device);
      cuda.device_get_attribute(&gpu.compute_minor, kAttrComputeCapabilityMinor, device);
      cuda.device_get_attribute(&gpu.multiprocessors, kAttrMultiprocessorCount, device);
    } else if (cuda.device_compute_capability) {
      cuda.device_compute_capability(&gpu.compute_major, &gpu.compute_minor, device);
    }
    probe.devices.push_back(std::move(gpu));
  }
  if (probe.devices.empty()) probe.note = "the CUDA driver reports no devices";
  return probe;
}

}  // namespace oxi::backends
