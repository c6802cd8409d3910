// The weights of a Whisper model in one layout whatever the checkpoint format: matrices as
// backends::WeightMatrix views (into the mapped file, or into a quantized copy), vectors and
// convolution kernels as f32 copies. Field comments give shapes and openai-whisper's names,
// which are also whisper.cpp's; HF names are mapped onto them (hf_tensor_name).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "kernels/formats/dtype.h"
#include "lib/formats/tensor_view.h"
#include "lib/formats/weight_builder.h"
#include "lib/formats/weight_repack.h"
#include "lib/whisper/whisper_config.h"

namespace oxi::whisper {

struct AttentionWeights {        // <block>.attn / <block>.cross_attn
  backends::WeightMatrix query;  // (state, state)  query.weight
  backends::WeightMatrix key;    // (state, state)  key.weight (Whisper has no key bias)
  backends::WeightMatrix value;  // (state, state)  value.weight
  backends::WeightMatrix out;    // (state, state)  out.weight
  std::span<const float> query_bias, value_bias, out_bias;  // (state)
};

struct BlockWeights {  // encoder.blocks.N / decoder.blocks.N (ResidualAttentionBlock)
  std::span<const float> attn_ln_weight, attn_ln_bias;  // (state)  attn_ln
  AttentionWeights attn;
  std::span<const float> cross_attn_ln_weight, cross_attn_ln_bias;  // decoder only
  AttentionWeights cross_attn;                                      // decoder only
  std::span<const float> mlp_ln_weight, mlp_ln_bias;                // (state)  mlp_ln
  backends::WeightMatrix fc1;                                       // (mlp, state)  mlp.0
  std::span<const float> fc1_bias;                                  // (mlp)
  backends::WeightMatrix fc2;                                       // (state, mlp)  mlp.2
  std::span<const float> fc2_bias;                                  // (state)
};

struct WhisperWeights {
  // AudioEncoder
  std::span<const float> conv1_weight;  // (audio_state, n_mels, 3)  encoder.conv1
  std::span<const float> conv1_bias;    // (audio_state)
  std::span<const float> conv2_weight;  // (audio_state, audio_state, 3)  encoder.conv2, stride 2
  std::span<const float> conv2_bias;    // (audio_state)
  std::span<const float> encoder_positions;  // (n_audio_ctx, audio_state)  positional_embedding
  std::vector<BlockWeights> encoder_blocks;
  std::span<const float> ln_post_weight, ln_post_bias;  // (audio_state)  encoder.ln_post
  // TextDecoder
  backends::WeightMatrix token_embedding;    // (n_vocab, text_state)  also the output projection
  std::span<const float> decoder_positions;  // (n_text_ctx, text_state)  positional_embedding
  std::vector<BlockWeights> decoder_blocks;
  std::span<const float> ln_weight, ln_bias;  // (text_state)  decoder.ln

  // What the views point into: mapped files, converted copies and repacked matrices.
  std::vector<std::shared_ptr<const void>> files;
  formats::WeightCopies copies;
  formats::RepackedBytes repacked;
};

// A tensor by its OpenAI name, or nullopt when the checkpoint lacks it.
using formats::TensorFinder;

// Builds the weights of `config` from a checkpoint. `quant` (Q8_0 / Q4_0) re-encodes the
// decoder's float matrices and the token embedding at load. A missing encoder positional
// embedding is computed (sinusoids, as openai-whisper's buffer). Throws oxi::Error(context,
// "missing tensor 'NAME'") or a shape / dtype problem naming the tensor.
WhisperWeights load_weights(const TensorFinder& find, const WhisperConfig& config,
                            std::optional<kernels::DType> quant, const std::string& context);

// Repacks w's matrices (every projection of both stacks and the token embedding, which is also
// the output projection) into the CPU kernels' preferred layouts (formats::repack_for_cpu);
// `mapping` is the model file the views point into, if any (its pages are let go once copied).
void repack_for_cpu(WhisperWeights& w, const MappedFile* mapping);

// The Hugging Face name (WhisperForConditionalGeneration, without its "model." prefix) of an
// OpenAI tensor name: encoder.blocks.3.attn.query.weight ->
// encoder.layers.3.self_attn.q_proj.weight.
std::string hf_tensor_name(std::string_view openai_name);

// openai-whisper's sinusoids(length, channels): [sin(t * inc^-i) | cos(t * inc^-i)] with
// inc = 10000^(1 / (channels / 2 - 1)), (length, channels) row-major.
std::vector<float> sinusoids(int length, int channels);

using formats::dequantize_matrix_row;

}  // namespace oxi::whisper
