// Running the oxinfer CLI of this build tree from a test, its output captured in files.
#pragma once

#include <filesystem>
#include <string>

namespace oxi::test {

// $OXINFER_BUILD_ROOT/tools/oxinfer/oxinfer, or an empty path with `why` saying why not (the
// variable is unset outside meson test; the tool may not be built): the test skips then.
std::filesystem::path oxinfer_exe(std::string& why);

// Runs `exe args` through the shell, stdout into dir/out.txt and stderr into dir/err.txt;
// returns std::system's status.
int run_cli(const std::filesystem::path& exe, const std::string& args,
            const std::filesystem::path& dir);

// A whole file as bytes ("" when it cannot be read).
std::string read_text(const std::filesystem::path& p);

}  // namespace oxi::test
