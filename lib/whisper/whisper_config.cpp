#include "lib/whisper/whisper_config.h"

#include <cstring>
#include <string>
#include <utility>

#include "lib/core/error.h"
#include "lib/formats/inflate.h"

namespace oxi::whisper {

void WhisperConfig::validate_stated_sizes(const std::string& context) const {
  constexpr int kMaxSize = 1 << 20;
  const std::pair<const char*, int> sizes[] = {{"n_mels", n_mels},
                                               {"n_audio_ctx", n_audio_ctx},
                                               {"n_audio_state", n_audio_state},
                                               {"n_audio_head", n_audio_head},
                                               {"n_audio_layer", n_audio_layer},
                                               {"n_text_ctx", n_text_ctx},
                                               {"n_text_state", n_text_state},
                                               {"n_text_head", n_text_head},
                                               {"n_text_layer", n_text_layer},
                                               {"n_vocab", n_vocab}};
  for (const auto& [name, v] : sizes)
    if (v <= 0 || v > kMaxSize)
      throw Error(context, std::string(name) + " is " + std::to_string(v) +
                               (v <= 0 ? "" : ", more than any model has"));
}

void WhisperConfig::validate(const std::string& context) const {
  validate_stated_sizes(context);
  const auto positive = [&](int v, const char* name) {
    if (v <= 0) throw Error(context, std::string(name) + " is " + std::to_string(v));
  };
  positive(n_audio_mlp, "n_audio_mlp");
  positive(n_text_mlp, "n_text_mlp");
  positive(n_frames, "n_frames");
  if (n_audio_state % n_audio_head != 0 || n_text_state % n_text_head != 0)
    throw Error(context, "state width is not a multiple of the head count");
  if (n_audio_state != n_text_state)
    throw Error(context, "encoder width " + std::to_string(n_audio_state) +
                             " differs from decoder width " + std::to_string(n_text_state));
  if (n_frames > 2 * n_audio_ctx)
    throw Error(context, "window of " + std::to_string(n_frames) + " mel frames needs " +
                             std::to_string((n_frames + 1) / 2) +
                             " encoder positions, the model has " + std::to_string(n_audio_ctx));
  for (const auto& [layer, head] : alignment_heads)
    if (layer < 0 || layer >= n_text_layer || head < 0 || head >= n_text_head)
      throw Error(context, "alignment head (" + std::to_string(layer) + ", " +
                               std::to_string(head) + ") is outside the decoder");
}

std::vector<std::pair<int, int>> default_alignment_heads(int n_text_layer, int n_text_head) {
  std::vector<std::pair<int, int>> heads;
  for (int layer = n_text_layer / 2; layer < n_text_layer; ++layer)
    for (int head = 0; head < n_text_head; ++head) heads.emplace_back(layer, head);
  return heads;
}

namespace {

// Python's base64.b85decode (RFC 1924 alphabet).
std::vector<std::byte> base85_decode(const std::string& text, const std::string& context) {
  static constexpr char kAlphabet[] =
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";
  int value_of[256];
  std::fill(std::begin(value_of), std::end(value_of), -1);
  for (int i = 0; i < 85; ++i) value_of[static_cast<unsigned char>(kAlphabet[i])] = i;
  std::vector<std::byte> out;
  const size_t padding = (5 - text.size() % 5) % 5;
  const std::string padded = text + std::string(padding, '~');
  for (size_t i = 0; i < padded.size(); i += 5) {
    uint64_t acc = 0;
    for (size_t j = 0; j < 5; ++j) {
      const int v = value_of[static_cast<unsigned char>(padded[i + j])];
      if (v < 0) throw Error(context, "alignment_heads: invalid base85 character");
      acc = acc * 85 + static_cast<uint64_t>(v);
    }
    if (acc > 0xffffffffu) throw Error(context, "alignment_heads: base85 group overflows");
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(std::byte((acc >> shift) & 0xff));
  }
  out.resize(out.size() - padding);
  return out;
}

// The payload of a gzip member (RFC 1952): header, raw deflate, CRC32 and ISIZE trailer.
std::vector<std::byte> gunzip(std::span<const std::byte> gz, const std::string& context) {
  if (gz.size() < 18 || gz[0] != std::byte{0x1f} || gz[1] != std::byte{0x8b} ||
      gz[2] != std::byte{8})
    throw Error(context, "alignment_heads: not a gzip stream");
  const auto flags = std::to_integer<unsigned>(gz[3]);
  size_t pos = 10;
  const auto skip_zero_terminated = [&] {
    while (pos < gz.size() && gz[pos] != std::byte{0}) ++pos;
    ++pos;
  };
  if (flags & 4)
    pos += 2 + (std::to_integer<size_t>(gz[pos]) | std::to_integer<size_t>(gz[pos + 1]) << 8);
  if (flags & 8) skip_zero_terminated();
  if (flags & 16) skip_zero_terminated();
  if (flags & 2) pos += 2;
  if (pos + 8 > gz.size()) throw Error(context, "alignment_heads: truncated gzip stream");
  uint32_t size = 0;
  std::memcpy(&size, gz.data() + gz.size() - 4, 4);
  return formats::inflate_raw(gz.subspan(pos, gz.size() - 8 - pos), size, context);
}

}  // namespace

std::vector<std::pair<int, int>> decode_alignment_heads(const std::string& base85_gzip,
                                                        int n_text_layer, int n_text_head,
                                                        const std::string& context) {
  const std::vector<std::byte> mask = gunzip(base85_decode(base85_gzip, context), context);
  if (mask.size() != static_cast<size_t>(n_text_layer) * static_cast<size_t>(n_text_head))
    throw Error(context, "alignment_heads: " + std::to_string(mask.size()) +
                             " flags for a decoder of " + std::to_string(n_text_layer) + " x " +
                             std::to_string(n_text_head) + " heads");
  std::vector<std::pair<int, int>> heads;
  for (int layer = 0; layer < n_text_layer; ++layer)
    for (int head = 0; head < n_text_head; ++head)
      if (mask[static_cast<size_t>(layer * n_text_head + head)] != std::byte{0})
        heads.emplace_back(layer, head);
  return heads;
}

}  // namespace oxi::whisper
