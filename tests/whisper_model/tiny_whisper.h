// A tiny random Whisper model (d 64, 2 + 2 layers, 4 heads, 80 mels, 50 encoder positions =
// 100 frames, a 1867-token vocabulary laid out like Whisper's: 256 byte ranks, 3 merges,
// <|endoftext|>, <|startoftranscript|>, 99 languages, tasks, controls, 1501 timestamps),
// written from the same weights as a Hugging Face directory, an OpenAI .pt and a whisper.cpp
// ggml .bin. Weights are f16-representable, so every format holds exactly the same values.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace oxi::whisper::test {

struct TinyDims {
  int n_mels = 80, n_audio_ctx = 50, n_state = 64, n_head = 4, n_audio_layer = 2;
  int n_text_ctx = 64, n_text_layer = 2;
  int n_ranks = 259;                      // 256 bytes + " t", "he", " the"
  int n_vocab = 259 + 2 + 99 + 6 + 1501;  // 1867
  int n_mlp() const { return 4 * n_state; }
};

struct TinyTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

struct TinyWhisper {
  TinyDims dims;
  std::map<std::string, TinyTensor> tensors;  // OpenAI names
  const std::vector<float>& at(const std::string& name) const { return tensors.at(name).values; }
};

TinyWhisper make_tiny_whisper(uint32_t seed);

// The token bytes of rank i (GPT-2's byte order, then the merges).
std::vector<std::string> tiny_rank_bytes();

// Alignment heads written to the HF directory's generation_config.json.
inline const std::vector<std::pair<int, int>> kHfAlignmentHeads = {{1, 0}, {1, 2}};

void write_hf_dir(const TinyWhisper& m, const std::filesystem::path& dir);
// model.pt plus gpt2.tiktoken beside it (the encoder positional embedding is left out, as some
// exports do, so the loader computes it).
void write_openai_pt(const TinyWhisper& m, const std::filesystem::path& file);
void write_ggml(const TinyWhisper& m, const std::filesystem::path& file);

}  // namespace oxi::whisper::test
