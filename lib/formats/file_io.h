// Writing a whole file at once, for the model-file writers.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>

namespace oxi {

// Replaces `path` with `bytes`; throws oxi::Error naming the path when it cannot.
void write_file(const std::filesystem::path& path, std::span<const std::byte> bytes);

}  // namespace oxi
