#include "lib/whisper/whisper_text.h"

#include <fstream>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

#include "lib/core/error.h"
#include "lib/formats/hf_dir.h"
#include "lib/tokenizer/load.h"
#include "lib/tokenizer/pretokenize.h"
#include "lib/tokenizer/tokenizer.h"
#include "lib/whisper/tiktoken_tokenizer.h"

namespace oxi::whisper {
namespace {

constexpr int32_t kSpecialsWithoutLanguages = 8 + kTimestampCount;  // eot .. notimestamps

class TiktokenText final : public WhisperText {
 public:
  explicit TiktokenText(TiktokenTokenizer tok) : tok_(std::move(tok)) { vocab_ = tok_.vocab(); }
  std::vector<int32_t> encode(std::string_view text) const override { return tok_.encode(text); }
  std::string decode(std::span<const int32_t> ids) const override {
    return tok_.decode(ids, /*skip_special=*/true);
  }
  std::string token_text(int32_t id) const override { return tok_.token_text(id); }

 private:
  TiktokenTokenizer tok_;
};

// Byte-level BPE by rank over a whisper.cpp vocabulary: the GPT-2 pre-tokenizer, then the
// adjacent pair whose concatenation has the lowest id is merged until none is a token.
class GgmlVocabText final : public WhisperText {
 public:
  GgmlVocabText(std::vector<std::string> tokens, WhisperVocab vocab) : tokens_(std::move(tokens)) {
    vocab_ = std::move(vocab);
    tokens_.resize(std::min<size_t>(tokens_.size(), static_cast<size_t>(vocab_.eot)));
    for (size_t i = 0; i < tokens_.size(); ++i) ranks_.emplace(tokens_[i], static_cast<int32_t>(i));
  }

  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> out;
    for (std::string_view word : tokenizer::pretokenize(tokenizer::PreTokenizer::gpt2, text)) {
      std::vector<std::string> parts;
      for (char c : word) parts.emplace_back(1, c);
      while (parts.size() > 1) {
        int32_t best = -1;
        size_t at = 0;
        for (size_t i = 0; i + 1 < parts.size(); ++i)
          if (auto it = ranks_.find(parts[i] + parts[i + 1]);
              it != ranks_.end() && (best < 0 || it->second < best)) {
            best = it->second;
            at = i;
          }
        if (best < 0) break;
        parts[at] += parts[at + 1];
        parts.erase(parts.begin() + static_cast<ptrdiff_t>(at) + 1);
      }
      for (const std::string& p : parts)
        if (auto it = ranks_.find(p); it != ranks_.end()) out.push_back(it->second);
    }
    return out;
  }
  std::string decode(std::span<const int32_t> ids) const override {
    std::string s;
    for (int32_t id : ids)
      if (id >= 0 && static_cast<size_t>(id) < tokens_.size()) s += tokens_[id];
    return s;
  }
  std::string token_text(int32_t id) const override {
    if (id >= 0 && static_cast<size_t>(id) < tokens_.size()) return tokens_[id];
    return vocab_.special_text(id);
  }

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t> ranks_;
};

class HfText final : public WhisperText {
 public:
  HfText(tokenizer::Tokenizer tok, WhisperVocab vocab) : tok_(std::move(tok)) {
    vocab_ = std::move(vocab);
  }
  std::vector<int32_t> encode(std::string_view text) const override {
    return tok_.encode(text, /*add_bos=*/false, /*parse_special=*/false);
  }
  std::string decode(std::span<const int32_t> ids) const override {
    std::string s;
    for (int32_t id : ids)
      if (!is_special(id)) s += tok_.token_piece(id);
    return s;
  }
  std::string token_text(int32_t id) const override {
    if (id < 0 || static_cast<size_t>(id) >= tok_.vocab_size()) return {};
    return tok_.token_piece(id);
  }

