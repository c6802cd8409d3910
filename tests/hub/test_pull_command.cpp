// `oxinfer pull` end to end: the built binary against the loopback Hub, stdout = the path.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "lib/hub/progress_bar.h"
#include "lib/hub/sha256.h"
#include "tests/common/test_data.h"
#include "tests/hub/loopback_server.h"

namespace oxi::hub {
namespace {

namespace fs = std::filesystem;

struct CommandResult {
  int exit_code = -1;
  std::string out;
};

struct PipeCloser {
  void operator()(std::FILE* pipe) const { ::pclose(pipe); }
};

CommandResult run_command(const std::string& command) {
  CommandResult result;
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer;
  size_t got;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.out.append(buffer.data(), got);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::optional<fs::path> oxinfer_binary() {
  const char* build_root = std::getenv("OXINFER_BUILD_ROOT");
  if (build_root == nullptr) return std::nullopt;
  const fs::path binary = fs::path(build_root) / "tools" / "oxinfer" / "oxinfer";
  if (!fs::exists(binary)) return std::nullopt;
  return binary;
}

TEST(PullCommand, PrintsTheGgufPathAndWorksOfflineAfterwards) {
  const std::optional<fs::path> binary = oxinfer_binary();
  if (!binary) GTEST_SKIP() << "oxinfer binary not built (OXINFER_BUILD_ROOT/tools/oxinfer)";
  ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
  ::setenv("no_proxy", "127.0.0.1,localhost", 1);
  test::LoopbackServer server;
  test::TempDir cache;
  test::TempDir hf_home;  // no user token file is read
  ::setenv("HF_ENDPOINT", server.url().c_str(), 1);
  ::setenv("HF_HOME", hf_home.path().c_str(), 1);
  ::unsetenv("HF_TOKEN");
  ::unsetenv("HF_TOKEN_PATH");
  ::unsetenv("OXINFER_OFFLINE");
  ::unsetenv("HF_HUB_OFFLINE");

  const std::string commit = "89abcdef0123456789abcdef0123456789abcdef";
  const std::string content(4096, 'g');
  nlohmann::json siblings = nlohmann::json::array();
  siblings.push_back({{"rfilename", "m-Q8_0.gguf"},
                      {"size", content.size()},
                      {"lfs", {{"sha256", sha256_hex(content)}, {"size", content.size()}}}});
  siblings.push_back({{"rfilename", "m-Q4_0.gguf"}, {"size", 3}});
  server.serve("/api/models/org/m-GGUF/revision/main",
               nlohmann::json{{"sha", commit}, {"siblings", siblings}}.dump());
  server.serve("/org/m-GGUF/resolve/" + commit + "/m-Q8_0.gguf", content);

  const std::string base = binary->string() + " pull --cache-dir " + cache.path().string();
  const fs::path expected =
      cache.path() / "models--org--m-GGUF" / "snapshots" / commit / "m-Q8_0.gguf";
  const CommandResult online = run_command(base + " org/m-GGUF:Q8_0 2>/dev/null");
  EXPECT_EQ(online.exit_code, 0);
  EXPECT_EQ(online.out, expected.string() + "\n");
  EXPECT_EQ(test::read_file_bytes(expected).size(), content.size());

  server.clear_requests();
  const CommandResult offline = run_command(base + " --offline org/m-GGUF:Q8_0 2>/dev/null");
  EXPECT_EQ(offline.exit_code, 0);
  EXPECT_EQ(offline.out, expected.string() + "\n");
  const CommandResult missing = run_command(base + " --offline org/m-GGUF:Q4_0 2>&1");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("not cached"), std::string::npos) << missing.out;
  EXPECT_TRUE(server.requests().empty());

  const CommandResult usage = run_command(base + " not-a-repo 2>&1");
  EXPECT_NE(usage.exit_code, 0);
  EXPECT_NE(usage.out.find("org/name"), std::string::npos) << usage.out;
  ::unsetenv("HF_ENDPOINT");
}

TEST(ProgressBar, FormatsBytes) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(3.0 * 1024 * 1024 * 1024), "3.0 GiB");
}

}  // namespace
}  // namespace oxi::hub
