// Parsing "org/name[:QUANT][@revision]" model arguments.
#include <gtest/gtest.h>

#include "lib/core/error.h"
#include "lib/hub/repo_spec.h"

namespace oxi::hub {
namespace {

TEST(RepoSpec, PlainRepo) {
  const RepoSpec spec = parse_repo_spec("Qwen/Qwen2.5-0.5B-Instruct");
  EXPECT_EQ(spec.repo_id, "Qwen/Qwen2.5-0.5B-Instruct");
  EXPECT_EQ(spec.quant, "");
  EXPECT_EQ(spec.revision, "main");
  EXPECT_EQ(spec.to_string(), "Qwen/Qwen2.5-0.5B-Instruct");
}

TEST(RepoSpec, QuantAndRevision) {
  const RepoSpec spec = parse_repo_spec("org/name-GGUF:Q4_K_M@v1.0");
  EXPECT_EQ(spec.repo_id, "org/name-GGUF");
  EXPECT_EQ(spec.quant, "Q4_K_M");
  EXPECT_EQ(spec.revision, "v1.0");
  EXPECT_EQ(spec.to_string(), "org/name-GGUF:Q4_K_M@v1.0");

  const RepoSpec swapped = parse_repo_spec("org/name-GGUF@refs/pr/3:q8_0");
  EXPECT_EQ(swapped.quant, "q8_0");
  EXPECT_EQ(swapped.revision, "refs/pr/3");
}

TEST(RepoSpec, RejectsWhatIsNotARepoId) {
  for (const char* bad :
       {"", "name", "a/b/c", "/abs/path", "org/", "/name", "org/na me", "org/name:", "org/name@",
        "org/name@../x", "org/..", "org/name:Q4@a:b:c", "org/name@/x", "org/name:Q4:Q5"}) {
    EXPECT_FALSE(try_parse_repo_spec(bad).has_value()) << bad;
    EXPECT_THROW(parse_repo_spec(bad), Error) << bad;
  }
}

TEST(RepoSpec, ErrorNamesTheSpec) {
  try {
    parse_repo_spec("just-a-name");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("just-a-name"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("org/name"), std::string::npos) << e.what();
  }
}

TEST(RepoSpec, CommitHash) {
  EXPECT_TRUE(is_commit_hash("0123456789abcdef0123456789abcdef01234567"));
  EXPECT_FALSE(is_commit_hash("main"));
  EXPECT_FALSE(is_commit_hash("0123456789ABCDEF0123456789abcdef01234567"));
}

}  // namespace
}  // namespace oxi::hub
