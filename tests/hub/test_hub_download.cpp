// End-to-end downloads against a loopback Hub: listing, cache layout, cache hits, resume,
// integrity checks, quant selection, offline mode, token scoping and error messages.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/core/error.h"
#include "lib/hub/hub.h"
#include "lib/hub/sha256.h"
#include "tests/common/test_data.h"
#include "tests/hub/loopback_server.h"

namespace oxi::hub {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";

// A repo the loopback server publishes: files with contents; `lfs` ones carry a SHA-256.
struct FakeRepo {
  std::string id;
  std::map<std::string, std::string> files;
  std::vector<std::string> lfs;
  std::string commit = kCommit;

  std::string api_path(const std::string& revision = "main") const {
    return "/api/models/" + id + "/revision/" + revision;
  }
  std::string file_path(const std::string& name) const {
    return "/" + id + "/resolve/" + commit + "/" + name;
  }
  std::string listing_json() const {
    nlohmann::json siblings = nlohmann::json::array();
    for (const auto& [name, content] : files) {
      nlohmann::json entry = {{"rfilename", name}, {"size", content.size()}};
      if (std::find(lfs.begin(), lfs.end(), name) != lfs.end()) {
        entry["lfs"] = {{"sha256", sha256_hex(content)}, {"size", content.size()}};
      }
      siblings.push_back(entry);
    }
    return nlohmann::json{{"id", id}, {"sha", commit}, {"siblings", siblings}}.dump();
  }
  void publish(test::LoopbackServer& server, const std::string& revision = "main") const {
    server.serve(api_path(revision), listing_json());
    for (const auto& [name, content] : files) server.serve(file_path(name), content);
  }
};

// Deterministic bytes, large enough that a dropped connection leaves a real partial file.
std::string payload(size_t size, char seed) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(seed + i * 31 + i / 7);
  return bytes;
}

std::string read_text(const fs::path& path) {
  const std::vector<uint8_t> bytes = test::read_file_bytes(path);
  return std::string(bytes.begin(), bytes.end());
}

