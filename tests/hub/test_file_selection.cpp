// Choosing files from a repo listing: quant tags, model files, globs, weight indexes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/core/error.h"
#include "lib/hub/file_selection.h"

namespace oxi::hub {
namespace {

std::vector<RepoFile> listing(const std::vector<std::string>& paths) {
  std::vector<RepoFile> files;
  for (const std::string& path : paths) files.push_back({path, 1, ""});
  return files;
}

std::string error_of(const auto& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(FileSelection, QuantPicksOneFileCaseInsensitively) {
  const auto files = listing({"README.md", "model-Q4_K_M.gguf", "model-Q8_0.gguf",
                              "model-IQ4_XS.gguf", "mmproj-model-f16.gguf", "model-F16.gguf"});
  EXPECT_EQ(select_quant_gguf(files, "q4_k_m", "org/m").primary, "model-Q4_K_M.gguf");
  EXPECT_EQ(select_quant_gguf(files, "Q8_0", "org/m").files,
            std::vector<std::string>{"model-Q8_0.gguf"});
  // The projector is skipped when a model file matches too.
  EXPECT_EQ(select_quant_gguf(files, "F16", "org/m").primary, "model-F16.gguf");
}

TEST(FileSelection, BoundedMatchBeatsSubstring) {
  const auto files = listing({"m-IQ4_XS.gguf", "m-Q4_XS.gguf"});
  EXPECT_EQ(select_quant_gguf(files, "Q4_XS", "org/m").primary, "m-Q4_XS.gguf");
  // With no bounded match the substring still counts.
  EXPECT_EQ(select_quant_gguf(listing({"m-IQ4_XS.gguf"}), "Q4_XS", "org/m").primary,
            "m-IQ4_XS.gguf");
}

TEST(FileSelection, QuantAmbiguityAndAbsenceListTheGgufFiles) {
  const auto files = listing({"m-Q4_K_M.gguf", "m-Q4_K_S.gguf", "config.json"});
  const std::string several = error_of([&] { select_quant_gguf(files, "Q4_K", "org/m"); });
  EXPECT_NE(several.find("several"), std::string::npos) << several;
  EXPECT_NE(several.find("m-Q4_K_M.gguf"), std::string::npos) << several;
  EXPECT_NE(several.find("m-Q4_K_S.gguf"), std::string::npos) << several;
  const std::string none = error_of([&] { select_quant_gguf(files, "Q2_K", "org/m"); });
  EXPECT_NE(none.find("org/m"), std::string::npos) << none;
  EXPECT_NE(none.find("Q2_K"), std::string::npos) << none;
  EXPECT_NE(none.find("m-Q4_K_S.gguf"), std::string::npos) << none;
}

TEST(FileSelection, SplitGgufIsOneModel) {
  const auto files =
      listing({"q8/m-Q8_0-00002-of-00002.gguf", "q8/m-Q8_0-00001-of-00002.gguf", "m-Q4_0.gguf"});
  const GgufChoice choice = select_quant_gguf(files, "Q8_0", "org/m");
  EXPECT_EQ(choice.primary, "q8/m-Q8_0-00001-of-00002.gguf");
  EXPECT_EQ(choice.files.size(), 2u);
}

TEST(FileSelection, ModelPrefersSafetensors) {
  const auto files =
      listing({"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
               "merges.txt", "vocab.txt", "cl100k.tiktoken", "tokenizer.model", "README.md",
               "model.safetensors", "pytorch_model.bin", "onnx/model.onnx", "onnx/config.json",
               ".gitattributes"});
  const ModelFiles model = select_model_files(files, "org/m");
  EXPECT_EQ(model.weights, std::vector<std::string>{"model.safetensors"});
  EXPECT_TRUE(model.weights_index.empty());
  EXPECT_EQ(model.support,
            (std::vector<std::string>{"config.json", "generation_config.json", "tokenizer.json",
                                      "tokenizer_config.json", "merges.txt", "vocab.txt",
                                      "cl100k.tiktoken", "tokenizer.model"}));
}

TEST(FileSelection, ModelShardsAndPytorchFallback) {
  const auto sharded =
      listing({"config.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors",
               "model-00002-of-00002.safetensors", "pytorch_model.bin"});
  const ModelFiles model = select_model_files(sharded, "org/m");
  EXPECT_EQ(model.weights_index, "model.safetensors.index.json");
  EXPECT_EQ(model.support, std::vector<std::string>{"config.json"});

  const auto pickled = listing({"config.json", "pytorch_model.bin"});
  EXPECT_EQ(select_model_files(pickled, "org/m").weights,
            std::vector<std::string>{"pytorch_model.bin"});
}

TEST(FileSelection, GgufOnlyRepo) {
  const ModelFiles single =
      select_model_files(listing({"README.md", "m-Q4_0.gguf", "mmproj-f16.gguf"}), "org/m");
  EXPECT_EQ(single.gguf_primary, "m-Q4_0.gguf");
  const std::string several = error_of([&] {
    select_model_files(listing({"m-Q4_0.gguf", "m-Q8_0.gguf"}), "org/m");
  });
  EXPECT_NE(several.find(":QUANT"), std::string::npos) << several;
  EXPECT_NE(several.find("m-Q8_0.gguf"), std::string::npos) << several;
  const std::string none = error_of([&] { select_model_files(listing({"README.md"}), "org/m"); });
  EXPECT_NE(none.find("no model weights"), std::string::npos) << none;
}

TEST(FileSelection, ShardsFromIndex) {
  const std::string index = R"({"metadata": {"total_size": 10}, "weight_map": {
      "a.weight": "model-00002-of-00002.safetensors",
      "b.weight": "model-00001-of-00002.safetensors",
      "c.weight": "model-00001-of-00002.safetensors"}})";
  EXPECT_EQ(shards_from_index(index, "idx"),
            (std::vector<std::string>{"model-00001-of-00002.safetensors",
                                      "model-00002-of-00002.safetensors"}));
  EXPECT_THROW(shards_from_index(R"({"weight_map": {"a": "../../etc/passwd"}})", "idx"), Error);
  EXPECT_THROW(shards_from_index("not json", "idx"), Error);
}

