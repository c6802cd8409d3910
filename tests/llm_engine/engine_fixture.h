// Shared by the llm_engine tests: tiny random llama GGUF models (tests/llm's writer) with
// metadata changed at will, and a hand-made SentencePiece tokenizer with byte fallback.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lib/formats/gguf.h"
#include "lib/llm/model.h"
#include "lib/tokenizer/tokenizer.h"

namespace oxi::llm::test {

// A tiny random llama (vocab 300: <unk> <s> </s>, 256 byte tokens, "▁w259".."▁w299"; chat
// template "<|role|>content" per message) written to `file`.
void write_tiny_llama(const std::filesystem::path& file, uint32_t seed = 7);

// Copies a GGUF file with its metadata edited: `drop` keys are left out, then `edit` may set
// more on the writer.
void rewrite_gguf(const std::filesystem::path& from, const std::filesystem::path& to,
                  const std::vector<std::string>& drop,
                  const std::function<void(gguf::Writer&)>& edit);

// SentencePiece with byte fallback, its first 259 tokens: <unk> <s> </s>, <0x00>..<0xFF> (id 3 +
// byte); no scores, ids or other tokens yet.
tokenizer::TokenizerSpec byte_fallback_spec();
// SentencePiece with byte fallback: <unk> <s> </s>, <0x00>..<0xFF> (id 3 + byte), then the
// pieces below (ids from 259): "▁Hello" "▁world" "ST" "OP" "STOP" "aSTOPb" "!" "▁yes" "▁no"
// "▁please" "▁maybe".
tokenizer::Tokenizer hand_tokenizer();
inline int32_t byte_id(unsigned char b) {
  return 3 + b;
}
int32_t piece_id(const tokenizer::Tokenizer& tok, const std::string& piece);

// The path of the built oxinfer binary ($OXINFER_BUILD_ROOT/tools/oxinfer/oxinfer).
std::filesystem::path oxinfer_binary();

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};
// Runs the binary with `args` (no shell: arguments are passed as they are).
CommandResult run_oxinfer(const std::vector<std::string>& args, const std::string& stdin_text = "");

}  // namespace oxi::llm::test
