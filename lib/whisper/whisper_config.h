// WhisperConfig: a Whisper checkpoint's shape and the decoding facts its files carry, in
// openai-whisper's names (ModelDimensions), filled from HF config.json + generation_config.json +
// preprocessor_config.json, from an OpenAI .pt's `dims`, or from a whisper.cpp file's hparams.
//
// HF name -> OpenAI name: d_model -> n_audio_state / n_text_state, encoder_layers ->
// n_audio_layer, decoder_attention_heads -> n_text_head, num_mel_bins -> n_mels,
// max_source_positions -> n_audio_ctx, max_target_positions -> n_text_ctx, vocab_size -> n_vocab.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace oxi::whisper {

struct WhisperConfig {
  int n_mels = 0;
  int n_audio_ctx = 0;    // encoder positions = n_frames / 2
  int n_audio_state = 0;  // encoder width
  int n_audio_head = 0;
  int n_audio_layer = 0;
  int n_audio_mlp = 0;  // encoder MLP width (4 * n_audio_state in OpenAI's models)
  int n_text_ctx = 0;   // decoder positions
  int n_text_state = 0;
  int n_text_head = 0;
  int n_text_layer = 0;
  int n_text_mlp = 0;
  int n_vocab = 0;
  int n_samples = 0;  // the audio window: chunk_length * 16000
  int n_frames = 0;   // mel frames of the window: n_samples / 160

  // (decoder layer, head) pairs whose cross-attention follows the speech (word timestamps).
  std::vector<std::pair<int, int>> alignment_heads;
  // Tokens never sampled, and tokens not sampled at the first step (HF generation_config, or
  // openai-whisper's rule for .pt / ggml: non-speech symbols; " " and <|endoftext|>).
  std::vector<int32_t> suppress_tokens, begin_suppress_tokens;
  int max_initial_timestamp_index = 50;  // 1 s: the first timestamp is at most <|1.00|>
  bool multilingual = false;

  int audio_head_dim() const { return n_audio_state / n_audio_head; }
  int text_head_dim() const { return n_text_state / n_text_head; }

  // Throws oxi::Error(context, ...) unless the ten sizes a file states (n_mels .. n_vocab, not
  // the MLP widths or the window) are in 1 .. 2^20, far above any Whisper. Loaders call it
  // before deriving anything from them (4 * state, the window's 160 * 2 * n_audio_ctx samples,
  // the default alignment heads of every upper layer), so that no product overflows and no
  // list grows without bound.
  void validate_stated_sizes(const std::string& context) const;
  // Throws oxi::Error(context, ...) for sizes that cannot be a Whisper model: the stated sizes
  // as above, the derived ones and how they fit together.
  void validate(const std::string& context) const;
};

// openai-whisper's default alignment heads: every head of the second half of the decoder layers.
std::vector<std::pair<int, int>> default_alignment_heads(int n_text_layer, int n_text_head);

// OpenAI's release format of alignment heads: base85 text of a gzip'd bool array
// (n_text_layer x n_text_head). Throws oxi::Error(context, ...) when malformed.
std::vector<std::pair<int, int>> decode_alignment_heads(const std::string& base85_gzip,
                                                        int n_text_layer, int n_text_head,
                                                        const std::string& context);

}  // namespace oxi::whisper
