// A tiny random Whisper model (d 64, 2 + 2 layers, 4 heads, 80 mels, 50 encoder positions =
// 100 frames, a 1867-token vocabulary laid out like Whisper's: 256 byte ranks, 3 merges,
// <|endoftext|>, <|startoftranscript|>, 99 languages, tasks, controls, 1501 timestamps),
// written from the same weights as a Hugging Face directory, an OpenAI .pt and a whisper.cpp
// ggml .bin. Weights are f16-representable, so every format holds exactly the same values.
// The same generator makes random models of a real checkpoint's shape (whisper_bench_dims:
// tiny, base) for benchmarks; their vocabulary is filled to 50257 ranks with placeholders.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/formats/dtype.h"

namespace oxi::whisper::test {

struct TinyDims {
  int n_mels = 80, n_audio_ctx = 50, n_state = 64, n_head = 4, n_audio_layer = 2;
  int n_text_ctx = 64, n_text_layer = 2;
  int n_ranks = 259;                      // 256 bytes + " t", "he", " the"
  int n_languages = 99;                   // 100 from large-v3 on (<|yue|>)
  int n_vocab = 259 + 2 + 99 + 6 + 1501;  // 1867: ranks, eot/sot, languages, 6 more, times
  int n_mlp() const { return 4 * n_state; }
  // The window these positions cover: two mel frames per position, 160 samples per frame.
  int n_frames() const { return 2 * n_audio_ctx; }
  int n_samples() const { return n_frames() * 160; }
};

// A real Whisper model's shape with the multilingual vocabulary layout (50257 ranks, 99
// languages: 51865 tokens), 1500 encoder positions (a 30 s window) and 448 text positions:
// "tiny" (d 384, 4 + 4 layers, 6 heads) or "base" (d 512, 6 + 6 layers, 8 heads). Throws
// std::invalid_argument for other names.
TinyDims whisper_bench_dims(std::string_view name);

struct TinyTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

struct TinyWhisper {
  TinyDims dims;
  std::map<std::string, TinyTensor> tensors;  // OpenAI names
  const std::vector<float>& at(const std::string& name) const { return tensors.at(name).values; }
};

// Random weights: matrices uniform in +-1.7/sqrt(fan_in), the conv kernels scaled by their
// fan-in relative to the default dims, norms near 1, biases in +-0.1.
TinyWhisper make_tiny_whisper(uint32_t seed, const TinyDims& dims = {});

// The token bytes of rank i (GPT-2's byte order, then the merges " t", "he", " the", then
// placeholders " w<i>" up to n_ranks).
std::vector<std::string> tiny_rank_bytes(int n_ranks = TinyDims{}.n_ranks);

// Alignment heads written to the HF directory's generation_config.json.
inline const std::vector<std::pair<int, int>> kHfAlignmentHeads = {{1, 0}, {1, 2}};

void write_hf_dir(const TinyWhisper& m, const std::filesystem::path& dir);
// model.pt plus gpt2.tiktoken beside it (the encoder positional embedding is left out, as some
// exports do, so the loader computes it).
void write_openai_pt(const TinyWhisper& m, const std::filesystem::path& file);
// `quant`: the weight matrices (the projections and the token embedding: what whisper.cpp's
// quantize tool re-encodes) in that block format, as whisper.cpp's q8_0 / q5_0 / q5_1 / q4_0 /
// q4_1 files; else f16.
void write_ggml(const TinyWhisper& m, const std::filesystem::path& file,
                std::optional<kernels::DType> quant = std::nullopt);

}  // namespace oxi::whisper::test
