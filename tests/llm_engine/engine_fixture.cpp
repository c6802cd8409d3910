#include "tests/llm_engine/engine_fixture.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "tests/common/test_data.h"
#include "tests/llm/tiny_model.h"

extern char** environ;

namespace oxi::llm::test {

void write_tiny_llama(const std::filesystem::path& file, uint32_t seed) {
  const TinyModel tiny =
      make_tiny_model(tiny_spec("llama", false), kernels::DType::F32, kernels::DType::F32, seed);
  write_gguf(tiny, file);
}

void rewrite_gguf(const std::filesystem::path& from, const std::filesystem::path& to,
                  const std::vector<std::string>& drop,
                  const std::function<void(gguf::Writer&)>& edit) {
  const gguf::Reader reader(from);
  gguf::Writer writer;
  for (const auto& [key, value] : reader.metadata()) {
    if (key == "general.alignment") continue;  // the writer sets its own
    if (std::find(drop.begin(), drop.end(), key) == drop.end()) writer.set(key, value);
  }
  if (edit) edit(writer);
  for (const TensorView& t : reader.tensors())
    writer.add_tensor(t.name, t.dtype, t.shape,
                      std::vector<std::byte>(t.data.begin(), t.data.end()));
  writer.write(to);
}

tokenizer::TokenizerSpec byte_fallback_spec() {
  using tokenizer::TokenType;
  tokenizer::TokenizerSpec spec;
  spec.algorithm = tokenizer::Algorithm::sentencepiece;
  spec.byte_fallback = true;
  spec.add_space_prefix = true;
  spec.escape_spaces = true;
  spec.tokens = {"<unk>", "<s>", "</s>"};
  spec.types = {TokenType::unknown, TokenType::control, TokenType::control};
  for (int b = 0; b < 256; ++b) {
    char text[8];
    std::snprintf(text, sizeof text, "<0x%02X>", b);
    spec.tokens.emplace_back(text);
    spec.types.push_back(TokenType::byte);
  }
  return spec;
}

tokenizer::Tokenizer hand_tokenizer() {
  using tokenizer::TokenType;
  tokenizer::TokenizerSpec spec = byte_fallback_spec();
  const std::vector<std::string> words = {"\xE2\x96\x81Hello",
                                          "\xE2\x96\x81world",
                                          "ST",
                                          "OP",
                                          "STOP",
                                          "aSTOPb",
                                          "!",
                                          "\xE2\x96\x81yes",
                                          "\xE2\x96\x81no",
                                          "\xE2\x96\x81please",
                                          "\xE2\x96\x81maybe"};
  auto add = [&](const std::string& piece) {
    if (std::find(spec.tokens.begin(), spec.tokens.end(), piece) != spec.tokens.end()) return;
    spec.tokens.push_back(piece);
    spec.types.push_back(TokenType::normal);
  };
  for (const std::string& w : words) add(w);  // ids 259..269
  // Every character and every prefix of every word too, so that SentencePiece's bigram merges
  // can build the words from characters.
  for (const std::string& w : words) {
    std::vector<std::string> chars;
    for (size_t at = 0; at < w.size();) {
      const auto lead = static_cast<unsigned char>(w[at]);
      const size_t len = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
      chars.push_back(w.substr(at, len));
      at += len;
    }
    std::string prefix;
    for (const std::string& c : chars) {
      add(c);
      prefix += c;
      add(prefix);
    }
  }
  spec.scores.assign(spec.tokens.size(), 0.0f);
  for (size_t i = 259; i < spec.tokens.size(); ++i)
    spec.scores[i] = static_cast<float>(spec.tokens[i].size());  // longer pieces merge first
  spec.bos = 1;
  spec.eos = 2;
  spec.unk = 0;
  spec.add_bos = true;
  return tokenizer::Tokenizer(std::move(spec));
}

int32_t piece_id(const tokenizer::Tokenizer& tok, const std::string& piece) {
  const auto id = tok.token_id(piece);
  if (!id) throw std::runtime_error("no token '" + piece + "'");
  return *id;
}

std::filesystem::path oxinfer_binary() {
  const char* root = std::getenv("OXINFER_BUILD_ROOT");
  if (root == nullptr) throw std::runtime_error("OXINFER_BUILD_ROOT is not set");
  return std::filesystem::path(root) / "tools" / "oxinfer" / "oxinfer";
}

CommandResult run_oxinfer(const std::vector<std::string>& args, const std::string& stdin_text) {
  const oxi::test::TempDir dir;
  const std::string in_path = (dir / "stdin").string(), out_path = (dir / "stdout").string(),
                    err_path = (dir / "stderr").string();
  std::ofstream(in_path, std::ios::binary) << stdin_text;
  const std::string binary = oxinfer_binary().string();
  std::vector<std::string> all = {binary};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, in_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw std::runtime_error("cannot run " + binary);
  int status = 0;
  waitpid(pid, &status, 0);

  auto slurp = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

}  // namespace oxi::llm::test
