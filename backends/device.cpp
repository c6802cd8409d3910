#include "backends/device.h"

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "kernels/cpu_features.h"

namespace oxi::backends {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

// Calls fn(key, value) for each "key : value" line of a /proc file.
template <typename Fn>
void for_each_field(std::string_view text, Fn&& fn) {
  while (!text.empty()) {
    const auto eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    if (!fn(trim(line.substr(0, colon)), trim(line.substr(colon + 1)))) return;
  }
}

uint64_t parse_u64(std::string_view s) {
  uint64_t value = 0;
  s = trim(s);
  std::from_chars(s.data(), s.data() + s.size(), value);
  return value;
}

int read_int_file(const fs::path& path, int fallback) {
  const std::string text = read_text(path);
  if (text.empty()) return fallback;
  int value = fallback;
  const std::string_view t = trim(text);
  const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  return ec == std::errc{} ? value : fallback;
}

std::vector<std::string> feature_names(const kernels::CpuFeatures& f) {
  std::vector<std::string> names;
  const std::pair<bool, const char*> all[] = {
      {f.sse42, "sse4.2"},      {f.avx, "avx"},
      {f.avx2, "avx2"},         {f.fma, "fma"},
      {f.f16c, "f16c"},         {f.avx512f, "avx512f"},
      {f.avx512bw, "avx512bw"}, {f.avx512vl, "avx512vl"},
      {f.avx512dq, "avx512dq"}, {f.avx512vnni, "avx512vnni"},
      {f.neon, "neon"}, {f.dotprod, "dotprod"},
  };
  for (const auto& [present, name] : all)
    if (present) names.emplace_back(name);
  return names;
}

// Distinct (package, core) pairs from sysfs; then /proc/cpuinfo; 0 when neither says.
int count_physical_cores(std::string_view cpuinfo) {
  std::set<std::pair<int, int>> cores;
  const fs::path cpu_root = "/sys/devices/system/cpu";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(cpu_root, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() < 4 || name.compare(0, 3, "cpu") != 0 ||
        name.find_first_not_of("0123456789", 3) != std::string::npos)
      continue;
    const int package = read_int_file(entry.path() / "topology/physical_package_id", -1);
    const int core = read_int_file(entry.path() / "topology/core_id", -1);
    if (package < 0 && core < 0) continue;
    cores.emplace(package, core);
  }
  if (!cores.empty()) return static_cast<int>(cores.size());
  int package = 0;
  for_each_field(cpuinfo, [&](std::string_view key, std::string_view value) {
    if (key == "physical id") package = static_cast<int>(parse_u64(value));
    if (key == "core id") cores.emplace(package, static_cast<int>(parse_u64(value)));
    return true;
  });
  return static_cast<int>(cores.size());
}

std::vector<CpuCache> sysfs_caches() {
  std::vector<CpuCache> caches;
  const fs::path root = "/sys/devices/system/cpu/cpu0/cache";
  for (int index = 0;; ++index) {
    const fs::path dir = root / ("index" + std::to_string(index));
    std::error_code ec;
    if (!fs::exists(dir, ec)) break;
    CpuCache cache;
    cache.level = read_int_file(dir / "level", 0);
    const std::string type(trim(read_text(dir / "type")));
    cache.type = type == "Data" ? "data" : type == "Instruction" ? "instruction" : "unified";
    cache.bytes = parse_size_with_unit(read_text(dir / "size"));
    cache.shared_by = count_cpu_list(read_text(dir / "shared_cpu_list"));
    if (cache.level > 0 && cache.bytes > 0) caches.push_back(std::move(cache));
  }
  return caches;
}

// glibc answers from cpuid on x86 where sysfs has no cache directory (containers, gVisor).
std::vector<CpuCache> sysconf_caches() {
  std::vector<CpuCache> caches;
  const auto add = [&](int level, const char* type, long bytes) {
    if (bytes > 0) caches.push_back({level, type, static_cast<uint64_t>(bytes), 0});
  };
#if defined(_SC_LEVEL1_DCACHE_SIZE)
  add(1, "data", sysconf(_SC_LEVEL1_DCACHE_SIZE));
  add(1, "instruction", sysconf(_SC_LEVEL1_ICACHE_SIZE));
  add(2, "unified", sysconf(_SC_LEVEL2_CACHE_SIZE));
  add(3, "unified", sysconf(_SC_LEVEL3_CACHE_SIZE));
#endif
  return caches;
}