TEST(FileSelection, Globs) {
  const auto files = listing({"config.json", "sub/extra.json", "model.safetensors"});
  EXPECT_EQ(files_matching(files, "*.json"),
            (std::vector<std::string>{"config.json", "sub/extra.json"}));
  EXPECT_EQ(files_matching(files, "model.safetensors"),
            std::vector<std::string>{"model.safetensors"});
  EXPECT_TRUE(files_matching(files, "*.bin").empty());
}

TEST(RepoListing, ParsesAndRejectsUnsafePaths) {
  const std::string json = R"({"sha": "0123456789ABCDEF0123456789abcdef01234567", "siblings": [
      {"rfilename": "config.json", "size": 12},
      {"rfilename": "model.safetensors", "size": 99,
       "lfs": {"sha256": "AB12", "size": 1000, "pointerSize": 130}}]})";
  const RepoListing parsed = parse_repo_listing(json, "org/m");
  EXPECT_EQ(parsed.commit, "0123456789abcdef0123456789abcdef01234567");
  ASSERT_EQ(parsed.files.size(), 2u);
  EXPECT_EQ(parsed.files[0].size, 12u);
  EXPECT_TRUE(parsed.files[0].sha256.empty());
  EXPECT_EQ(parsed.files[1].size, 1000u);
  EXPECT_EQ(parsed.files[1].sha256, "ab12");
  EXPECT_THROW(parse_repo_listing(R"({"sha": "0123456789abcdef0123456789abcdef01234567",
      "siblings": [{"rfilename": "../escape"}]})",
                                  "org/m"),
               Error);
  EXPECT_THROW(parse_repo_listing("[]", "org/m"), Error);
  EXPECT_THROW(parse_repo_listing(R"({"sha": "nope", "siblings": []})", "org/m"), Error);
}

}  // namespace
}  // namespace oxi::hub
