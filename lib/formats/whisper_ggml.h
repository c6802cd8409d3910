// whisper.cpp's legacy model files (ggml-tiny.bin, ggml-base.en.bin, ...): a memory-mapped,
// validating reader.
//
// Layout (little-endian, no padding anywhere):
//   u32 magic 0x67676d6c ("ggml")
//   i32 hparams: n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer, n_text_ctx,
//       n_text_state, n_text_head, n_text_layer, n_mels, ftype
//   i32 n_mel, i32 n_fft, then n_mel * n_fft f32: the mel filterbank
//   i32 n_tokens, then per token: u32 length, length bytes (the BPE vocabulary without the
//       special tokens, which whisper.cpp derives from n_vocab)
//   tensors until the end of the file: i32 n_dims, i32 name length, i32 ttype,
//       i32 ne[n_dims] (ggml order, innermost first), name bytes, then the data
// ftype and ttype use ggml's type numbers (0 f32, 1 f16, 2 q4_0, 3 q4_1, 6 q5_0, 7 q5_1,
// 8 q8_0, ...); quantized files add 1000 * quantization version to ftype.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/formats/mapped_file.h"
#include "lib/formats/tensor_view.h"

namespace oxi::whisper_ggml {

constexpr uint32_t kMagic = 0x67676d6c;

struct HParams {
  int32_t n_vocab = 0;
  int32_t n_audio_ctx = 0;
  int32_t n_audio_state = 0;
  int32_t n_audio_head = 0;
  int32_t n_audio_layer = 0;
  int32_t n_text_ctx = 0;
  int32_t n_text_state = 0;
  int32_t n_text_head = 0;
  int32_t n_text_layer = 0;
  int32_t n_mels = 0;
  int32_t ftype = 0;  // as stored; see weight_type() and quantization_version()

  // ggml type of the file's weight matrices, and the quantization format version.
  int32_t weight_type() const { return ftype % 1000; }
  int32_t quantization_version() const { return ftype / 1000; }
  // whisper.cpp's test: multilingual models have 51865 (or, with Cantonese, 51866) tokens.
  bool is_multilingual() const { return n_vocab >= 51865; }
};

struct MelFilters {
  int32_t n_mel = 0;
  int32_t n_fft = 0;        // bins per filter (n_fft / 2 + 1 of the STFT, 201 for Whisper)
  std::vector<float> data;  // [n_mel, n_fft] row-major
};

class Reader {
 public:
  // Maps and validates the whole file; throws oxi::Error naming the file and the problem.
  explicit Reader(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  const std::shared_ptr<const MappedFile>& file() const { return file_; }
  const HParams& hparams() const { return hparams_; }
  const MelFilters& mel_filters() const { return mel_filters_; }
  // The token byte strings in id order (ids 0 .. size-1).
  const std::vector<std::string>& vocab() const { return vocab_; }

  // Tensors in file order; shapes in PyTorch order (ggml's ne[] reversed).
  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* find_tensor(std::string_view name) const;
  const TensorView& tensor(std::string_view name) const;  // throws when absent

 private:
  std::filesystem::path path_;
  std::shared_ptr<const MappedFile> file_;
  HParams hparams_;
  MelFilters mel_filters_;
  std::vector<std::string> vocab_;
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace oxi::whisper_ggml
