// Device detection: parsers on fixed text, and sanity of what this machine reports.
#include <gtest/gtest.h>

#include "backends/device.h"

namespace oxi::backends {
namespace {

TEST(DeviceParse, CpuinfoModelX86) {
  const char* text =
      "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7763 64-Core Processor\n"
      "processor\t: 1\nmodel name\t: AMD EPYC 7763 64-Core Processor\n";
  EXPECT_EQ(parse_cpuinfo_model(text), "AMD EPYC 7763 64-Core Processor");
}

TEST(DeviceParse, CpuinfoModelAarch64Fallback) {
  const char* text =
      "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n"
      "CPU architecture: 8\nCPU part\t: 0xd0c\n";
  EXPECT_EQ(parse_cpuinfo_model(text), "implementer 0x41, part 0xd0c");
  EXPECT_EQ(parse_cpuinfo_model(""), "");
}

TEST(DeviceParse, Meminfo) {
  const MemoryInfo m =
      parse_meminfo("MemTotal:       16318480 kB\nMemFree:  100 kB\nMemAvailable:   8000000 kB\n");
  EXPECT_EQ(m.total_bytes, 16318480ull * 1024);
  EXPECT_EQ(m.available_bytes, 8000000ull * 1024);
}

TEST(DeviceParse, SizesAndCpuLists) {
  EXPECT_EQ(parse_size_with_unit("32K\n"), 32u * 1024);
  EXPECT_EQ(parse_size_with_unit("32M"), 32u << 20);
  EXPECT_EQ(parse_size_with_unit("4096"), 4096u);
  EXPECT_EQ(parse_size_with_unit("x"), 0u);
  EXPECT_EQ(count_cpu_list("0-3,8,10-11\n"), 7);
  EXPECT_EQ(count_cpu_list("5"), 1);
  EXPECT_EQ(count_cpu_list(""), 0);
}

TEST(DeviceDetect, ThisMachine) {
  const CpuInfo cpu = detect_cpu();
  EXPECT_FALSE(cpu.model.empty());
  EXPECT_FALSE(cpu.kernel_isa.empty());
  EXPECT_GT(cpu.physical_cores, 0);
  EXPECT_GT(cpu.logical_cores, 0);
  EXPECT_GE(cpu.logical_cores, cpu.physical_cores);
  EXPECT_GT(cpu.usable_cores, 0);
  for (const CpuCache& c : cpu.caches) {
    EXPECT_GE(c.level, 1);
    EXPECT_GT(c.bytes, 0u);
  }
  const MemoryInfo memory = detect_memory();
  EXPECT_GT(memory.total_bytes, 0u);
  EXPECT_GT(memory.available_bytes, 0u);
  EXPECT_LE(memory.available_bytes, memory.total_bytes);
}

TEST(DeviceDetect, MissingCudaLibraryGivesEmptyList) {
  const GpuProbe probe = probe_cuda_gpus("libdoes-not-exist-oxinfer.so.1");
  EXPECT_TRUE(probe.devices.empty());
  EXPECT_EQ(probe.driver_version, 0);
  EXPECT_FALSE(probe.note.empty());
}

// The listing path, against a stand-in driver library built with the tests.
TEST(DeviceDetect, CudaProbeListsDevicesOfAFakeDriver) {
  const GpuProbe probe = probe_cuda_gpus(OXI_FAKE_CUDA_PATH);
  ASSERT_EQ(probe.devices.size(), 2u) << probe.note;
  EXPECT_EQ(probe.driver_version, 12040);
  EXPECT_EQ(probe.note, "");
  EXPECT_EQ(probe.devices[0].index, 0);
  EXPECT_EQ(probe.devices[0].name, "Fake GPU Zero");
  EXPECT_EQ(probe.devices[0].total_memory_bytes, 80ull << 30);
  EXPECT_EQ(probe.devices[0].compute_major, 9);
  EXPECT_EQ(probe.devices[0].compute_minor, 0);
  EXPECT_EQ(probe.devices[0].multiprocessors, 132);
  EXPECT_EQ(probe.devices[1].index, 1);
  EXPECT_EQ(probe.devices[1].name, "Fake GPU One");
  EXPECT_EQ(probe.devices[1].total_memory_bytes, 24ull << 30);
  EXPECT_EQ(probe.devices[1].compute_major, 8);
  EXPECT_EQ(probe.devices[1].compute_minor, 6);
}

// A library without the driver API (libm has none of its symbols) is no driver.
TEST(DeviceDetect, LibraryWithoutDriverApi) {
  const GpuProbe probe = probe_cuda_gpus("libm.so.6");
  EXPECT_TRUE(probe.devices.empty());
  EXPECT_FALSE(probe.note.empty());
}

// Whatever the machine has: the real probe must not crash, and what it lists must be sane.
TEST(DeviceDetect, CudaProbe) {
  const GpuProbe probe = probe_cuda_gpus();
  EXPECT_EQ(probe.api, "cuda");
  if (probe.devices.empty()) {
    EXPECT_FALSE(probe.note.empty());
    return;
  }
  EXPECT_GT(probe.driver_version, 0);
  for (const GpuInfo& g : probe.devices) {
    EXPECT_FALSE(g.name.empty());
    EXPECT_GT(g.total_memory_bytes, 0u);
    EXPECT_GT(g.compute_major, 0);
    std::printf("GPU %d: %s, %llu bytes, cc %d.%d\n", g.index, g.name.c_str(),
                static_cast<unsigned long long>(g.total_memory_bytes), g.compute_major,
                g.compute_minor);
  }
}

}  // namespace
}  // namespace oxi::backends
