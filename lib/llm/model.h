// Model: a Llama-family decoder loaded from a GGUF file or a Hugging Face directory, with its
// tokenizer and chat template. Immutable after load, so one Model serves many Sessions on
// many threads.
//
//   auto model = oxi::llm::Model::load("tinyllama.Q4_0.gguf");
//   auto backend = oxi::backends::make_cpu_backend();
//   oxi::llm::Session session(model, *backend, 0);
//   auto logits = session.eval(model->tokenizer().encode("Hello", model->add_bos()));
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/formats/dtype.h"
#include "lib/llm/model_config.h"
#include "lib/llm/weights.h"
#include "lib/tokenizer/tokenizer.h"

namespace oxi::llm {

using tokenizer::Tokenizer;

struct LoadOptions {
  // Q8_0 or Q4_0: quantize the f32/f16/bf16 matrices of an HF checkpoint at load (--quant).
  // GGUF files keep their own types.
  std::optional<kernels::DType> quant;
};

class Model {
 public:
  // A .gguf file, a Hugging Face directory (config.json + safetensors or pytorch_model.bin +
  // tokenizer.json), or a weight file inside one. Throws oxi::Error naming the path.
  static std::shared_ptr<const Model> load(const std::filesystem::path& file_or_dir,
                                           const LoadOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const std::filesystem::path& path() const { return path_; }

  // GGUF tokenizer.chat_template, or tokenizer_config.json's chat_template (or
  // chat_template.jinja) of an HF directory.
  std::optional<std::string> chat_template() const { return chat_template_; }
  bool add_bos() const { return tokenizer_->add_bos(); }
  int32_t bos_id() const { return tokenizer_->bos().value_or(-1); }
  // Tokens that end generation: eos, eot, the fill-in-the-middle padding / repository / file
  // separator tokens, and generation_config.json's eos_token_id list.
  std::vector<int32_t> eos_ids() const { return eos_ids_; }

 private:
  Model() = default;
  void load_gguf(const std::filesystem::path& file);
  void load_hf(const std::filesystem::path& dir, const LoadOptions& options);
  void check_vocab(const std::string& context) const;
  void collect_eos_ids(const std::vector<int32_t>& extra);

  std::filesystem::path path_;
  ModelConfig config_;
  ModelWeights weights_;
  std::optional<Tokenizer> tokenizer_;
  std::optional<std::string> chat_template_;
  std::vector<int32_t> eos_ids_;
};

}  // namespace oxi::llm
