// A stand-in for libcuda.so.1 with two devices, so the CUDA probe's listing path runs on
// machines without an NVIDIA driver. Only the entry points probe_cuda_gpus() uses.
#include <cstddef>
#include <cstring>

namespace {
constexpr int kDevices = 2;
bool initialized = false;
}  // namespace

extern "C" {

int cuInit(unsigned flags) {
  if (flags != 0) return 1;  // CUDA_ERROR_INVALID_VALUE
  initialized = true;
  return 0;
}
int cuDriverGetVersion(int* version) {
  *version = 12040;
  return 0;
}
int cuDeviceGetCount(int* count) {
  if (!initialized) return 3;  // CUDA_ERROR_NOT_INITIALIZED
  *count = kDevices;
  return 0;
}
int cuDeviceGet(int* device, int ordinal) {
  if (ordinal < 0 || ordinal >= kDevices) return 101;  // CUDA_ERROR_INVALID_DEVICE
  *device = 100 + ordinal;
  return 0;
}
int cuDeviceGetName(char* name, int len, int device) {
  const char* text = device == 100 ? "Fake GPU Zero" : "Fake GPU One";
  std::strncpy(name, text, static_cast<size_t>(len));
  return 0;
}
int cuDeviceTotalMem_v2(size_t* bytes, int device) {
  *bytes = (device == 100 ? size_t{80} : size_t{24}) << 30;
  return 0;
}
int cuDeviceGetAttribute(int* value, int attribute, int device) {
  switch (attribute) {
    case 75:
      *value = device == 100 ? 9 : 8;
      return 0;  // compute capability major
    case 76:
      *value = device == 100 ? 0 : 6;
      return 0;  // minor
    case 16:
      *value = device == 100 ? 132 : 84;
      return 0;  // multiprocessors
    default:
      return 1;
  }
}

}  // extern "C"