std::string error_of(const auto& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class HubDownload : public ::testing::Test {
 protected:
  void SetUp() override {
    // A proxy from the environment must not intercept loopback traffic.
    ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
    ::setenv("no_proxy", "127.0.0.1,localhost", 1);
    options.cache_dir = cache.path();
    options.endpoint = server.url();
    options.offline = false;
    options.token = "";
    options.progress = false;
    model.id = "org/tiny";
    model.files = {{"config.json", R"({"hidden_size": 8})"},
                   {"tokenizer.json", R"({"model": {}})"},
                   {"README.md", "# tiny"},
                   {"model.safetensors", payload(300'000, 'a')},
                   {"pytorch_model.bin", payload(1000, 'p')}};
    model.lfs = {"model.safetensors", "pytorch_model.bin"};
  }

  fs::path snapshot() const { return cache.path() / "models--org--tiny" / "snapshots" / kCommit; }

  test::LoopbackServer server;
  test::TempDir cache;
  HubOptions options;
  FakeRepo model;
};

TEST_F(HubDownload, DownloadsModelFilesIntoTheDocumentedLayout) {
  model.publish(server);
  const fs::path dir = resolve_model("org/tiny", options);
  EXPECT_EQ(dir, snapshot());
  EXPECT_EQ(read_text(dir / "config.json"), model.files["config.json"]);
  EXPECT_EQ(read_text(dir / "tokenizer.json"), model.files["tokenizer.json"]);
  EXPECT_EQ(read_text(dir / "model.safetensors"), model.files["model.safetensors"]);
  // Safetensors win over pickles; the README is not needed.
  EXPECT_FALSE(fs::exists(dir / "pytorch_model.bin"));
  EXPECT_FALSE(fs::exists(dir / "README.md"));
  EXPECT_FALSE(fs::exists(dir / "model.safetensors.incomplete"));
  EXPECT_EQ(read_text(cache.path() / "models--org--tiny" / "refs" / "main"),
            std::string(kCommit) + "\n");
  // The API was asked for blob sizes and hashes.
  bool asked_blobs = false;
  for (const auto& request : server.requests()) {
    if (request.path == model.api_path()) asked_blobs = request.target.ends_with("?blobs=true");
  }
  EXPECT_TRUE(asked_blobs);
}

TEST_F(HubDownload, DownloadByPatterns) {
  model.publish(server);
  const fs::path dir =
      download(parse_repo_spec("org/tiny"), {"*.md", "pytorch_model.bin"}, options);
  EXPECT_EQ(read_text(dir / "README.md"), "# tiny");
  EXPECT_EQ(read_text(dir / "pytorch_model.bin"), model.files["pytorch_model.bin"]);
  EXPECT_FALSE(fs::exists(dir / "model.safetensors"));
  const std::string error =
      error_of([&] { download(parse_repo_spec("org/tiny"), {"*.onnx"}, options); });
  EXPECT_NE(error.find("*.onnx"), std::string::npos) << error;
}

TEST_F(HubDownload, CacheHitSendsNoFileRequest) {
  model.publish(server);
  resolve_model("org/tiny", options);
  server.clear_requests();
  const fs::path again = resolve_model("org/tiny", options);
  EXPECT_EQ(again, snapshot());
  // Only the (small) listing is asked again, to learn whether main moved.
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests()[0].path, model.api_path());
}

TEST_F(HubDownload, ResumesAfterADroppedConnection) {
  model.publish(server);
  const std::string weights = model.file_path("model.safetensors");
  server.drop_once(weights, 120'000);
  const fs::path dir = resolve_model("org/tiny", options);
  EXPECT_EQ(read_text(dir / "model.safetensors"), model.files["model.safetensors"]);
  std::vector<std::string> ranges;
  for (const auto& request : server.requests()) {
    if (request.path == weights) ranges.push_back(request.header("range"));
  }
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0], "");
  EXPECT_EQ(ranges[1], "bytes=120000-");
}

TEST_F(HubDownload, ResumesAPartialFileLeftByAnEarlierRun) {
  model.publish(server);
  const std::string& content = model.files["model.safetensors"];
  fs::create_directories(snapshot());
  std::ofstream(snapshot() / "model.safetensors.incomplete", std::ios::binary)
      << content.substr(0, 1000);
  resolve_model("org/tiny", options);
  EXPECT_EQ(read_text(snapshot() / "model.safetensors"), content);
  const auto requests = server.requests();
  const auto it = std::find_if(requests.begin(), requests.end(), [&](const auto& r) {
    return r.path == model.file_path("model.safetensors");
  });
  ASSERT_NE(it, requests.end());
  EXPECT_EQ(it->header("range"), "bytes=1000-");
}

TEST_F(HubDownload, ServerIgnoringRangeRestartsTheFile) {
  model.publish(server);
  const std::string& content = model.files["model.safetensors"];
  server.serve(model.file_path("model.safetensors"), {200, content, {}, /*honour_range=*/false});
  fs::create_directories(snapshot());
  std::ofstream(snapshot() / "model.safetensors.incomplete", std::ios::binary) << "garbage!";
  resolve_model("org/tiny", options);
  EXPECT_EQ(read_text(snapshot() / "model.safetensors"), content);
}

TEST_F(HubDownload, HashMismatchDeletesTheDownloadAndSaysSo) {
  model.publish(server);
  // Same size, different bytes: only the SHA-256 can tell.
  server.serve(model.file_path("model.safetensors"), payload(300'000, 'z'));
  const std::string error = error_of([&] { resolve_model("org/tiny", options); });
  EXPECT_NE(error.find("SHA-256 mismatch"), std::string::npos) << error;
  EXPECT_NE(error.find("org/tiny/model.safetensors"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(snapshot() / "model.safetensors"));
  EXPECT_FALSE(fs::exists(snapshot() / "model.safetensors.incomplete"));
  // Nothing complete was recorded for offline use.
  EXPECT_FALSE(fs::exists(cache.path() / "models--org--tiny" / "refs" / "main"));
}

TEST_F(HubDownload, SizeMismatchIsAnError) {
  model.publish(server);
  server.serve(model.file_path("config.json"), std::string("{}"));
  const std::string error = error_of([&] { resolve_model("org/tiny", options); });
  EXPECT_NE(error.find("size mismatch"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(snapshot() / "config.json.incomplete"));
}

TEST_F(HubDownload, QuantSelectsOneGgufFile) {
  FakeRepo gguf;
  gguf.id = "org/tiny-GGUF";
  gguf.files = {{"tiny-Q4_K_M.gguf", payload(5000, 'm')},
                {"tiny-Q4_K_S.gguf", payload(4000, 's')},
                {"tiny-Q8_0.gguf", payload(9000, '8')},
                {"README.md", "gguf"}};
  gguf.lfs = {"tiny-Q4_K_M.gguf", "tiny-Q4_K_S.gguf", "tiny-Q8_0.gguf"};
  gguf.publish(server);
  const fs::path path = resolve_model("org/tiny-GGUF:q4_k_m", options);
  EXPECT_EQ(path.filename(), "tiny-Q4_K_M.gguf");
  EXPECT_EQ(read_text(path), gguf.files["tiny-Q4_K_M.gguf"]);
  EXPECT_EQ(server.count(gguf.file_path("tiny-Q8_0.gguf")), 0u);
  EXPECT_EQ(server.count(gguf.file_path("tiny-Q4_K_S.gguf")), 0u);

  const std::string ambiguous = error_of([&] { resolve_model("org/tiny-GGUF:Q4_K", options); });
  EXPECT_NE(ambiguous.find("tiny-Q4_K_M.gguf"), std::string::npos) << ambiguous;
  EXPECT_NE(ambiguous.find("tiny-Q4_K_S.gguf"), std::string::npos) << ambiguous;
  const std::string missing = error_of([&] { resolve_model("org/tiny-GGUF:Q2_K", options); });
  EXPECT_NE(missing.find("Q2_K"), std::string::npos) << missing;
  EXPECT_NE(missing.find("tiny-Q8_0.gguf"), std::string::npos) << missing;
  // Without a tag, several GGUF models need one.
  const std::string untagged = error_of([&] { resolve_model("org/tiny-GGUF", options); });
  EXPECT_NE(untagged.find(":QUANT"), std::string::npos) << untagged;
}

TEST_F(HubDownload, ShardedSafetensorsFollowTheIndex) {
  FakeRepo sharded;
  sharded.id = "org/sharded";
  sharded.files = {{"config.json", "{}"},
                   {"model.safetensors.index.json",
                    R"({"weight_map": {"a": "model-00001-of-00002.safetensors",
                                       "b": "model-00002-of-00002.safetensors"}})"},
                   {"model-00001-of-00002.safetensors", payload(700, '1')},
                   {"model-00002-of-00002.safetensors", payload(800, '2')},
                   {"model-00003-of-00002.safetensors.old", "stale"}};
  sharded.publish(server);
  const fs::path dir = resolve_model("org/sharded", options);
  EXPECT_TRUE(fs::exists(dir / "model.safetensors.index.json"));
  EXPECT_EQ(read_text(dir / "model-00002-of-00002.safetensors"), payload(800, '2'));
  EXPECT_FALSE(fs::exists(dir / "model-00003-of-00002.safetensors.old"));
}

TEST_F(HubDownload, OfflineUsesOnlyTheCache) {
  model.publish(server);
  resolve_model("org/tiny", options);
  server.clear_requests();
  options.offline = true;
  EXPECT_EQ(resolve_model("org/tiny", options), snapshot());
  EXPECT_EQ(download(parse_repo_spec("org/tiny"), {"config.json"}, options), snapshot());
  EXPECT_TRUE(server.requests().empty());

  // A file that was never downloaded, and a repo that never was.
  const std::string file_miss =
      error_of([&] { download(parse_repo_spec("org/tiny"), {"README.md"}, options); });
  EXPECT_NE(file_miss.find("not cached"), std::string::npos) << file_miss;
  const std::string repo_miss = error_of([&] { resolve_model("org/other:Q4_0", options); });
  EXPECT_NE(repo_miss.find("not cached"), std::string::npos) << repo_miss;
  EXPECT_NE(repo_miss.find("org/other"), std::string::npos) << repo_miss;
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(HubDownload, UnreachableHubFallsBackToTheCache) {
  model.publish(server);
  resolve_model("org/tiny", options);
  options.endpoint = "http://127.0.0.1:1";  // nothing listens on port 1
  EXPECT_EQ(resolve_model("org/tiny", options), snapshot());
  const std::string error = error_of([&] { resolve_model("org/never", options); });
  EXPECT_NE(error.find("cannot reach"), std::string::npos) << error;
}

TEST_F(HubDownload, TokenGoesOnlyToTheHubHost) {
  model.publish(server);
  // The Hub redirects LFS files to a CDN: here the same server under another host name.
  const std::string weights = model.file_path("model.safetensors");
  server.redirect(weights, server.url("localhost") + "/cdn/model.safetensors");
  server.serve("/cdn/model.safetensors", model.files["model.safetensors"]);
  options.token = "hf_secret";
  const fs::path dir = resolve_model("org/tiny", options);
  EXPECT_EQ(read_text(dir / "model.safetensors"), model.files["model.safetensors"]);

  int hub_requests = 0, cdn_requests = 0;
  for (const auto& request : server.requests()) {
    if (request.path == "/cdn/model.safetensors") {
      ++cdn_requests;
      EXPECT_EQ(request.header("host"), "localhost:" + std::to_string(server.port()));
      EXPECT_EQ(request.header("authorization"), "") << "token leaked to the CDN host";
    } else {
      ++hub_requests;
      EXPECT_EQ(request.header("authorization"), "Bearer hf_secret") << request.target;
    }
  }
  EXPECT_EQ(cdn_requests, 1);
  EXPECT_GE(hub_requests, 2);  // listing and the redirecting resolve request at least
}

TEST_F(HubDownload, MissingRepoIsAClearError) {
  const std::string error = error_of([&] { resolve_model("org/does-not-exist", options); });
  EXPECT_NE(error.find("org/does-not-exist"), std::string::npos) << error;
  EXPECT_NE(error.find("Repository not found"), std::string::npos) << error;
  EXPECT_NE(error.find("404"), std::string::npos) << error;
}

TEST_F(HubDownload, LocalPathsWin) {
  test::TempDir local;
  fs::create_directories(local / "org" / "tiny");
  EXPECT_EQ(resolve_model((local / "org" / "tiny").string(), options), local / "org" / "tiny");
  EXPECT_TRUE(server.requests().empty());
  const std::string error = error_of([&] { resolve_model("./no/such/file.gguf", options); });
  EXPECT_NE(error.find("no such file"), std::string::npos) << error;
}

TEST_F(HubDownload, RevisionRefIsRecordedAndUsedOffline) {
  model.publish(server, "v1");
  const fs::path dir = resolve_model("org/tiny@v1", options);
  EXPECT_EQ(dir, snapshot());
  EXPECT_EQ(read_text(cache.path() / "models--org--tiny" / "refs" / "v1"),
            std::string(kCommit) + "\n");
  options.offline = true;
  EXPECT_EQ(resolve_model("org/tiny@v1", options), snapshot());
  EXPECT_EQ(resolve_model(std::string("org/tiny@") + kCommit, options), snapshot());
  EXPECT_NE(error_of([&] { resolve_model("org/tiny", options); }).find("not cached"),
            std::string::npos);
}

}  // namespace
}  // namespace oxi::hub
