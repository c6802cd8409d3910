#include "lib/formats/npy.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "lib/core/error.h"
#include "lib/formats/mapped_file.h"
#include "lib/formats/zip.h"

namespace oxi::npy {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

uint32_t read_le(std::span<const std::byte> bytes, size_t offset, size_t width) {
  uint32_t v = 0;
  for (size_t i = 0; i < width; ++i) v |= std::to_integer<uint32_t>(bytes[offset + i]) << (8 * i);
  return v;
}

// The header is a Python dict literal; numpy writes it in one fixed shape, so a small scanner
// for the three keys is enough.
class HeaderScanner {
 public:
  HeaderScanner(std::string_view header, std::string_view context)
      : header_(header), context_(context) {}

  std::string_view value_of(std::string_view key) const {
    for (char quote : {'\'', '"'}) {
      std::string quoted(1, quote);
      quoted.append(key);
      quoted.push_back(quote);
      size_t pos = header_.find(quoted);
      if (pos == std::string_view::npos) continue;
      pos = header_.find(':', pos + quoted.size());
      if (pos == std::string_view::npos) break;
      std::string_view rest = header_.substr(pos + 1);
      while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
      return rest;
    }
    throw Error(context_, "npy header has no '" + std::string(key) + "': " + std::string(header_));
  }

  std::string descr() const {
    std::string_view v = value_of("descr");
    if (v.empty() || (v.front() != '\'' && v.front() != '"')) {
      throw Error(context_,
                  "npy 'descr' is not a simple type string (structured arrays are not "
                  "supported): " +
                      std::string(header_));
    }
    const size_t end = v.find(v.front(), 1);
    if (end == std::string_view::npos) throw Error(context_, "npy header: unterminated 'descr'");
    return std::string(v.substr(1, end - 1));
  }

  bool fortran_order() const {
    std::string_view v = value_of("fortran_order");
    if (v.starts_with("False")) return false;
    if (v.starts_with("True")) return true;
    throw Error(context_, "npy header: 'fortran_order' is neither True nor False");
  }

  std::vector<int64_t> shape() const {
    std::string_view v = value_of("shape");
    if (v.empty() || v.front() != '(') throw Error(context_, "npy header: 'shape' is not a tuple");
    const size_t close = v.find(')');
    if (close == std::string_view::npos) throw Error(context_, "npy header: unterminated 'shape'");
    std::string_view items = v.substr(1, close - 1);
    std::vector<int64_t> shape;
    while (!items.empty()) {
      while (!items.empty() && (items.front() == ' ' || items.front() == ',')) {
        items.remove_prefix(1);
      }
      if (items.empty()) break;
      int64_t dim = 0;
      size_t digits = 0;
      while (digits < items.size() && items[digits] >= '0' && items[digits] <= '9') {
        if (dim > (std::numeric_limits<int64_t>::max() - 9) / 10) {
          throw Error(context_, "npy header: dimension too large");
        }
        dim = dim * 10 + (items[digits] - '0');
        ++digits;
      }
      if (digits == 0) {
        throw Error(context_, "npy header: bad dimension in shape (" + std::string(items) + ")");
      }
      shape.push_back(dim);
      items.remove_prefix(digits);
    }
    return shape;
  }

 private:
  std::string_view header_;
  std::string_view context_;
};

float half_to_float(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1;
  const int exponent = (h >> 10) & 0x1F;
  const uint32_t mantissa = h & 0x3FF;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // subnormal
  } else if (exponent == 31) {
    magnitude =
        mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
  }
  return sign ? -magnitude : magnitude;
}

template <typename T>
T load_as(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Element i as double, or (for integers) as int64, from the little-endian bytes.
template <typename Out>
Out element(const Array& a, size_t i) {
  const std::byte* p = a.data.data() + i * a.item_size;
  switch (a.kind) {
    case Kind::Bool:
      return static_cast<Out>(p[0] != std::byte{0});
    case Kind::Float:
      switch (a.item_size) {
        case 2:
          return static_cast<Out>(half_to_float(load_as<uint16_t>(p)));
        case 4:
          return static_cast<Out>(load_as<float>(p));
        default:
          return static_cast<Out>(load_as<double>(p));
      }
    case Kind::Int:
      switch (a.item_size) {
        case 1:
          return static_cast<Out>(load_as<int8_t>(p));
        case 2:
          return static_cast<Out>(load_as<int16_t>(p));
        case 4:
          return static_cast<Out>(load_as<int32_t>(p));
        default:
          return static_cast<Out>(load_as<int64_t>(p));
      }
    case Kind::UInt:
      switch (a.item_size) {
        case 1:
          return static_cast<Out>(load_as<uint8_t>(p));
        case 2:
          return static_cast<Out>(load_as<uint16_t>(p));
        case 4:
          return static_cast<Out>(load_as<uint32_t>(p));
        default:
          return static_cast<Out>(load_as<uint64_t>(p));
      }
  }
  return Out{};
}

template <typename Out>
std::vector<Out> convert_all(const Array& a) {
  std::vector<Out> out(a.data.size() / a.item_size);
  for (size_t i = 0; i < out.size(); ++i) out[i] = element<Out>(a, i);
  return out;
}

}  // namespace

