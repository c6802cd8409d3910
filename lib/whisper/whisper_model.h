// WhisperModel: a Whisper checkpoint loaded from any of its formats into one layout — config,
// weights, tokenizer and special ids. Immutable after load: one model serves many WhisperStates
// (streams) on many threads.
//
//   auto model = oxi::whisper::WhisperModel::load("whisper-tiny/");   // or tiny.pt, ggml-tiny.bin
//   auto backend = oxi::backends::make_cpu_backend();
//   oxi::whisper::WhisperState state(model, *backend);
//   state.encode(mel.data, mel.n_frames);
//   auto logits = state.decode(prompt, 0);
//
// Formats:
//   - Hugging Face directory: config.json, generation_config.json, preprocessor_config.json,
//     model.safetensors (f32 / f16 / bf16, sharded or not) or pytorch_model.bin, and
//     tokenizer.json or vocab.json + merges.txt + added_tokens.json. Special ids are read from
//     these files (a small custom vocabulary and a short window load the same way).
//   - OpenAI .pt: {'dims': {...}, 'model_state_dict': {...}} (fp16); the tokenizer comes from
//     gpt2.tiktoken (n_vocab 51864) or multilingual.tiktoken found beside the file, in
//     LoadOptions::assets_dir or in $OXINFER_WHISPER_ASSETS.
//   - whisper.cpp ggml-*.bin: hparams, mel filters, vocabulary and tensors (f32, f16, q4_0 ..
//     q8_0, K-quants); the tiktoken files are used instead of its vocabulary when found.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/formats/dtype.h"
#include "lib/whisper/whisper_config.h"
#include "lib/whisper/whisper_text.h"
#include "lib/whisper/whisper_vocab.h"
#include "lib/whisper/whisper_weights.h"

namespace oxi::whisper {

struct LoadOptions {
  // Q8_0 or Q4_0: re-encode the decoder's float matrices and the token embedding at load.
  std::optional<kernels::DType> quant;
  // Where gpt2.tiktoken / multilingual.tiktoken live (for .pt and ggml files); also searched:
  // the model file's directory and $OXINFER_WHISPER_ASSETS.
  std::optional<std::filesystem::path> assets_dir;
};

class WhisperModel {
 public:
  // A directory, a .pt / .pth file, or a ggml .bin. Throws oxi::Error naming the path and the
  // problem (e.g. "ggml-tiny.bin: missing tensor 'encoder.conv1.weight'").
  static std::shared_ptr<const WhisperModel> load(const std::filesystem::path& file_or_dir,
                                                  const LoadOptions& options = {});

  const WhisperConfig& config() const { return config_; }
  const WhisperVocab& vocab() const { return text_->vocab(); }
  const WhisperWeights& weights() const { return weights_; }
  const std::filesystem::path& path() const { return path_; }
  std::string_view format() const { return format_; }  // "hf", "openai", "ggml"
  // The mel filterbank the checkpoint ships ([n_mels, 201], whisper.cpp files); empty otherwise.
  std::span<const float> mel_filters() const { return mel_filters_; }

  // The bytes of the ordinary tokens of `ids` (special tokens left out).
  std::string decode_text(std::span<const int32_t> ids) const { return text_->decode(ids); }
  std::vector<int32_t> encode_text(std::string_view text) const { return text_->encode(text); }
  // An ordinary token's bytes, or a special token's text ("<|en|>"); empty out of range.
  std::string token_text(int32_t id) const { return text_->token_text(id); }

 private:
  WhisperModel() = default;
  void load_any(const std::filesystem::path& file_or_dir, const LoadOptions& options);
  void load_hf(const std::filesystem::path& dir, const LoadOptions& options);
  void load_openai(const std::filesystem::path& file, const LoadOptions& options);
  void load_ggml(const std::filesystem::path& file, const LoadOptions& options);
  // suppress lists and defaults for formats without a generation_config.json.
  void openai_decoding_defaults();

  std::filesystem::path path_;
  std::string format_;
  WhisperConfig config_;
  WhisperWeights weights_;
  std::unique_ptr<WhisperText> text_;
  std::vector<float> mel_filters_;
};

}  // namespace oxi::whisper