int usable_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

}  // namespace

std::string parse_cpuinfo_model(std::string_view cpuinfo) {
  std::string model, implementer, part, hardware;
  for_each_field(cpuinfo, [&](std::string_view key, std::string_view value) {
    if (key == "model name" && model.empty())
      model = value;
    else if (key == "CPU implementer" && implementer.empty())
      implementer = value;
    else if (key == "CPU part" && part.empty())
      part = value;
    else if ((key == "Hardware" || key == "Processor") && hardware.empty())
      hardware = value;
    return true;
  });
  if (!model.empty()) return model;
  if (!hardware.empty()) return hardware;
  // aarch64 kernels print no model name, only the implementer and part numbers.
  if (!implementer.empty()) return "implementer " + implementer + ", part " + part;
  return {};
}

MemoryInfo parse_meminfo(std::string_view meminfo) {
  MemoryInfo info;
  for_each_field(meminfo, [&](std::string_view key, std::string_view value) {
    if (key == "MemTotal") info.total_bytes = parse_u64(value) * 1024;  // "16318480 kB"
    if (key == "MemAvailable") info.available_bytes = parse_u64(value) * 1024;
    return true;
  });
  return info;
}

uint64_t parse_size_with_unit(std::string_view text) {
  text = trim(text);
  uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || ptr == text.data()) return 0;
  const std::string_view unit = trim(std::string_view(ptr, text.data() + text.size() - ptr));
  if (unit.empty()) return value;
  switch (unit[0]) {
    case 'K':
    case 'k':
      return value << 10;
    case 'M':
    case 'm':
      return value << 20;
    case 'G':
    case 'g':
      return value << 30;
    default:
      return 0;
  }
}

int count_cpu_list(std::string_view list) {
  int count = 0;
  list = trim(list);
  while (!list.empty()) {
    const auto comma = list.find(',');
    const std::string_view range = trim(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    if (range.empty()) continue;
    const auto dash = range.find('-');
    const uint64_t first = parse_u64(range.substr(0, dash));
    const uint64_t last =
        dash == std::string_view::npos ? first : parse_u64(range.substr(dash + 1));
    if (last >= first) count += static_cast<int>(last - first + 1);
  }
  return count;
}

CpuInfo detect_cpu() {
  CpuInfo cpu;
  const std::string cpuinfo = read_text("/proc/cpuinfo");
  cpu.model = parse_cpuinfo_model(cpuinfo);
  if (cpu.model.empty()) cpu.model = std::string(trim(read_text("/proc/device-tree/model")));
  // The device-tree string ends in NUL.
  cpu.model.erase(std::find(cpu.model.begin(), cpu.model.end(), '\0'), cpu.model.end());
  if (cpu.model.empty()) cpu.model = "unknown";
  utsname uts{};
  cpu.arch = uname(&uts) == 0 ? uts.machine : "unknown";
  cpu.features = feature_names(kernels::cpu_features());
  cpu.kernel_isa = std::string(kernels::isa_name(kernels::selected_isa()));
  cpu.logical_cores = static_cast<int>(std::thread::hardware_concurrency());
  if (cpu.logical_cores <= 0) cpu.logical_cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  cpu.physical_cores = count_physical_cores(cpuinfo);
  if (cpu.physical_cores <= 0) cpu.physical_cores = cpu.logical_cores;
  cpu.usable_cores = usable_cpu_count();
  if (cpu.usable_cores <= 0) cpu.usable_cores = cpu.logical_cores;
  cpu.caches = sysfs_caches();
  if (cpu.caches.empty()) cpu.caches = sysconf_caches();
  return cpu;
}

MemoryInfo detect_memory() {
  MemoryInfo info = parse_meminfo(read_text("/proc/meminfo"));
  if (info.total_bytes == 0) {
    const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page_size > 0) info.total_bytes = uint64_t(pages) * uint64_t(page_size);
  }
  if (info.available_bytes == 0) {
    const long pages = sysconf(_SC_AVPHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page_size > 0) info.available_bytes = uint64_t(pages) * uint64_t(page_size);
  }
  return info;
}

DeviceReport detect_devices() {
  return {detect_cpu(), detect_memory(), probe_cuda_gpus()};
}

}  // namespace oxi::backends
