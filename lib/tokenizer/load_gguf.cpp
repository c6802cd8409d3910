// TokenizerSpec from GGUF metadata, with llama.cpp's defaults for keys a file leaves out.
#include <optional>
#include <string>

#include "lib/core/ascii.h"
#include "lib/core/error.h"
#include "lib/tokenizer/load.h"

namespace oxi::tokenizer {

namespace {

std::optional<int32_t> optional_id(const gguf::Reader& r, std::string_view key) {
  if (!r.has(key)) return std::nullopt;
  const int64_t id = r.get_i64(key);
  if (id < 0) return std::nullopt;  // some converters write -1 for "none"
  return static_cast<int32_t>(id);
}

// The strip flags llama.cpp's loader gives special tokens by model, since GGUF has no field for
// them (Hugging Face's files do): Phi-3's (general.name) swallow the whitespace after them, but
// <unk>, <s> and <|endoftext|>; the <mask> of Jina v2 / nomic-bert-moe / jina-bert-v3 the
// whitespace before it.
void set_strip_flags(const gguf::Reader& r, TokenizerSpec& spec) {
  const auto find = [&spec](std::string_view text) -> std::optional<int32_t> {
    for (size_t id = 0; id < spec.tokens.size(); ++id)
      if (spec.tokens[id] == text) return static_cast<int32_t>(id);
    return std::nullopt;
  };
  const std::string name = ascii_lower(r.get_string_or("general.name", ""));
  if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    for (size_t id = 0; id < spec.tokens.size(); ++id) {
      const TokenType t = id < spec.types.size() ? spec.types[id] : TokenType::normal;
      const std::string_view text = spec.tokens[id];
      const bool kept = text == "<unk>" || text == "<s>" || text == "<|endoftext|>";
      if (!kept && (t == TokenType::control || t == TokenType::user_defined ||
                    t == TokenType::unknown || text == "</s>"))
        spec.rstrip_tokens.push_back(static_cast<int32_t>(id));
    }
  }
  const std::string pre = r.get_string_or("tokenizer.ggml.pre", "");
  const std::string arch = r.get_string_or("general.architecture", "");
  if (pre == "jina-v2-de" || pre == "jina-v2-es" || pre == "jina-v2-code" ||
      arch == "nomic-bert-moe" || arch == "jina-bert-v3") {
    if (auto mask = find("<mask>")) spec.lstrip_tokens.push_back(*mask);
  }
}

}  // namespace

TokenizerSpec spec_from_gguf(const gguf::Reader& r) {
  const std::string context = r.path().string();
  const std::string model = r.get_string("tokenizer.ggml.model");
  TokenizerSpec spec;
  spec.tokens = r.get_string_array("tokenizer.ggml.tokens");
  if (r.has("tokenizer.ggml.scores")) spec.scores = r.get_f32_array("tokenizer.ggml.scores");
  if (r.has("tokenizer.ggml.token_type")) {
    const std::vector<int32_t> types = r.get_i32_array("tokenizer.ggml.token_type");
    spec.types.reserve(types.size());
    for (int32_t t : types) {
      spec.types.push_back(t >= 1 && t <= 6 ? static_cast<TokenType>(t) : TokenType::normal);
    }
  }
  spec.bos = optional_id(r, "tokenizer.ggml.bos_token_id");
  spec.eos = optional_id(r, "tokenizer.ggml.eos_token_id");
  spec.eot = optional_id(r, "tokenizer.ggml.eot_token_id");
  spec.unk = optional_id(r, "tokenizer.ggml.unknown_token_id");
  spec.pad = optional_id(r, "tokenizer.ggml.padding_token_id");
  // The older prefix / suffix / middle keys win where both are there (llama.cpp reads them last).
  const auto either = [&](std::string_view key, std::string_view older) {
    const std::optional<int32_t> old = optional_id(r, older);
    return old ? old : optional_id(r, key);
  };
  spec.fim.pre = either("tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id");
  spec.fim.suf = either("tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id");
  spec.fim.mid = either("tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id");
  spec.fim.pad = optional_id(r, "tokenizer.ggml.fim_pad_token_id");
  spec.fim.rep = optional_id(r, "tokenizer.ggml.fim_rep_token_id");
  spec.fim.sep = optional_id(r, "tokenizer.ggml.fim_sep_token_id");

  if (model == "llama") {
    spec.algorithm = Algorithm::sentencepiece;
    spec.escape_spaces = true;
    spec.byte_fallback = true;
    spec.add_space_prefix = r.get_bool_or("tokenizer.ggml.add_space_prefix", true);
    spec.add_bos = true;
    if (!spec.bos) spec.bos = 1;
    if (!spec.eos) spec.eos = 2;
    if (!spec.unk) spec.unk = 0;
  } else if (model == "gpt2") {
    spec.algorithm = Algorithm::bpe;
    spec.byte_level = true;
    const std::string pre = r.get_string_or("tokenizer.ggml.pre", "default");
    const auto kind = pre_tokenizer_from_gguf_name(pre);
    if (!kind) throw Error(context, "unknown pre-tokenizer tokenizer.ggml.pre = '" + pre + "'");
    spec.pre_tokenizer = *kind;
    spec.ignore_merges = gguf_pre_tokenizer_ignores_merges(pre);
    spec.add_bos = gguf_pre_tokenizer_adds_bos(pre);
    for (const std::string& merge : r.get_string_array("tokenizer.ggml.merges")) {
      // "left right"; the left part is never empty, so search for the space from 1.
      const size_t space = merge.find(' ', 1);
      if (space == std::string::npos) {
        throw Error(context, "tokenizer.ggml.merges entry '" + merge + "' has no space");
      }
      spec.merges.emplace_back(merge.substr(0, space), merge.substr(space + 1));
    }
  } else if (model == "bert") {
    spec.algorithm = Algorithm::wordpiece;
    spec.wordpiece_style = WordPieceStyle::phantom_space;
    if (auto cls = optional_id(r, "tokenizer.ggml.cls_token_id")) spec.bos = cls;
    if (auto sep = optional_id(r, "tokenizer.ggml.seperator_token_id")) spec.eos = sep;
    if (!spec.bos) spec.bos = 101;
    if (!spec.eos) spec.eos = 102;
    if (!spec.unk) spec.unk = 100;
    spec.add_bos = true;
    spec.add_eos = true;
  } else {
    throw Error(context,
                "tokenizer model '" + model + "' is not supported (supported: llama, gpt2, bert)");
  }
  set_strip_flags(r, spec);
  spec.add_bos = r.get_bool_or("tokenizer.ggml.add_bos_token", spec.add_bos);
  spec.add_eos = r.get_bool_or("tokenizer.ggml.add_eos_token", spec.add_eos);
  return spec;
}

Tokenizer from_gguf(const gguf::Reader& reader) {
  try {
    return Tokenizer(spec_from_gguf(reader));
  } catch (const Error& e) {
    const std::string message = e.what();
    if (message.starts_with(reader.path().string())) throw;
    throw Error(reader.path().string(), message);
  }
}

}  // namespace oxi::tokenizer
