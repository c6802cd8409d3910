// Resident memory of this process and the size of a model on disk, for the benchmarks'
// memory figures.
#pragma once

#include <cstdint>
#include <filesystem>

namespace oxi::bench {

// VmRSS from /proc/self/status in bytes; 0 where the file is not there (not Linux).
uint64_t resident_bytes();

// A file's size, or the sum of the regular files directly in a directory (an HF checkpoint).
uint64_t model_bytes_on_disk(const std::filesystem::path& path);

}  // namespace oxi::bench
