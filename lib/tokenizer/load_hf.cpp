// TokenizerSpec from a Hugging Face tokenizer.json (+ tokenizer_config.json), and load().
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/core/error.h"
#include "lib/tokenizer/load.h"

namespace oxi::tokenizer {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";

json read_json(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string(), "cannot open");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw Error(path.string(), std::string("invalid JSON: ") + e.what());
  }
}

// A token id of the file: a non-negative integer below a bound far above any vocabulary (a
// negative or huge id would index outside, or size, the token table).
constexpr size_t kMaxTokenId = size_t{1} << 24;

size_t token_id(const json& v, const std::string& context) {
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0))
    throw Error(context, "token id " + v.dump() + " is not a non-negative integer");
  const uint64_t id = v.get<uint64_t>();
  if (id >= kMaxTokenId) throw Error(context, "token id " + v.dump() + " is out of range");
  return static_cast<size_t>(id);
}

std::string type_of(const json& j) {
  return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>()
                                                                      : std::string();
}

// A tokenizer_config.json token entry: "<s>" or {"content": "<s>", ...}.
std::optional<std::string> config_token(const json& config, const char* key) {
  if (!config.contains(key)) return std::nullopt;
  const json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    return v["content"].get<std::string>();
  }
  return std::nullopt;
}

// The steps of a pre_tokenizer in pre_tokenizer_steps() spelling; sets byte_level / Metaspace
// flags on the way.
void collect_steps(const json& pre, const std::string& context, TokenizerSpec& spec,
                   std::vector<std::string>& steps) {
  const std::string type = type_of(pre);
  if (pre.is_null()) return;
  if (type == "Sequence") {
    for (const json& p : pre.at("pretokenizers")) collect_steps(p, context, spec, steps);
  } else if (type == "ByteLevel") {
    spec.byte_level = true;
    if (pre.value("use_regex", true)) {
      steps.emplace_back(pre_tokenizer_steps(PreTokenizer::gpt2).front());
    }
  } else if (type == "Split" && spec.escape_spaces && pre.at("pattern").is_object() &&
             pre["pattern"].value("String", std::string()) == " " && !pre.value("invert", false)) {
    // Gemma's: Split(" ", MergedWithPrevious) after the Replace(" " -> "▁") normalizer, which
    // has left no space to split at (normalizers run first): nothing to do.
  } else if (type == "Split") {
    const json& pattern = pre.at("pattern");
    if (pattern.contains("Regex"))
      steps.push_back(pattern["Regex"].get<std::string>());
    else
      steps.push_back("<string:" + pattern.value("String", std::string()) + ">");
    if (pre.value("behavior", std::string("Isolated")) != "Isolated" ||
        pre.value("invert", false)) {
      throw Error(context,
                  "pre_tokenizer Split with behavior other than Isolated is not supported");
    }
  } else if (type == "Digits") {
    steps.emplace_back(pre.value("individual_digits", false) ? "<digits>" : "<digit-runs>");
  } else if (type == "Punctuation") {
    steps.emplace_back("<punctuation>");
  } else if (type == "Metaspace") {
    if (pre.value("split", false)) {
      throw Error(context, "pre_tokenizer Metaspace with split = true is not supported");
    }
    spec.escape_spaces = true;
    const std::string scheme = pre.value("prepend_scheme", std::string("always"));
    spec.add_space_prefix = pre.value("add_prefix_space", true) && scheme != "never";
  } else if (type == "BertPreTokenizer" || type == "Whitespace" || type == "WhitespaceSplit") {
    // WordPiece does its own splitting.
  } else {
    throw Error(context, "pre_tokenizer type '" + type + "' is not supported");
  }
}

PreTokenizer match_pre_tokenizer(const std::vector<std::string>& steps,
                                 const std::string& context) {
  if (steps.empty()) return PreTokenizer::none;
  for (PreTokenizer kind :
       {PreTokenizer::gpt2, PreTokenizer::llama3, PreTokenizer::qwen2, PreTokenizer::qwen35,
        PreTokenizer::seed_coder, PreTokenizer::tekken, PreTokenizer::gpt4o,
        PreTokenizer::deepseek_llm, PreTokenizer::deepseek_coder, PreTokenizer::deepseek_v3,
        PreTokenizer::falcon, PreTokenizer::starcoder, PreTokenizer::bloom, PreTokenizer::viking}) {
    const auto known = pre_tokenizer_steps(kind);
    if (known.size() == steps.size() && std::equal(known.begin(), known.end(), steps.begin())) {
      return kind;
    }
  }
  std::string listed;
  for (const std::string& s : steps) listed += (listed.empty() ? "" : ", ") + s;
  throw Error(context, "pre-tokenizer steps [" + listed + "] match no known pre-tokenizer");
}