 private:
  bool is_special(int32_t id) const {
    return id < 0 || static_cast<size_t>(id) >= tok_.vocab_size() || tok_.is_control(id) ||
           id == vocab_.eot || vocab_.is_timestamp(id) || vocab_.language_of(id).has_value();
  }
  tokenizer::Tokenizer tok_;
};

// vocab.json + merges.txt + added_tokens.json as a byte-level BPE spec (GPT-2 pre-tokenizer).
tokenizer::TokenizerSpec spec_from_vocab_merges(const hf::Directory& d) {
  tokenizer::TokenizerSpec spec;
  spec.algorithm = tokenizer::Algorithm::bpe;
  spec.byte_level = true;
  spec.pre_tokenizer = tokenizer::PreTokenizer::gpt2;
  std::map<int32_t, std::pair<std::string, bool>> by_id;           // text, control
  const nlohmann::json vocab = hf::read_json_file(*d.vocab_json);  // alive through the loop
  for (const auto& [text, id] : vocab.items()) by_id[id.get<int32_t>()] = {text, false};
  if (d.added_tokens_json) {
    const nlohmann::json added = hf::read_json_file(*d.added_tokens_json);
    for (const auto& [text, id] : added.items()) by_id[id.get<int32_t>()] = {text, true};
  }
  for (const auto& [id, entry] : by_id) {
    if (id != static_cast<int32_t>(spec.tokens.size()))
      throw Error(d.vocab_json->string(),
                  "token ids are not contiguous at id " + std::to_string(id));
    spec.tokens.push_back(entry.first);
    const bool special =
        entry.second || (entry.first.starts_with("<|") && entry.first.ends_with("|>"));
    spec.types.push_back(special ? tokenizer::TokenType::control : tokenizer::TokenType::normal);
  }
  std::ifstream merges(*d.merges_txt);
  for (std::string line; std::getline(merges, line);) {
    if (line.starts_with("#version") || line.empty()) continue;
    const size_t space = line.find(' ');
    if (space == std::string::npos)
      throw Error(d.merges_txt->string(), "malformed merge line '" + line + "'");
    spec.merges.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  return spec;
}

}  // namespace

std::unique_ptr<WhisperText> tiktoken_text(const std::filesystem::path& rank_file,
                                           int32_t n_vocab) {
  TiktokenTokenizer tok(rank_file, n_vocab == 51866 ? 100 : 99);
  if (tok.n_vocab() != n_vocab) {
    // A non-standard size: the language count makes up the difference.
    const int n_languages = n_vocab - tok.n_ranks() - kSpecialsWithoutLanguages;
    if (n_languages < 1 || n_languages > 100)
      throw Error(rank_file.string(), std::to_string(tok.n_ranks()) +
                                          " ranks do not fit a model of " +
                                          std::to_string(n_vocab) + " tokens");
    tok = TiktokenTokenizer(rank_file, n_languages);
  }
  return std::make_unique<TiktokenText>(std::move(tok));
}

std::unique_ptr<WhisperText> ggml_vocab_text(std::vector<std::string> tokens, int32_t n_vocab,
                                             const std::string& context) {
  std::optional<WhisperVocab> vocab = whisper_vocab_for_size(n_vocab);
  if (!vocab) {  // a non-standard model: assume 99 languages, as every model before large-v3
    const int32_t n_ranks = n_vocab - kSpecialsWithoutLanguages - 99;
    if (n_ranks <= 0 || static_cast<size_t>(n_ranks) > tokens.size())
      throw Error(context, "vocabulary of " + std::to_string(tokens.size()) +
                               " tokens does not fit n_vocab " + std::to_string(n_vocab));
    vocab = standard_whisper_vocab(n_ranks, 99);
  }
  return std::make_unique<GgmlVocabText>(std::move(tokens), std::move(*vocab));
}

std::unique_ptr<WhisperText> hf_text(const hf::Directory& d,
                                     const nlohmann::json& generation_config, int32_t n_vocab,
                                     bool multilingual) {
  std::optional<tokenizer::Tokenizer> tok;
  if (d.tokenizer_json)
    tok = tokenizer::from_hf_json(*d.tokenizer_json);
  else if (d.vocab_json && d.merges_txt)
    tok.emplace(spec_from_vocab_merges(d));
  else
    throw Error(d.dir.string(), "no tokenizer.json and no vocab.json + merges.txt");

  const std::string context = d.dir.string();
  const auto id_of = [&](std::string_view text) -> int32_t {
    const auto id = tok->token_id(text);
    return id ? *id : -1;
  };
  const nlohmann::json& g =
      generation_config.is_object() ? generation_config : nlohmann::json::object();
  const auto from_config = [&](const char* key, int32_t fallback) {
    if (!g.contains(key) || !g[key].is_number_integer()) return fallback;
    if (!std::in_range<int32_t>(g[key].get<int64_t>()))  // get<int32_t> would wrap it
      throw Error(context, std::string("generation_config.json '") + key + "' is out of range");
    return g[key].get<int32_t>();
  };

  WhisperVocab v;
  v.n_vocab = n_vocab;
  v.eot = id_of("<|endoftext|>");
  v.sot = from_config("decoder_start_token_id", id_of("<|startoftranscript|>"));
  v.sot_lm = id_of("<|startoflm|>");
  v.sot_prev = id_of("<|startofprev|>");
  v.no_speech = id_of("<|nospeech|>");
  if (v.no_speech < 0) v.no_speech = id_of("<|nocaptions|>");  // older HF exports
  v.no_timestamps = from_config("no_timestamps_token_id", id_of("<|notimestamps|>"));
  v.timestamp_begin = id_of("<|0.00|>");
  if (v.timestamp_begin < 0 && v.no_timestamps >= 0) v.timestamp_begin = v.no_timestamps + 1;
  v.translate = id_of("<|translate|>");
  v.transcribe = id_of("<|transcribe|>");
  if (g.contains("task_to_id") && g["task_to_id"].is_object()) {
    v.translate = g["task_to_id"].value("translate", v.translate);
    v.transcribe = g["task_to_id"].value("transcribe", v.transcribe);
  }
  if (g.contains("lang_to_id") && g["lang_to_id"].is_object()) {
    for (const auto& [text, id] : g["lang_to_id"].items())
      if (text.size() > 4 && text.starts_with("<|") && text.ends_with("|>"))
        v.languages.emplace_back(text.substr(2, text.size() - 4), id.get<int32_t>());
  } else {
    for (const LanguageInfo& l : whisper_languages())
      if (const int32_t id = id_of("<|" + std::string(l.code) + "|>"); id >= 0)
        v.languages.emplace_back(std::string(l.code), id);
  }
  std::sort(v.languages.begin(), v.languages.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  v.multilingual = multilingual;
  if (v.eot < 0 || v.sot < 0)
    throw Error(context, "the tokenizer has no <|endoftext|> or <|startoftranscript|> token");
  if (static_cast<int64_t>(tok->vocab_size()) > n_vocab)
    throw Error(context, "tokenizer has " + std::to_string(tok->vocab_size()) +
                             " tokens, the model's vocab_size is " + std::to_string(n_vocab));
  return std::make_unique<HfText>(std::move(*tok), std::move(v));
}

std::vector<int32_t> non_speech_tokens(const WhisperText& text) {
  std::vector<std::string> symbols;
  for (const char* s : {"\"", "#", "(", ")", "*", "+", "/", ":", ";", "<",  "=",  ">",  "@", "[",
                        "\\", "]", "^", "_", "`", "{", "|", "}", "~", "「", "」", "『", "』"})
    symbols.emplace_back(s);
  for (const char* s : {"<<", ">>", "<<<", ">>>", "--", "---", "-(", "-[", "('", "(\"",
                        "((", "))", "(((", ")))", "[[", "]]",  "{{", "}}", "♪♪", "♪♪♪"})
    symbols.emplace_back(s);
  const std::vector<std::string> miscellaneous = {"♩", "♪", "♫", "♬", "♭", "♮", "♯"};
  std::vector<int32_t> result;
  for (const char* s : {" -", " '"})
    if (auto ids = text.encode(s); !ids.empty()) result.push_back(ids[0]);
  const auto add = [&](const std::string& symbol, bool misc) {
    for (const std::string& form : {symbol, " " + symbol}) {
      const std::vector<int32_t> ids = text.encode(form);
      if (!ids.empty() && (ids.size() == 1 || misc)) result.push_back(ids[0]);
    }
  };
  for (const std::string& s : symbols) add(s, false);
  for (const std::string& s : miscellaneous) add(s, true);
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

}  // namespace oxi::whisper
