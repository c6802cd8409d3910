#include "lib/llm/model.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include "lib/core/error.h"
#include "lib/formats/gguf.h"
#include "lib/formats/hf_dir.h"
#include "lib/tokenizer/load.h"

namespace oxi::llm {
namespace {

namespace fs = std::filesystem;

bool starts_with_gguf_magic(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && std::string_view(magic, 4) == "GGUF";
}

// tokenizer_config.json's chat_template: a string, or a list of {name, template} (the
// "default" one is used), else a chat_template.jinja file beside it, else the processor's
// chat_template.json ({"chat_template": "..."}: multimodal checkpoints such as Gemma 3 4B
// saved by transformers before chat_template.jinja existed).
std::optional<std::string> hf_chat_template(const hf::Directory& dir) {
  const nlohmann::json& tc = dir.tokenizer_config;
  if (tc.is_object() && tc.contains("chat_template")) {
    const nlohmann::json& t = tc["chat_template"];
    if (t.is_string()) return t.get<std::string>();
    if (t.is_array())
      for (const auto& named : t)
        if (named.is_object() && named.value("name", "") == "default" &&
            named.value("template", nlohmann::json()).is_string())
          return named["template"].get<std::string>();
  }
  const fs::path jinja = dir.dir / "chat_template.jinja";
  if (fs::exists(jinja)) {
    std::ifstream in(jinja, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  const fs::path processor = dir.dir / "chat_template.json";
  if (fs::exists(processor)) {
    std::ifstream in(processor, std::ios::binary);
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("chat_template") && j["chat_template"].is_string())
      return j["chat_template"].get<std::string>();
  }
  return std::nullopt;
}

// generation_config.json's eos_token_id: an int or a list of ints.
std::vector<int32_t> hf_generation_eos(const hf::Directory& dir) {
  std::vector<int32_t> ids;
  if (!dir.generation_config.is_object()) return ids;
  const auto it = dir.generation_config.find("eos_token_id");
  if (it == dir.generation_config.end()) return ids;
  auto add = [&](const nlohmann::json& id) {  // ids outside int32 are no token's
    if (id.is_number_integer() && std::in_range<int32_t>(id.get<int64_t>()))
      ids.push_back(id.get<int32_t>());
  };
  add(*it);
  if (it->is_array())
    for (const auto& id : *it) add(id);
  return ids;
}

}  // namespace

std::shared_ptr<const Model> Model::load(const fs::path& file_or_dir, const LoadOptions& options) {
  if (options.quant && *options.quant != kernels::DType::Q8_0 &&
      *options.quant != kernels::DType::Q4_0)
    throw Error(file_or_dir.string(), "load-time quantization supports q8_0 and q4_0, not " +
                                          std::string(kernels::name(*options.quant)));
  std::shared_ptr<Model> model(new Model());
  model->path_ = file_or_dir;
  if (fs::is_directory(file_or_dir)) {
    model->load_hf(file_or_dir, options);
  } else if (!fs::exists(file_or_dir)) {
    throw Error(file_or_dir.string(), "no such file or directory");
  } else if (starts_with_gguf_magic(file_or_dir)) {
    model->load_gguf(file_or_dir);
  } else if (fs::exists(file_or_dir.parent_path() / "config.json")) {
    model->load_hf(file_or_dir.parent_path(), options);  // a weight file of an HF directory
  } else {
    throw Error(file_or_dir.string(),
                "not a GGUF file, and no config.json beside it for a Hugging Face checkpoint");
  }
  return model;
}

void Model::load_gguf(const fs::path& file) {
  const gguf::Reader reader(file);
  config_ = config_from_gguf(reader);
  weights_ = load_gguf_weights(reader, config_);
  tokenizer_.emplace(tokenizer::from_gguf(reader));
  check_vocab(file.string());
  if (reader.has("tokenizer.chat_template"))
    chat_template_ = reader.get_string("tokenizer.chat_template");
  collect_eos_ids({});
}

void Model::load_hf(const fs::path& dir_path, const LoadOptions& options) {
  const hf::Directory dir = hf::open_directory(dir_path);
  if (dir.config.is_null()) throw Error(dir_path.string(), "no config.json");
  if (dir.weights_format.empty()) throw Error(dir_path.string(), "no weight files");
  config_ = config_from_hf(dir.config, dir_path.string());
  weights_ = load_hf_weights(dir, config_, options.quant);
  if (!dir.tokenizer_json) throw Error(dir_path.string(), "no tokenizer.json");
  tokenizer_.emplace(tokenizer::from_hf_json(*dir.tokenizer_json));
  check_vocab(dir_path.string());
  chat_template_ = hf_chat_template(dir);
  collect_eos_ids(hf_generation_eos(dir));
}

// The embedding may have more rows than the tokenizer has tokens (HF checkpoints pad it to a
// multiple of 64 or 128), never fewer: the tokenizer's last ids would have no embedding.
void Model::check_vocab(const std::string& context) const {
  if (tokenizer_->vocab_size() > static_cast<size_t>(config_.n_vocab))
    throw Error(context, "the tokenizer has " + std::to_string(tokenizer_->vocab_size()) +
                             " tokens but the token embedding only " +
                             std::to_string(config_.n_vocab) + " rows");
}

void Model::collect_eos_ids(const std::vector<int32_t>& extra) {
  std::vector<int32_t> ids;
  if (auto eos = tokenizer_->eos()) ids.push_back(*eos);
  if (auto eot = tokenizer_->eot()) ids.push_back(*eot);
  // As llama.cpp: a code model's fill-in-the-middle padding, repository and file separator
  // tokens end generation too.
  const tokenizer::TokenizerSpec::Fim& fim = tokenizer_->fim();
  for (const std::optional<int32_t>& id : {fim.pad, fim.rep, fim.sep})
    if (id) ids.push_back(*id);
  ids.insert(ids.end(), extra.begin(), extra.end());
  for (int32_t id : ids)
    if (id >= 0 && id < config_.n_vocab &&
        std::find(eos_ids_.begin(), eos_ids_.end(), id) == eos_ids_.end())
      eos_ids_.push_back(id);
}

}  // namespace oxi::llm