void apply_normalizer(const json& normalizer, const std::string& context, TokenizerSpec& spec) {
  const std::string type = type_of(normalizer);
  if (normalizer.is_null()) return;
  if (type == "NFC" || type == "NFKC") {
    spec.normalization =
        type == "NFC" ? TokenizerSpec::Normalization::nfc : TokenizerSpec::Normalization::nfkc;
    return;
  }
  if (type == "Sequence") {
    for (const json& n : normalizer.at("normalizers")) apply_normalizer(n, context, spec);
  } else if (type == "Prepend") {
    if (normalizer.value("prepend", std::string()) != kSpaceMarker) {
      throw Error(context, "normalizer Prepend of anything but \"▁\" is not supported");
    }
    spec.add_space_prefix = true;
  } else if (type == "Replace") {
    const json& pattern = normalizer.at("pattern");
    if (pattern.value("String", std::string()) != " " ||
        normalizer.value("content", std::string()) != kSpaceMarker) {
      throw Error(context, "normalizer Replace other than \" \" -> \"▁\" is not supported");
    }
    spec.escape_spaces = true;
  } else if (type == "BertNormalizer") {
    spec.lowercase = normalizer.value("lowercase", true);
    const json& strip = normalizer.contains("strip_accents") ? normalizer["strip_accents"] : json();
    spec.strip_accents = strip.is_boolean() ? strip.get<bool>() : spec.lowercase;
    spec.split_chinese_chars = normalizer.value("handle_chinese_chars", true);
  } else if (type == "Lowercase") {
    spec.lowercase = true;
  } else if (type == "StripAccents" || type == "NFD") {
    spec.strip_accents = true;
  } else {
    throw Error(context, "normalizer type '" + type + "' is not supported");
  }
}

// The special tokens a post-processor puts around a single sequence: TemplateProcessing's
// SpecialToken pieces (before the sequence: BOS, after: EOS), Bert / Roberta's cls and sep.
// A Sequence applies its processors in turn (Llama 3: ByteLevel, then TemplateProcessing);
// ByteLevel adds no tokens.
template <class IdOf>
void apply_post_processor(const json& post, const IdOf& id_of, TokenizerSpec& spec) {
  const std::string type = type_of(post);
  if (type == "Sequence") {
    for (const json& p : post.at("processors")) apply_post_processor(p, id_of, spec);
  } else if (type == "TemplateProcessing") {
    const json& single = post.at("single");
    for (size_t i = 0; i < single.size(); ++i) {
      if (!single[i].contains("SpecialToken")) continue;
      const auto id = id_of(single[i]["SpecialToken"].at("id").template get<std::string>());
      if (i == 0) {
        spec.bos = id;
        spec.add_bos = id.has_value();
      } else {
        spec.eos = id;
        spec.add_eos = id.has_value();
      }
    }
  } else if (type == "BertProcessing" || type == "RobertaProcessing") {
    spec.bos = id_of(post.at("cls").at(0).template get<std::string>());
    spec.eos = id_of(post.at("sep").at(0).template get<std::string>());
    spec.add_bos = spec.bos.has_value();
    spec.add_eos = spec.eos.has_value();
  }
}

}  // namespace

