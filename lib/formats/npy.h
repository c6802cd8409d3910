// NumPy .npy arrays and .npz archives (a zip of .npy files) — enough to read reference data
// such as Whisper's mel_filters.npz.
//
// .npy layout: magic "\x93NUMPY", version (1.0, 2.0 or 3.0), header length (u16 for v1, u32
// after), a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (80, 201), }
// padded with spaces, then the raw elements. Supported element types: booleans, signed and
// unsigned integers of 1-8 bytes and floats of 2, 4 and 8 bytes, either byte order; C order
// only (fortran_order True is rejected).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace oxi::npy {

enum class Kind : char { Bool = 'b', Int = 'i', UInt = 'u', Float = 'f' };

struct Array {
  std::string descr;  // as written in the header, e.g. "<f4"
  Kind kind = Kind::Float;
  size_t item_size = 4;
  std::vector<int64_t> shape;   // () for a scalar
  std::vector<std::byte> data;  // numel * item_size bytes, converted to little-endian

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  // Element conversions (any supported kind converts; integers wider than 2^53 lose precision
  // in the float versions).
  std::vector<float> to_f32() const;
  std::vector<double> to_f64() const;
  std::vector<int64_t> to_i64() const;
};

// Parses a whole .npy image; `context` (a file or entry name) prefixes error messages.
Array parse(std::span<const std::byte> bytes, std::string_view context);
Array load(const std::filesystem::path& path);

// Every array of an .npz archive by name, without the ".npy" suffix ("mel_80").
std::map<std::string, Array, std::less<>> load_npz(const std::filesystem::path& path);

}  // namespace oxi::npy
