#include "lib/whisper/whisper_model.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <utility>

#include "lib/core/error.h"
#include "lib/formats/hf_dir.h"
#include "lib/formats/torch_zip.h"
#include "lib/formats/whisper_ggml.h"

namespace oxi::whisper {
namespace {

namespace fs = std::filesystem;

std::string leading_bytes(const fs::path& file, size_t n) {
  std::ifstream in(file, std::ios::binary);
  std::string bytes(n, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(n));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
}

// gpt2.tiktoken (English-only) or multilingual.tiktoken, from the places LoadOptions names.
fs::path find_tiktoken(const fs::path& model_file, bool multilingual, const LoadOptions& options) {
  const char* name = multilingual ? "multilingual.tiktoken" : "gpt2.tiktoken";
  std::vector<fs::path> dirs;
  if (options.assets_dir) dirs.push_back(*options.assets_dir);
  dirs.push_back(model_file.parent_path());
  if (const char* env = std::getenv("OXINFER_WHISPER_ASSETS")) dirs.emplace_back(env);
  for (const fs::path& dir : dirs)
    if (fs::is_regular_file(dir / name)) return dir / name;
  return {};
}

int json_int(const nlohmann::json& j, const char* key, const std::string& context) {
  if (!j.contains(key) || !j[key].is_number_integer())
    throw Error(context, std::string("config.json has no integer '") + key + "'");
  return hf::json_size(j[key], std::string("config.json '") + key + "'", context);
}

}  // namespace

std::shared_ptr<const WhisperModel> WhisperModel::load(const fs::path& path,
                                                       const LoadOptions& options) {
  std::shared_ptr<WhisperModel> model(new WhisperModel());
  model->path_ = path;
  try {
    model->load_any(path, options);
    model->vocab().validate(path.string());
  } catch (const nlohmann::json::exception& e) {  // an HF file's value of an unexpected type
    throw Error(path.string(), std::string("unexpected value in a JSON file: ") + e.what());
  }
  return model;
}

void WhisperModel::load_any(const fs::path& path, const LoadOptions& options) {
  if (fs::is_directory(path)) {
    load_hf(path, options);
    return;
  }
  if (!fs::is_regular_file(path)) throw Error(path.string(), "no such file or directory");
  const std::string magic = leading_bytes(path, 4);
  const bool beside_config = fs::is_regular_file(path.parent_path() / "config.json");
  if (magic == "lmgg") {  // 0x67676d6c little-endian
    load_ggml(path, options);
  } else if (magic.starts_with("PK") && !beside_config) {
    load_openai(path, options);
  } else if (beside_config) {  // a weight file inside an HF directory
    path_ = path.parent_path();
    load_hf(path.parent_path(), options);
  } else {
    throw Error(path.string(),
                "not a Whisper checkpoint (expected a Hugging Face directory, an "
                "OpenAI .pt or a whisper.cpp ggml .bin)");
  }
}

void WhisperModel::load_hf(const fs::path& dir, const LoadOptions& options) {
  format_ = "hf";
  const std::string context = dir.string();
  auto d = std::make_shared<hf::Directory>(hf::open_directory(dir));
  if (!d->config.is_object()) throw Error(context, "no config.json");
  const nlohmann::json& j = d->config;
  WhisperConfig& c = config_;
  c.n_mels = json_int(j, "num_mel_bins", context);
  c.n_audio_ctx = json_int(j, "max_source_positions", context);
  c.n_audio_state = c.n_text_state = json_int(j, "d_model", context);
  c.n_audio_head = json_int(j, "encoder_attention_heads", context);
  c.n_audio_layer = json_int(j, "encoder_layers", context);
  c.n_audio_mlp = json_int(j, "encoder_ffn_dim", context);
  c.n_text_ctx = json_int(j, "max_target_positions", context);
  c.n_text_head = json_int(j, "decoder_attention_heads", context);
  c.n_text_layer = json_int(j, "decoder_layers", context);
  c.n_text_mlp = json_int(j, "decoder_ffn_dim", context);
  c.n_vocab = json_int(j, "vocab_size", context);
  c.validate_stated_sizes(context);

  // The window: preprocessor_config.json's n_samples (or chunk_length) and nb_max_frames.
  const nlohmann::json& p = d->preprocessor_config;
  c.n_frames = 2 * c.n_audio_ctx;
  c.n_samples = c.n_frames * 160;
  if (p.is_object()) {
    const auto preprocessor_int = [&](const char* key) {
      return hf::json_size(p[key], std::string("preprocessor_config.json '") + key + "'", context);
    };
    if (p.contains("n_samples"))
      c.n_samples = preprocessor_int("n_samples");
    else if (p.contains("chunk_length"))
      c.n_samples = std::min(preprocessor_int("chunk_length"), 3600) * 16000;
    c.n_frames =
        p.contains("nb_max_frames") ? preprocessor_int("nb_max_frames") : c.n_samples / 160;
    if (p.contains("feature_size") && preprocessor_int("feature_size") != c.n_mels)
      throw Error(context, "preprocessor_config.json feature_size " +
                               std::to_string(preprocessor_int("feature_size")) +
                               " differs from num_mel_bins " + std::to_string(c.n_mels));
  }

  const nlohmann::json& g = d->generation_config;
  const bool has_g = g.is_object();
  c.multilingual = has_g && g.contains("is_multilingual") ? g["is_multilingual"].get<bool>()
                                                          : c.n_vocab >= 51865;
  c.alignment_heads = default_alignment_heads(c.n_text_layer, c.n_text_head);
  if (has_g && g.contains("alignment_heads") && g["alignment_heads"].is_array()) {
    c.alignment_heads.clear();
    for (const auto& pair : g["alignment_heads"])
      c.alignment_heads.emplace_back(
          hf::json_size(pair.at(0), "an alignment head's layer", context),
          hf::json_size(pair.at(1), "an alignment head's head", context));
  }
  c.validate(context);

  text_ = hf_text(*d, g, c.n_vocab, c.multilingual);
  text_->set_multilingual(c.multilingual);
  openai_decoding_defaults();
  if (has_g) {
    if (g.contains("suppress_tokens") && g["suppress_tokens"].is_array())
      c.suppress_tokens = g["suppress_tokens"].get<std::vector<int32_t>>();
    if (g.contains("begin_suppress_tokens") && g["begin_suppress_tokens"].is_array())
      c.begin_suppress_tokens = g["begin_suppress_tokens"].get<std::vector<int32_t>>();
    if (g.contains("max_initial_timestamp_index") && g["max_initial_timestamp_index"].is_number())
      c.max_initial_timestamp_index =
          hf::json_size(g["max_initial_timestamp_index"],
                        "generation_config.json 'max_initial_timestamp_index'", context);
  }

  // HF names, with or without WhisperForConditionalGeneration's "model." prefix.
  const TensorFinder find = [&](const std::string& name) -> std::optional<TensorView> {
    const std::string hf = hf_tensor_name(name);
    const formats::TensorEntry* e = d->find_tensor("model." + hf);
    if (!e) e = d->find_tensor(hf);
    if (!e) return std::nullopt;
    return e->view(context);
  };
  weights_ = load_weights(find, c, options.quant, context);
  repack_for_cpu(weights_, nullptr);  // a --quant copy, if any: the checkpoint is float
  weights_.files.push_back(d);
}

void WhisperModel::load_openai(const fs::path& file, const LoadOptions& options) {
  format_ = "openai";
  const std::string context = file.string();
  auto archive = std::make_shared<torch::Archive>(file);
  const pickle::Object* dims = archive->root().get("dims");
  if (!dims) throw Error(context, "no 'dims' in the checkpoint (not an OpenAI Whisper .pt)");
  const auto dim = [&](const char* key) {
    const pickle::Object* v = dims->get(key);
    if (!v || v->kind != pickle::Object::Kind::Int)
      throw Error(context, std::string("dims has no integer '") + key + "'");
    if (!std::in_range<int>(v->integer))
      throw Error(context, std::string("dims '") + key + "' is " + std::to_string(v->integer));
    return static_cast<int>(v->integer);
  };
  WhisperConfig& c = config_;
  c.n_mels = dim("n_mels");
  c.n_audio_ctx = dim("n_audio_ctx");
  c.n_audio_state = dim("n_audio_state");
  c.n_audio_head = dim("n_audio_head");
  c.n_audio_layer = dim("n_audio_layer");
  c.n_vocab = dim("n_vocab");
  c.n_text_ctx = dim("n_text_ctx");
  c.n_text_state = dim("n_text_state");
  c.n_text_head = dim("n_text_head");
  c.n_text_layer = dim("n_text_layer");
  c.validate_stated_sizes(context);
  c.n_audio_mlp = 4 * c.n_audio_state;
  c.n_text_mlp = 4 * c.n_text_state;
  c.n_frames = 2 * c.n_audio_ctx;
  c.n_samples = c.n_frames * 160;
  c.multilingual = c.n_vocab >= 51865;  // openai-whisper's is_multilingual
  c.alignment_heads = default_alignment_heads(c.n_text_layer, c.n_text_head);
  if (const pickle::Object* heads = archive->root().get("alignment_heads")) {
    if (heads->kind == pickle::Object::Kind::String)
      c.alignment_heads =
          decode_alignment_heads(heads->text, c.n_text_layer, c.n_text_head, context);
    else if (heads->kind ==
             pickle::Object::Kind::Tensor) {  // a bool mask (n_text_layer, n_text_head)
      const formats::TensorEntry e = archive->entry_of(*heads, "alignment_heads");
      const size_t n_heads = static_cast<size_t>(c.n_text_layer) * c.n_text_head;
      if (e.data.size() != n_heads)
        throw Error(context, "alignment_heads mask has " + std::to_string(e.data.size()) +
                                 " bytes, expected " + std::to_string(n_heads));
      c.alignment_heads.clear();
      for (int l = 0; l < c.n_text_layer; ++l)
        for (int h = 0; h < c.n_text_head; ++h)
          if (e.data[static_cast<size_t>(l) * c.n_text_head + h] != std::byte{0})
            c.alignment_heads.emplace_back(l, h);
    }
  }
  c.validate(context);

  const fs::path ranks = find_tiktoken(file, c.multilingual, options);
  if (ranks.empty())
    throw Error(context, std::string("no ") + (c.multilingual ? "multilingual" : "gpt2") +
                             ".tiktoken beside the file, in LoadOptions::assets_dir or in "
                             "$OXINFER_WHISPER_ASSETS (the .pt carries no tokenizer)");
  text_ = tiktoken_text(ranks, c.n_vocab);
  text_->set_multilingual(c.multilingual);
  openai_decoding_defaults();

  const bool nested = archive->root().get("model_state_dict") != nullptr;
  const TensorFinder find = [&](const std::string& name) -> std::optional<TensorView> {
    const formats::TensorEntry* e =
        archive->find_tensor(nested ? "model_state_dict." + name : name);
    if (!e) return std::nullopt;
    return e->view(context);
  };
  weights_ = load_weights(find, c, options.quant, context);
  repack_for_cpu(weights_, nullptr);  // a --quant copy, if any: the checkpoint is float
  weights_.files.push_back(archive);
}

void WhisperModel::load_ggml(const fs::path& file, const LoadOptions& options) {
  format_ = "ggml";
  const std::string context = file.string();
  auto reader = std::make_shared<whisper_ggml::Reader>(file);
  const whisper_ggml::HParams& h = reader->hparams();
  WhisperConfig& c = config_;
  c.n_mels = h.n_mels;
  c.n_audio_ctx = h.n_audio_ctx;
  c.n_audio_state = h.n_audio_state;
  c.n_audio_head = h.n_audio_head;
  c.n_audio_layer = h.n_audio_layer;
  c.n_text_ctx = h.n_text_ctx;
  c.n_text_state = h.n_text_state;
  c.n_text_head = h.n_text_head;
  c.n_text_layer = h.n_text_layer;
  c.n_vocab = h.n_vocab;
  c.validate_stated_sizes(context);
  c.n_audio_mlp = 4 * c.n_audio_state;
  c.n_text_mlp = 4 * c.n_text_state;
  c.n_frames = 2 * c.n_audio_ctx;
  c.n_samples = c.n_frames * 160;
  c.multilingual = h.is_multilingual();
  c.alignment_heads = default_alignment_heads(c.n_text_layer, c.n_text_head);
  c.validate(context);
  mel_filters_ = reader->mel_filters().data;

  const fs::path ranks = find_tiktoken(file, c.multilingual, options);
  text_ = ranks.empty() ? ggml_vocab_text(reader->vocab(), c.n_vocab, context)
                        : tiktoken_text(ranks, c.n_vocab);
  text_->set_multilingual(c.multilingual);
  openai_decoding_defaults();

  const TensorFinder find = [&](const std::string& name) -> std::optional<TensorView> {
    const TensorView* t = reader->find_tensor(name);
    return t ? std::optional<TensorView>(*t) : std::nullopt;
  };
  weights_ = load_weights(find, c, options.quant, context);
  repack_for_cpu(weights_, reader->file().get());  // whisper.cpp's q5_1 / q5_0 / q8_0 ... files
  weights_.files.push_back(reader);
}

// openai-whisper's DecodingTask defaults: suppress the non-speech symbols and the task /
// control tokens; at the first step also " " and <|endoftext|>.
void WhisperModel::openai_decoding_defaults() {
  const WhisperVocab& v = text_->vocab();
  std::vector<int32_t> suppress = non_speech_tokens(*text_);
  for (int32_t id : {v.transcribe, v.translate, v.sot, v.sot_prev, v.sot_lm, v.no_speech})
    if (id >= 0) suppress.push_back(id);
  std::sort(suppress.begin(), suppress.end());
  suppress.erase(std::unique(suppress.begin(), suppress.end()), suppress.end());
  config_.suppress_tokens = std::move(suppress);
  config_.begin_suppress_tokens.clear();
  if (const std::vector<int32_t> space = text_->encode(" "); !space.empty())
    config_.begin_suppress_tokens.push_back(space[0]);
  config_.begin_suppress_tokens.push_back(v.eot);
  config_.max_initial_timestamp_index = 50;
}

}  // namespace oxi::whisper