TokenizerSpec spec_from_hf_json(const fs::path& path) {
  const std::string context = path.string();
  const json root = read_json(path);
  const json& model = root.at("model");
  std::string model_type = type_of(model);
  if (model_type.empty()) model_type = model.contains("merges") ? "BPE" : "WordPiece";

  TokenizerSpec spec;
  if (model_type == "BPE") {
    spec.algorithm = Algorithm::bpe;
    spec.byte_fallback = model.value("byte_fallback", false);
    spec.ignore_merges = model.value("ignore_merges", false);
  } else if (model_type == "WordPiece") {
    spec.algorithm = Algorithm::wordpiece;
    spec.wordpiece_style = WordPieceStyle::hashes;
    if (model.value("continuing_subword_prefix", std::string("##")) != "##") {
      throw Error(context, "WordPiece continuing_subword_prefix other than ## is not supported");
    }
    spec.max_chars_per_word = model.value("max_input_chars_per_word", size_t{100});
  } else {
    throw Error(context, "tokenizer model type '" + model_type +
                             "' is not supported (supported: BPE, WordPiece)");
  }

  // The vocabulary, and added tokens on top (they may extend it).
  const json& vocab = model.at("vocab");
  const json empty_array = json::array();
  const json& added = root.contains("added_tokens") ? root["added_tokens"] : empty_array;
  size_t n = 0;
  for (const auto& [text, id] : vocab.items()) n = std::max(n, token_id(id, context) + 1);
  for (const json& t : added) n = std::max(n, token_id(t.at("id"), context) + 1);
  spec.tokens.assign(n, std::string());
  spec.types.assign(n, TokenType::unused);
  for (const auto& [text, id] : vocab.items()) {
    const size_t i = token_id(id, context);
    spec.tokens[i] = text;
    const bool is_byte = text.size() == 6 && text.starts_with("<0x") && text.back() == '>';
    spec.types[i] = is_byte && spec.byte_fallback ? TokenType::byte : TokenType::normal;
  }
  for (const json& t : added) {
    const auto id = static_cast<int32_t>(token_id(t.at("id"), context));
    spec.tokens[id] = t.at("content").get<std::string>();
    spec.types[id] = t.value("special", false) ? TokenType::control : TokenType::user_defined;
    if (t.value("lstrip", false)) spec.lstrip_tokens.push_back(id);
    if (t.value("rstrip", false)) spec.rstrip_tokens.push_back(id);
  }
  auto id_of = [&](const std::string& text) -> std::optional<int32_t> {
    for (size_t i = 0; i < spec.tokens.size(); ++i) {
      if (spec.tokens[i] == text && spec.types[i] != TokenType::unused) {
        return static_cast<int32_t>(i);
      }
    }
    return std::nullopt;
  };

  if (spec.algorithm == Algorithm::bpe && model.contains("merges")) {
    for (const json& m : model["merges"]) {
      if (m.is_array()) {
        spec.merges.emplace_back(m.at(0).get<std::string>(), m.at(1).get<std::string>());
        continue;
      }
      const std::string merge = m.get<std::string>();
      const size_t space = merge.find(' ', 1);
      if (space == std::string::npos) throw Error(context, "merge '" + merge + "' has no space");
      spec.merges.emplace_back(merge.substr(0, space), merge.substr(space + 1));
    }
  }
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    spec.unk = id_of(model["unk_token"].get<std::string>());
    if (spec.unk && spec.types[*spec.unk] == TokenType::normal) {
      spec.types[*spec.unk] = TokenType::unknown;
    }
  }

  if (root.contains("normalizer")) apply_normalizer(root["normalizer"], context, spec);
  std::vector<std::string> steps;
  if (root.contains("pre_tokenizer")) collect_steps(root["pre_tokenizer"], context, spec, steps);
  if (spec.algorithm == Algorithm::bpe) spec.pre_tokenizer = match_pre_tokenizer(steps, context);

  // Special tokens the post-processor adds around a sequence.
  if (root.contains("post_processor")) apply_post_processor(root["post_processor"], id_of, spec);

  const fs::path config_path = path.parent_path() / "tokenizer_config.json";
  if (fs::exists(config_path)) {
    const json config = read_json(config_path);
    auto set_id = [&](const char* key, std::optional<int32_t>& id) {
      if (auto text = config_token(config, key)) {
        if (auto found = id_of(*text)) id = found;
      }
    };
    set_id("bos_token", spec.bos);
    set_id("eos_token", spec.eos);
    set_id("unk_token", spec.unk);
    set_id("pad_token", spec.pad);
    if (config.contains("add_bos_token") && config["add_bos_token"].is_boolean()) {
      spec.add_bos = config["add_bos_token"].get<bool>();
    }
    if (config.contains("add_eos_token") && config["add_eos_token"].is_boolean()) {
      spec.add_eos = config["add_eos_token"].get<bool>();
    }
  }
  return spec;
}

Tokenizer from_hf_json(const fs::path& tokenizer_json) {
  try {
    return Tokenizer(spec_from_hf_json(tokenizer_json));
  } catch (const json::exception& e) {
    throw Error(tokenizer_json.string(),
                std::string("unexpected tokenizer.json layout: ") + e.what());
  }
}

Tokenizer load(const fs::path& path) {
  if (fs::is_directory(path)) {
    const fs::path json_path = path / "tokenizer.json";
    if (!fs::exists(json_path)) throw Error(path.string(), "directory has no tokenizer.json");
    return from_hf_json(json_path);
  }
  if (path.extension() == ".json") return from_hf_json(path);
  return from_gguf(gguf::Reader(path));
}

}  // namespace oxi::tokenizer
