// oxinfer devices [--json]: what this machine offers to compute on. The JSON keys are listed
// in backends/README.md and stay stable.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "backends/device.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/commands.h"

namespace oxi::cli {
namespace {

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (unit == 0 || value == static_cast<double>(static_cast<uint64_t>(value)))
    std::snprintf(text, sizeof(text), "%.0f %s", value, units[unit]);
  else
    std::snprintf(text, sizeof(text), "%.1f %s", value, units[unit]);
  return text;
}

std::string cache_label(const backends::CpuCache& c) {
  // Appended piecewise: GCC 12 warns falsely (-Wrestrict) on "L" + std::to_string(...).
  std::string label = "L";
  label += std::to_string(c.level);
  if (c.type == "data") label += "d";
  if (c.type == "instruction") label += "i";
  return label;
}

nlohmann::json to_json(const backends::DeviceReport& r) {
  nlohmann::json caches = nlohmann::json::array();
  for (const auto& c : r.cpu.caches)
    caches.push_back(
        {{"level", c.level}, {"type", c.type}, {"bytes", c.bytes}, {"shared_by", c.shared_by}});
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : r.cuda.devices)
    gpus.push_back({{"index", g.index},
                    {"api", r.cuda.api},
                    {"name", g.name},
                    {"total_memory_bytes", g.total_memory_bytes},
                    {"compute_capability",
                     std::to_string(g.compute_major) + "." + std::to_string(g.compute_minor)},
                    {"multiprocessors", g.multiprocessors}});
  return {
      {"cpu",
       {{"model", r.cpu.model},
        {"arch", r.cpu.arch},
        {"features", r.cpu.features},
        {"kernel_isa", r.cpu.kernel_isa},
        {"physical_cores", r.cpu.physical_cores},
        {"logical_cores", r.cpu.logical_cores},
        {"usable_cores", r.cpu.usable_cores},
        {"caches", caches}}},
      {"memory",
       {{"total_bytes", r.memory.total_bytes}, {"available_bytes", r.memory.available_bytes}}},
      {"gpus", gpus},
      {"cuda", {{"driver_version", r.cuda.driver_version}, {"note", r.cuda.note}}},
  };
}

void print_text(const backends::DeviceReport& r) {
  std::string features, caches;
  for (const auto& f : r.cpu.features) features += (features.empty() ? "" : " ") + f;
  for (const auto& c : r.cpu.caches)
    caches += (caches.empty() ? "" : ", ") + cache_label(c) + " " + human_bytes(c.bytes);
  std::printf("CPU\n");
  std::printf("  model:       %s\n", r.cpu.model.c_str());
  std::printf("  arch:        %s\n", r.cpu.arch.c_str());
  std::printf("  features:    %s\n", features.empty() ? "(none)" : features.c_str());
  std::printf("  kernel ISA:  %s\n", r.cpu.kernel_isa.c_str());
  std::printf("  cores:       %d physical, %d logical, %d usable by this process\n",
              r.cpu.physical_cores, r.cpu.logical_cores, r.cpu.usable_cores);
  std::printf("  caches:      %s\n", caches.empty() ? "(unknown)" : caches.c_str());
  std::printf("memory\n");
  std::printf("  total:       %s\n", human_bytes(r.memory.total_bytes).c_str());
  std::printf("  available:   %s\n", human_bytes(r.memory.available_bytes).c_str());
  std::printf("GPUs\n");
  if (r.cuda.devices.empty()) {
    std::printf("  no GPU found (%s)\n", r.cuda.note.c_str());
    return;
  }
  std::printf("  CUDA driver %d.%d\n", r.cuda.driver_version / 1000,
              (r.cuda.driver_version % 1000) / 10);
  for (const auto& g : r.cuda.devices)
    std::printf("  [%d] %s, %s, compute capability %d.%d, %d multiprocessors\n", g.index,
                g.name.c_str(), human_bytes(g.total_memory_bytes).c_str(), g.compute_major,
                g.compute_minor, g.multiprocessors);
}

}  // namespace

int run_devices(const Argv& argv) {
  ArgParser parser("devices", "oxinfer devices [--json]",
                   "List compute devices: CPU model, instruction sets and the kernel set chosen, "
                   "cores, caches, memory, and NVIDIA GPUs (through the CUDA driver, if any).");
  parser.flag("json", "print JSON (keys documented in backends/README.md)");
  const ParsedArgs args = parser.parse(argv);
  if (!args.positional().empty())
    throw UsageError("unexpected argument '" + args.positional()[0] + "'");
  const backends::DeviceReport report = backends::detect_devices();
  if (args.flag("json"))
    std::printf("%s\n", to_json(report).dump(2).c_str());
  else
    print_text(report);
  return 0;
}

}  // namespace oxi::cli
