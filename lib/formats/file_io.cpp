#include "lib/formats/file_io.h"

#include <fstream>

#include "lib/core/error.h"

namespace oxi {

void write_file(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error(path.string(), "cannot open for writing");
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f.flush()) throw Error(path.string(), "write failed");
}

}  // namespace oxi
