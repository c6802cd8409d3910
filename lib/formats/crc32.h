// CRC-32 (IEEE 802.3, as zip uses it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace oxi::formats {

// Continues a running CRC: crc32(b, crc32(a)) == crc32(a + b).
uint32_t crc32(std::span<const std::byte> bytes, uint32_t crc = 0) noexcept;

}  // namespace oxi::formats
