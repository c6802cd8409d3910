#include "lib/whisper/tiktoken_tokenizer.h"

#include <array>
#include <charconv>
#include <limits>

#include "lib/core/error.h"
#include "lib/formats/mapped_file.h"
#include "lib/tokenizer/pretokenize.h"

namespace oxi::whisper {
namespace {

// Base64 (RFC 4648 alphabet) as Python's b64decode reads it: trailing '=' padding is optional,
// so multilingual.tiktoken's "=" (its empty placeholder token at rank 50256) decodes to "".
std::optional<std::string> decode_base64(std::string_view in) {
  static const std::array<int8_t, 256> kValue = [] {
    std::array<int8_t, 256> v{};
    v.fill(-1);
    const std::string_view alphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < alphabet.size(); ++i) {
      v[static_cast<unsigned char>(alphabet[i])] = static_cast<int8_t>(i);
    }
    return v;
  }();
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  if (in.size() % 4 == 1) return std::nullopt;  // 6 bits cannot end a byte
  std::string out;
  out.reserve(in.size() / 4 * 3 + 2);
  uint32_t bits = 0;
  int n_bits = 0;
  for (char c : in) {
    const int8_t v = kValue[static_cast<unsigned char>(c)];
    if (v < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<uint32_t>(v);
    n_bits += 6;
    if (n_bits >= 8) {
      n_bits -= 8;
      out.push_back(static_cast<char>((bits >> n_bits) & 0xFF));
    }
  }
  return out;
}

}  // namespace

TiktokenTokenizer::TiktokenTokenizer(const std::filesystem::path& path, int n_languages) {
  const std::string context = path.string();
  const MappedFile file(path);
  std::string_view text(reinterpret_cast<const char*>(file.bytes().data()), file.size());
  std::vector<std::optional<std::string>> by_rank;
  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const auto bad_line = [&](std::string_view problem) {
      return Error(context, "line " + std::to_string(line_number) + ": " + std::string(problem));
    };
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) throw bad_line("expected 'base64 rank'");
    auto bytes = decode_base64(line.substr(0, space));
    if (!bytes) throw bad_line("invalid base64 token");
    const std::string_view rank_text = line.substr(space + 1);
    int32_t rank = -1;
    const auto [end, ec] =
        std::from_chars(rank_text.data(), rank_text.data() + rank_text.size(), rank);
    if (ec != std::errc() || end != rank_text.data() + rank_text.size() || rank < 0 ||
        rank > (1 << 24)) {
      throw bad_line("invalid rank '" + std::string(rank_text) + "'");
    }
    if (static_cast<size_t>(rank) >= by_rank.size()) by_rank.resize(static_cast<size_t>(rank) + 1);
    if (by_rank[rank]) throw bad_line("rank " + std::to_string(rank) + " appears twice");
    if (!ranks_.emplace(*bytes, rank).second) throw bad_line("token appears twice");
    by_rank[rank] = std::move(bytes);
  }
  if (by_rank.empty()) throw Error(context, "no tokens");
  tokens_.reserve(by_rank.size());
  for (size_t r = 0; r < by_rank.size(); ++r) {
    if (!by_rank[r]) throw Error(context, "rank " + std::to_string(r) + " is missing");
    tokens_.push_back(std::move(*by_rank[r]));
  }
  // Byte-level BPE needs every single byte as a token, or some text could not be encoded.
  for (int b = 0; b < 256; ++b) {
    if (!ranks_.count(std::string(1, static_cast<char>(b)))) {
      throw Error(context, "byte " + std::to_string(b) + " has no token");
    }
  }
  if (n_languages < 1 || n_languages > static_cast<int>(whisper_languages().size())) {
    throw Error(context, "invalid language count " + std::to_string(n_languages));
  }
  vocab_ = standard_whisper_vocab(n_ranks(), n_languages);
}

std::optional<int32_t> TiktokenTokenizer::rank_of(std::string_view bytes) const {
  const auto it = ranks_.find(bytes);
  if (it == ranks_.end()) return std::nullopt;
  return it->second;
}

void TiktokenTokenizer::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  if (auto whole = rank_of(word)) {
    out.push_back(*whole);
    return;
  }
  // tiktoken's _byte_pair_merge: parts[i] is the start of the i-th piece; pair_rank[i] the rank
  // of pieces i and i+1 merged (or "none").
  constexpr int32_t kNone = std::numeric_limits<int32_t>::max();
  std::vector<size_t> starts(word.size() + 1);
  for (size_t i = 0; i <= word.size(); ++i) starts[i] = i;
  const auto pair_rank = [&](size_t i) -> int32_t {
    if (i + 2 >= starts.size()) return kNone;
    const auto r = rank_of(word.substr(starts[i], starts[i + 2] - starts[i]));
    return r ? *r : kNone;
  };
  std::vector<int32_t> ranks(starts.size());
  for (size_t i = 0; i < ranks.size(); ++i) ranks[i] = pair_rank(i);
  for (;;) {
    size_t best = 0;
    int32_t best_rank = kNone;
    for (size_t i = 0; i + 1 < ranks.size(); ++i) {
      if (ranks[i] < best_rank) {
        best_rank = ranks[i];
        best = i;
      }
    }
    if (best_rank == kNone) break;
    starts.erase(starts.begin() + static_cast<ptrdiff_t>(best) + 1);
    ranks.erase(ranks.begin() + static_cast<ptrdiff_t>(best) + 1);
    ranks[best] = pair_rank(best);
    if (best > 0) ranks[best - 1] = pair_rank(best - 1);
  }
  for (size_t i = 0; i + 1 < starts.size(); ++i) {
    out.push_back(*rank_of(word.substr(starts[i], starts[i + 1] - starts[i])));
  }
}

std::vector<int32_t> TiktokenTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  for (std::string_view word : tokenizer::pretokenize(tokenizer::PreTokenizer::gpt2, text)) {
    merge_word(word, ids);
  }
  return ids;
}

std::string TiktokenTokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  for (int32_t id : ids) {
    if (id >= 0 && id < n_ranks()) {
      out += tokens_[id];
    } else if (!skip_special) {
      out += vocab_.special_text(id);
    }
  }
  return out;
}

std::string TiktokenTokenizer::token_text(int32_t id) const {
  if (id >= 0 && id < n_ranks()) return tokens_[id];
  return vocab_.special_text(id);
}

std::optional<int32_t> TiktokenTokenizer::token_id(std::string_view text) const {
  if (auto r = rank_of(text)) return r;
  if (!text.starts_with("<|") || !text.ends_with("|>")) return std::nullopt;
  // Few enough specials (1600) to search; this is for prompts, not for inner loops.
  for (int32_t id = n_ranks(); id < vocab_.n_vocab; ++id) {
    if (vocab_.special_text(id) == text) return id;
  }
  return std::nullopt;
}

}  // namespace oxi::whisper
