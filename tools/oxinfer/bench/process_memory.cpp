#include "tools/oxinfer/bench/process_memory.h"

#include <fstream>
#include <string>

namespace oxi::bench {

uint64_t resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      uint64_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(4096, '\n');
  }
  return 0;
}

uint64_t model_bytes_on_disk(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    const auto size = fs::file_size(path, ec);
    return ec ? 0 : size;
  }
  uint64_t total = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
    if (e.is_regular_file(ec)) total += e.file_size(ec);
  }
  return total;
}

}  // namespace oxi::bench
