#include "tests/common/cli_runner.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace oxi::test {

std::filesystem::path oxinfer_exe(std::string& why) {
  const char* build = std::getenv("OXINFER_BUILD_ROOT");
  if (!build) {
    why = "OXINFER_BUILD_ROOT not set (run through meson test)";
    return {};
  }
  const std::filesystem::path exe = std::filesystem::path(build) / "tools" / "oxinfer" / "oxinfer";
  if (!std::filesystem::exists(exe)) {
    why = exe.string() + " not built";
    return {};
  }
  return exe;
}

int run_cli(const std::filesystem::path& exe, const std::string& args,
            const std::filesystem::path& dir) {
  const std::string cmd = exe.string() + " " + args + " >" + (dir / "out.txt").string() + " 2>" +
                          (dir / "err.txt").string();
  return std::system(cmd.c_str());
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace oxi::test