std::vector<float> Array::to_f32() const {
  return convert_all<float>(*this);
}
std::vector<double> Array::to_f64() const {
  return convert_all<double>(*this);
}
std::vector<int64_t> Array::to_i64() const {
  return convert_all<int64_t>(*this);
}

Array parse(std::span<const std::byte> bytes, std::string_view context) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0) {
    throw Error(context, "not a .npy file (bad magic)");
  }
  const int major = std::to_integer<int>(bytes[6]);
  if (major < 1 || major > 3) {
    throw Error(context, "unsupported .npy version " + std::to_string(major));
  }
  const size_t length_width = major == 1 ? 2 : 4;
  const size_t header_start = 8 + length_width;
  if (bytes.size() < header_start) throw Error(context, "truncated .npy header");
  const size_t header_len = read_le(bytes, 8, length_width);
  if (header_len > bytes.size() - header_start) {
    throw Error(context, "truncated .npy header (" + std::to_string(header_len) +
                             " header bytes announced, file has " + std::to_string(bytes.size()) +
                             ")");
  }
  const std::string_view header(reinterpret_cast<const char*>(bytes.data()) + header_start,
                                header_len);
  const HeaderScanner scanner(header, context);

  Array a;
  a.descr = scanner.descr();
  if (scanner.fortran_order()) {
    throw Error(context, "Fortran-order arrays are not supported");
  }
  a.shape = scanner.shape();

  // descr: byte order ('<' little, '>' big, '|' not applicable, '=' native), kind, size.
  const std::string& d = a.descr;
  if (d.size() < 3 || std::string_view("<>|=").find(d[0]) == std::string_view::npos) {
    throw Error(context, "unsupported npy dtype '" + d + "'");
  }
  const char kind = d[1];
  size_t item_size = 0;
  for (char c : std::string_view(d).substr(2)) {
    if (c < '0' || c > '9' || item_size > 16)
      throw Error(context, "unsupported npy dtype '" + d + "'");
    item_size = item_size * 10 + static_cast<size_t>(c - '0');
  }
  const bool size_ok = (kind == 'b' && item_size == 1) ||
                       ((kind == 'i' || kind == 'u') &&
                        (item_size == 1 || item_size == 2 || item_size == 4 || item_size == 8)) ||
                       (kind == 'f' && (item_size == 2 || item_size == 4 || item_size == 8));
  if (!size_ok) throw Error(context, "unsupported npy dtype '" + d + "'");
  a.kind = static_cast<Kind>(kind);
  a.item_size = item_size;

  const size_t data_start = header_start + header_len;
  const size_t available = bytes.size() - data_start;
  size_t numel = 1;
  for (int64_t dim : a.shape) {
    if (dim != 0 && numel > available / static_cast<size_t>(dim)) {
      throw Error(context, "array data extends past the end of the file");
    }
    numel *= static_cast<size_t>(dim);
  }
  if (numel > available / item_size) {
    throw Error(context, "array data extends past the end of the file (" +
                             std::to_string(numel * item_size) + " bytes needed, " +
                             std::to_string(available) + " present)");
  }
  const auto data = bytes.subspan(data_start, numel * item_size);
  a.data.assign(data.begin(), data.end());
  const bool big_endian = d[0] == '>' || (d[0] == '=' && std::endian::native == std::endian::big);
  if (big_endian && item_size > 1) {
    for (size_t i = 0; i < a.data.size(); i += item_size) {
      std::reverse(a.data.begin() + static_cast<ptrdiff_t>(i),
                   a.data.begin() + static_cast<ptrdiff_t>(i + item_size));
    }
  }
  return a;
}

Array load(const std::filesystem::path& path) {
  const MappedFile file(path);
  return parse(file.bytes(), path.string());
}

}  // namespace oxi::npy

namespace oxi::npy {

std::map<std::string, Array, std::less<>> load_npz(const std::filesystem::path& path) {
  const zip::Archive archive(path);
  std::map<std::string, Array, std::less<>> arrays;
  for (const zip::Entry& entry : archive.entries()) {
    std::string_view name = entry.name;
    if (!name.ends_with(".npy")) continue;  // numpy writes nothing else, but be lenient
    name.remove_suffix(4);
    const std::vector<std::byte> bytes = archive.read(entry);
    arrays.emplace(std::string(name), parse(bytes, path.string() + ":" + entry.name));
  }
  return arrays;
}

}  // namespace oxi::npy
