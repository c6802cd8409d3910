// Raw DEFLATE decompression (RFC 1951), for the deflated entries of zip archives such as
// NumPy .npz files. Output is capped at the size the archive declares, so a corrupt or hostile
// stream cannot grow without bound.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

namespace oxi::formats {

// Decodes `in` into exactly `expected_size` bytes; throws oxi::Error(context, problem) for a
// malformed stream or a size mismatch.
std::vector<std::byte> inflate_raw(std::span<const std::byte> in, size_t expected_size,
                                   std::string_view context);

}  // namespace oxi::formats
