#include "lib/whisper/whisper_weights.h"

#include <cmath>

#include "kernels/formats/quant.h"
#include "lib/core/error.h"
#include "lib/formats/weight_builder.h"

namespace oxi::whisper {
namespace {

using formats::WeightBuilder;

AttentionWeights load_attention(WeightBuilder& b, const std::string& p, size_t state,
                                std::optional<kernels::DType> quant) {
  AttentionWeights a;
  a.query = b.matrix(p + "query.weight", state, state, quant);
  a.query_bias = b.floats(p + "query.bias", state);
  a.key = b.matrix(p + "key.weight", state, state, quant);
  a.value = b.matrix(p + "value.weight", state, state, quant);
  a.value_bias = b.floats(p + "value.bias", state);
  a.out = b.matrix(p + "out.weight", state, state, quant);
  a.out_bias = b.floats(p + "out.bias", state);
  return a;
}

BlockWeights load_block(WeightBuilder& b, const std::string& p, size_t state, size_t mlp,
                        bool cross, std::optional<kernels::DType> quant) {
  BlockWeights w;
  w.attn_ln_weight = b.floats(p + "attn_ln.weight", state);
  w.attn_ln_bias = b.floats(p + "attn_ln.bias", state);
  w.attn = load_attention(b, p + "attn.", state, quant);
  if (cross) {
    w.cross_attn_ln_weight = b.floats(p + "cross_attn_ln.weight", state);
    w.cross_attn_ln_bias = b.floats(p + "cross_attn_ln.bias", state);
    w.cross_attn = load_attention(b, p + "cross_attn.", state, quant);
  }
  w.mlp_ln_weight = b.floats(p + "mlp_ln.weight", state);
  w.mlp_ln_bias = b.floats(p + "mlp_ln.bias", state);
  w.fc1 = b.matrix(p + "mlp.0.weight", mlp, state, quant);
  w.fc1_bias = b.floats(p + "mlp.0.bias", mlp);
  w.fc2 = b.matrix(p + "mlp.2.weight", state, mlp, quant);
  w.fc2_bias = b.floats(p + "mlp.2.bias", state);
  return w;
}

}  // namespace

WhisperWeights load_weights(const TensorFinder& find, const WhisperConfig& c,
                            std::optional<kernels::DType> quant, const std::string& context) {
  WhisperWeights w;
  WeightBuilder b(find, w.copies, context);
  const size_t mels = c.n_mels, audio = c.n_audio_state, text = c.n_text_state;

  w.conv1_weight = b.floats("encoder.conv1.weight", audio * mels * 3);
  w.conv1_bias = b.floats("encoder.conv1.bias", audio);
  w.conv2_weight = b.floats("encoder.conv2.weight", audio * audio * 3);
  w.conv2_bias = b.floats("encoder.conv2.bias", audio);
  // openai-whisper registers the encoder's sinusoids as a buffer; some exports leave it out.
  w.encoder_positions = b.has("encoder.positional_embedding")
                            ? b.floats("encoder.positional_embedding", c.n_audio_ctx * audio)
                            : b.keep(sinusoids(c.n_audio_ctx, c.n_audio_state));
  for (int il = 0; il < c.n_audio_layer; ++il)
    w.encoder_blocks.push_back(load_block(b, "encoder.blocks." + std::to_string(il) + ".", audio,
                                          c.n_audio_mlp, false, std::nullopt));
  w.ln_post_weight = b.floats("encoder.ln_post.weight", audio);
  w.ln_post_bias = b.floats("encoder.ln_post.bias", audio);

  w.token_embedding = b.matrix("decoder.token_embedding.weight", c.n_vocab, text, quant);
  w.decoder_positions = b.floats("decoder.positional_embedding", c.n_text_ctx * text);
  for (int il = 0; il < c.n_text_layer; ++il)
    w.decoder_blocks.push_back(load_block(b, "decoder.blocks." + std::to_string(il) + ".", text,
                                          c.n_text_mlp, true, quant));
  w.ln_weight = b.floats("decoder.ln.weight", text);
  w.ln_bias = b.floats("decoder.ln.bias", text);
  return w;
}

void repack_for_cpu(WhisperWeights& w, const MappedFile* mapping) {
  std::vector<backends::WeightMatrix*> multiplied{&w.token_embedding};
  for (std::vector<BlockWeights>* blocks : {&w.encoder_blocks, &w.decoder_blocks}) {
    for (BlockWeights& b : *blocks) {
      for (AttentionWeights* a : {&b.attn, &b.cross_attn}) {
        for (backends::WeightMatrix* m : {&a->query, &a->key, &a->value, &a->out})
          multiplied.push_back(m);  // the encoder's cross_attn views nothing (data null)
      }
      multiplied.push_back(&b.fc1);
      multiplied.push_back(&b.fc2);
    }
  }
  formats::repack_for_cpu(multiplied, nullptr, w.copies, w.repacked, mapping);
}

std::string hf_tensor_name(std::string_view openai_name) {
  // Whole-name renames first, then per-segment renames inside blocks.
  static const std::pair<std::string_view, std::string_view> kTop[] = {
      {"encoder.positional_embedding", "encoder.embed_positions.weight"},
      {"decoder.positional_embedding", "decoder.embed_positions.weight"},
      {"decoder.token_embedding.weight", "decoder.embed_tokens.weight"},
      {"encoder.ln_post.", "encoder.layer_norm."},
      {"decoder.ln.", "decoder.layer_norm."},
  };
  for (const auto& [from, to] : kTop)
    if (openai_name.starts_with(from))
      return std::string(to) + std::string(openai_name.substr(from.size()));
  static const std::pair<std::string_view, std::string_view> kSegments[] = {
      {".blocks.", ".layers."},
      {".cross_attn_ln.", ".encoder_attn_layer_norm."},
      {".attn_ln.", ".self_attn_layer_norm."},
      {".mlp_ln.", ".final_layer_norm."},
      {".cross_attn.", ".encoder_attn."},
      {".attn.", ".self_attn."},
      {".query.", ".q_proj."},
      {".key.", ".k_proj."},
      {".value.", ".v_proj."},
      {".out.", ".out_proj."},
      {".mlp.0.", ".fc1."},
      {".mlp.2.", ".fc2."},
  };
  std::string name(openai_name);
  for (const auto& [from, to] : kSegments)
    if (const size_t at = name.find(from); at != std::string::npos)
      name.replace(at, from.size(), to);
  return name;
}

std::vector<float> sinusoids(int length, int channels) {
  const int half = channels / 2;
  const double increment = std::log(10000.0) / (half - 1);
  std::vector<float> table(static_cast<size_t>(length) * static_cast<size_t>(channels));
  for (int t = 0; t < length; ++t)
    for (int i = 0; i < half; ++i) {
      // torch computes inv_timescales and the product in float32.
      const float inv = static_cast<float>(std::exp(-increment * i));
      const float scaled = static_cast<float>(t) * inv;
      float* row = table.data() + static_cast<size_t>(t) * channels;
      row[i] = static_cast<float>(std::sin(static_cast<double>(scaled)));
      row[half + i] = static_cast<float>(std::cos(static_cast<double>(scaled)));
    }
  return table;
}

}  // namespace oxi::whisper
