#include "tests/whisper_model/tiny_whisper.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "kernels/formats/fp16.h"
#include "kernels/formats/quant.h"
#include "lib/formats/safetensors.h"
#include "lib/formats/torch_zip.h"
#include "lib/whisper/mel_filterbank.h"
#include "lib/whisper/whisper_vocab.h"
#include "lib/whisper/whisper_weights.h"
#include "tests/common/test_data.h"

namespace oxi::whisper::test {
namespace {

using json = nlohmann::ordered_json;

// GPT-2's bytes_to_unicode: the byte order of the first 256 ranks and each byte's character.
std::vector<std::pair<uint8_t, char32_t>> gpt2_bytes() {
  std::vector<std::pair<uint8_t, char32_t>> out;
  std::vector<bool> printable(256, false);
  for (int b = '!'; b <= '~'; ++b) printable[b] = true;
  for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
  for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
  for (int b = 0; b < 256; ++b)
    if (printable[b]) out.emplace_back(static_cast<uint8_t>(b), static_cast<char32_t>(b));
  int n = 0;
  for (int b = 0; b < 256; ++b)
    if (!printable[b]) out.emplace_back(static_cast<uint8_t>(b), static_cast<char32_t>(256 + n++));
  return out;
}

std::string utf8(char32_t c) {
  std::string s;
  if (c < 0x80)
    s += static_cast<char>(c);
  else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
  return s;
}

constexpr int kBaseRanks = 259;  // 256 bytes + 3 merges; placeholders follow

// Byte-level texts of the ranks (what vocab.json holds).
std::vector<std::string> tiny_rank_texts(int n_ranks) {
  std::vector<std::string> texts;
  for (const auto& [b, c] : gpt2_bytes()) texts.push_back(utf8(c));
  const std::string space = utf8(0x120);  // "Ġ"
  texts.push_back(space + "t");
  texts.push_back("he");
  texts.push_back(space + "the");
  // Placeholders " w<i>": printable ASCII, so the byte-level text is the bytes themselves.
  for (int i = kBaseRanks; i < n_ranks; ++i) texts.push_back(space + "w" + std::to_string(i));
  return texts;
}

float round_f16(float v) {
  return kernels::f16_to_f32(kernels::f32_to_f16(v));
}

std::vector<std::byte> f16_bytes(const std::vector<float>& v) {
  std::vector<std::byte> out(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = kernels::f32_to_f16(v[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

std::vector<std::byte> f32_bytes(const std::vector<float>& v) {
  std::vector<std::byte> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

std::string base64(const std::string& bytes) {
  static constexpr char kChars[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 2]);
    out += kChars[(v >> 18) & 63];
    out += kChars[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kChars[(v >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kChars[v & 63] : '=';
  }
  return out;
}

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::ofstream(file, std::ios::binary) << text;
}

bool is_matrix(const std::string& name) {
  return name.ends_with(".weight") && name.find("ln") == std::string::npos &&
         name.find("conv") == std::string::npos;
}

}  // namespace

std::vector<std::string> tiny_rank_bytes(int n_ranks) {
  if (n_ranks < kBaseRanks) throw std::invalid_argument("tiny_rank_bytes: fewer than 259 ranks");
  std::vector<std::string> bytes;
  for (const auto& [b, c] : gpt2_bytes()) bytes.emplace_back(1, static_cast<char>(b));
  bytes.insert(bytes.end(), {" t", "he", " the"});
  for (int i = kBaseRanks; i < n_ranks; ++i) bytes.push_back(" w" + std::to_string(i));
  return bytes;
}

TinyDims whisper_bench_dims(std::string_view name) {
  TinyDims d;
  if (name == "tiny") {
    d.n_state = 384;
    d.n_head = 6;
    d.n_audio_layer = d.n_text_layer = 4;
  } else if (name == "base") {
    d.n_state = 512;
    d.n_head = 8;
    d.n_audio_layer = d.n_text_layer = 6;
  } else {
    throw std::invalid_argument("unknown Whisper shape '" + std::string(name) +
                                "' (expected tiny or base)");
  }
  d.n_mels = 80;
  d.n_audio_ctx = 1500;  // 3000 frames: a 30 s window
  d.n_text_ctx = 448;
  d.n_ranks = kMultilingualRankCount;                    // 50257
  d.n_vocab = d.n_ranks + 2 + 99 + 6 + kTimestampCount;  // 51865
  return d;
}

TinyWhisper make_tiny_whisper(uint32_t seed, const TinyDims& dims) {
  if (dims.n_ranks < kBaseRanks ||
      dims.n_vocab != dims.n_ranks + 2 + dims.n_languages + 6 + kTimestampCount ||
      dims.n_state % dims.n_head != 0)
    throw std::invalid_argument("make_tiny_whisper: inconsistent dims");
  TinyWhisper m;
  m.dims = dims;
  const TinyDims& d = m.dims;
  const int64_t s = d.n_state, mlp = d.n_mlp();
  uint32_t next_seed = seed;
  const auto add = [&](const std::string& name, std::vector<int64_t> shape, float lo, float hi) {
    size_t n = 1;
    for (int64_t x : shape) n *= static_cast<size_t>(x);
    std::vector<float> v = oxi::test::random_floats(n, next_seed++, lo, hi);
    for (float& x : v) x = round_f16(x);
    m.tensors[name] = {std::move(shape), std::move(v)};
  };
  const auto linear = [&](const std::string& p, int64_t out, int64_t in, bool bias) {
    const float a = 1.7f / std::sqrt(static_cast<float>(in));
    add(p + ".weight", {out, in}, -a, a);
    if (bias) add(p + ".bias", {out}, -0.1f, 0.1f);
  };
  const auto norm = [&](const std::string& p) {
    add(p + ".weight", {s}, 0.9f, 1.1f);
    add(p + ".bias", {s}, -0.1f, 0.1f);
  };
  const auto block = [&](const std::string& p, bool cross) {
    for (const std::string& a : cross ? std::vector<std::string>{"attn", "cross_attn"}
                                      : std::vector<std::string>{"attn"}) {
      norm(p + a + "_ln");
      linear(p + a + ".query", s, s, true);
      linear(p + a + ".key", s, s, false);
      linear(p + a + ".value", s, s, true);
      linear(p + a + ".out", s, s, true);
    }
    norm(p + "mlp_ln");
    linear(p + "mlp.0", mlp, s, true);
    linear(p + "mlp.2", s, mlp, true);
  };
  // The conv ranges were chosen for 80 mels and d 64; other sizes scale them by fan-in.
  const float conv1 = 0.2f * std::sqrt(240.0f / static_cast<float>(3 * d.n_mels));
  const float conv2 = 0.15f * std::sqrt(192.0f / static_cast<float>(3 * d.n_state));
  add("encoder.conv1.weight", {s, d.n_mels, 3}, -conv1, conv1);
  add("encoder.conv1.bias", {s}, -0.1f, 0.1f);
  add("encoder.conv2.weight", {s, s, 3}, -conv2, conv2);
  add("encoder.conv2.bias", {s}, -0.1f, 0.1f);
  m.tensors["encoder.positional_embedding"] = {{d.n_audio_ctx, s},
                                               sinusoids(d.n_audio_ctx, d.n_state)};
  for (int l = 0; l < d.n_audio_layer; ++l)
    block("encoder.blocks." + std::to_string(l) + ".", false);
  norm("encoder.ln_post");
  add("decoder.token_embedding.weight", {d.n_vocab, s}, -0.5f, 0.5f);
  add("decoder.positional_embedding", {d.n_text_ctx, s}, -0.1f, 0.1f);
  for (int l = 0; l < d.n_text_layer; ++l) block("decoder.blocks." + std::to_string(l) + ".", true);
  norm("decoder.ln");
  return m;
}

void write_hf_dir(const TinyWhisper& m, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const TinyDims& d = m.dims;
  safetensors::Writer st;
  for (const auto& [name, t] : m.tensors) {
    const std::string hf = "model." + hf_tensor_name(name);
    if (name == "encoder.positional_embedding")  // sinusoids: not f16-representable
      st.add_tensor(hf, kernels::DType::F32, t.shape, f32_bytes(t.values));
    else
      st.add_tensor(hf, kernels::DType::F16, t.shape, f16_bytes(t.values));
  }
  st.write(dir / "model.safetensors");

  write_text(dir / "config.json", json{{"architectures", {"WhisperForConditionalGeneration"}},
                                       {"model_type", "whisper"},
                                       {"d_model", d.n_state},
                                       {"encoder_layers", d.n_audio_layer},
                                       {"encoder_attention_heads", d.n_head},
                                       {"encoder_ffn_dim", d.n_mlp()},
                                       {"decoder_layers", d.n_text_layer},
                                       {"decoder_attention_heads", d.n_head},
                                       {"decoder_ffn_dim", d.n_mlp()},
                                       {"num_mel_bins", d.n_mels},
                                       {"max_source_positions", d.n_audio_ctx},
                                       {"max_target_positions", d.n_text_ctx},
                                       {"vocab_size", d.n_vocab}}
                                      .dump(2));
  write_text(dir / "preprocessor_config.json", json{{"chunk_length", d.n_samples() / 16000},
                                                    {"feature_size", d.n_mels},
                                                    {"n_samples", d.n_samples()},
                                                    {"nb_max_frames", d.n_frames()},
                                                    {"hop_length", 160},
                                                    {"n_fft", 400}}
                                                   .dump(2));

  // Tokenizer: vocab.json + merges.txt + added_tokens.json, specials in Whisper's layout.
  // (std::map-backed: ordered_json's linear lookup is quadratic on a 50k vocabulary.)
  nlohmann::json vocab = nlohmann::json::object();
  const std::vector<std::string> texts = tiny_rank_texts(d.n_ranks);
  for (size_t i = 0; i < texts.size(); ++i) vocab[texts[i]] = i;
  write_text(dir / "vocab.json", vocab.dump());
  write_text(dir / "merges.txt", "#version: 0.2\nĠ t\nh e\nĠt he\n");
  const WhisperVocab v = standard_whisper_vocab(d.n_ranks, d.n_languages);
  json added = json::object(), lang_to_id = json::object();
  for (int32_t id = v.eot; id < v.n_vocab; ++id) added[v.special_text(id)] = id;
  for (const auto& [code, id] : v.languages) lang_to_id["<|" + code + "|>"] = id;
  write_text(dir / "added_tokens.json", added.dump());

  json heads = json::array();
  for (const auto& [l, h] : kHfAlignmentHeads) heads.push_back({l, h});
  write_text(dir / "generation_config.json",
             json{{"alignment_heads", heads},
                  {"lang_to_id", lang_to_id},
                  {"task_to_id", {{"transcribe", v.transcribe}, {"translate", v.translate}}},
                  {"decoder_start_token_id", v.sot},
                  {"no_timestamps_token_id", v.no_timestamps},
                  {"suppress_tokens", {1, 2, 3}},
                  {"begin_suppress_tokens", {v.eot}},
                  {"max_initial_timestamp_index", 25},
                  {"is_multilingual", d.n_ranks == kMultilingualRankCount}}
                 .dump(2));
}

void write_openai_pt(const TinyWhisper& m, const std::filesystem::path& file) {
  const TinyDims& d = m.dims;
  torch::Writer w;
  for (const auto& [name, t] : m.tensors)
    if (name != "encoder.positional_embedding")
      w.add_tensor(name, kernels::DType::F16, t.shape, f16_bytes(t.values));
  w.nest_under("model_state_dict");
  w.add_int_dict("dims", {{"n_mels", d.n_mels},
                          {"n_vocab", d.n_vocab},
                          {"n_audio_ctx", d.n_audio_ctx},
                          {"n_audio_state", d.n_state},
                          {"n_audio_head", d.n_head},
                          {"n_audio_layer", d.n_audio_layer},
                          {"n_text_ctx", d.n_text_ctx},
                          {"n_text_state", d.n_state},
                          {"n_text_head", d.n_head},
                          {"n_text_layer", d.n_text_layer}});
  w.write(file);
  std::string ranks;
  const std::vector<std::string> bytes = tiny_rank_bytes(d.n_ranks);
  for (size_t i = 0; i < bytes.size(); ++i)
    ranks += base64(bytes[i]) + " " + std::to_string(i) + "\n";
  // The loader looks for multilingual.tiktoken when n_vocab >= 51865 (openai-whisper's rule).
  write_text(file.parent_path() / (d.n_vocab >= 51865 ? "multilingual.tiktoken" : "gpt2.tiktoken"),
             ranks);
}

// whisper.cpp's ftype of a file whose matrices are `quant` (GGML_FTYPE_MOSTLY_*, with its
// quantization version 2 x 1000), or 1: mostly f16.
int32_t ggml_ftype(std::optional<kernels::DType> quant) {
  if (!quant) return 1;
  switch (*quant) {
    case kernels::DType::Q4_0:
      return 2002;
    case kernels::DType::Q4_1:
      return 2003;
    case kernels::DType::Q8_0:
      return 2007;
    case kernels::DType::Q5_0:
      return 2008;
    case kernels::DType::Q5_1:
      return 2009;
    default:
      throw std::invalid_argument("write_ggml: no whisper.cpp ftype for " +
                                  std::string(kernels::name(*quant)));
  }
}

void write_ggml(const TinyWhisper& m, const std::filesystem::path& file,
                std::optional<kernels::DType> quant) {
  const TinyDims& d = m.dims;
  std::vector<uint8_t> out;
  const auto raw = [&](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  };
  const auto i32 = [&](int32_t v) { raw(&v, 4); };
  i32(0x67676d6c);
  for (int32_t v : {d.n_vocab, d.n_audio_ctx, d.n_state, d.n_head, d.n_audio_layer, d.n_text_ctx,
                    d.n_state, d.n_head, d.n_text_layer, d.n_mels, ggml_ftype(quant)})
    i32(v);
  const std::vector<float> filters = mel_filterbank(d.n_mels);
  i32(d.n_mels);
  i32(201);
  raw(filters.data(), filters.size() * 4);
  const std::vector<std::string> tokens = tiny_rank_bytes(d.n_ranks);
  i32(static_cast<int32_t>(tokens.size()));
  for (const std::string& t : tokens) {
    i32(static_cast<int32_t>(t.size()));
    raw(t.data(), t.size());
  }
  for (const auto& [name, t] : m.tensors) {
    // whisper.cpp's converter: conv biases as [n_state, 1]; f16 matrices and conv kernels,
    // f32 vectors and positional embeddings.
    std::vector<int64_t> shape = t.shape;
    if (name.starts_with("encoder.conv") && name.ends_with(".bias")) shape.push_back(1);
    const bool f16 = is_matrix(name) || name.find("conv") != std::string::npos;
    const bool half = f16 && !name.ends_with(".bias");
    const bool quantized = quant && is_matrix(name);
    i32(static_cast<int32_t>(shape.size()));
    i32(static_cast<int32_t>(name.size()));
    i32(quantized ? static_cast<int32_t>(*quant) : half ? 1 : 0);  // ggml type ids
    for (auto it = shape.rbegin(); it != shape.rend(); ++it) i32(static_cast<int32_t>(*it));
    raw(name.data(), name.size());
    if (quantized) {
      const size_t rows = static_cast<size_t>(shape[0]), cols = static_cast<size_t>(shape[1]);
      const size_t row_bytes = kernels::row_bytes(*quant, cols);
      std::vector<uint8_t> q(rows * row_bytes);
      for (size_t r = 0; r < rows; ++r)
        kernels::row_encoder (*quant)(t.values.data() + r * cols, q.data() + r * row_bytes, cols);
      raw(q.data(), q.size());
      continue;
    }
    const std::vector<std::byte> bytes = half ? f16_bytes(t.values) : f32_bytes(t.values);
    raw(bytes.data(), bytes.size());
  }
  oxi::test::write_file_bytes(file, out);
}

}  // namespace oxi::whisper::test
