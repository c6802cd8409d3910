#include "lib/llm/stream_decoder.h"

#include <algorithm>
#include <span>

namespace oxi::llm {

StreamDecoder::StreamDecoder(const tokenizer::Tokenizer& tokenizer,
                             std::vector<std::string> stop_strings, bool strip_leading_space)
    : tokenizer_(tokenizer),
      stop_strings_(std::move(stop_strings)),
      strip_leading_space_(strip_leading_space) {
  std::erase_if(stop_strings_, [](const std::string& s) { return s.empty(); });
}

size_t StreamDecoder::incomplete_utf8_tail(std::string_view bytes) {
  const size_t n = bytes.size();
  for (size_t back = 1; back <= std::min<size_t>(3, n); ++back) {
    const auto c = static_cast<unsigned char>(bytes[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back for the lead
    if (c < 0xC0) return 0;            // ASCII ends a complete character
    const size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    return length > back ? back : 0;
  }
  return 0;  // no lead byte within reach: invalid bytes, let them through
}

std::string StreamDecoder::push(int32_t id) {
  if (stopped_ || tokenizer_.is_control(id)) return {};
  std::string piece = tokenizer_.token_piece(id);
  if (piece.empty()) return {};
  if (strip_leading_space_ && !seen_text_) {
    // decode() of the first piece strips exactly the leading space decode() of the whole
    // reply would strip.
    const int32_t one[] = {id};
    piece = tokenizer_.decode(std::span<const int32_t>(one));
  }
  seen_text_ = true;
  pending_utf8_ += piece;
  const size_t tail = incomplete_utf8_tail(pending_utf8_);
  std::string ready = pending_utf8_.substr(0, pending_utf8_.size() - tail);
  pending_utf8_.erase(0, pending_utf8_.size() - tail);
  return release(std::move(ready));
}

std::string StreamDecoder::release(std::string ready) {
  held_ += ready;
  // The earliest stop string wins.
  size_t stop_at = std::string::npos;
  for (size_t i = 0; i < stop_strings_.size(); ++i) {
    const size_t at = held_.find(stop_strings_[i]);
    if (at < stop_at) {
      stop_at = at;
      stop_index_ = i;
    }
  }
  if (stop_at != std::string::npos) {
    std::string out = held_.substr(0, stop_at);
    held_.clear();
    pending_utf8_.clear();
    stopped_ = true;
    emitted_ += out;
    return out;
  }
  // Hold back the longest tail that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string& stop : stop_strings_) {
    for (size_t len = std::min(held_.size(), stop.size() - 1); len > hold; --len) {
      if (held_.compare(held_.size() - len, len, stop, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  emitted_ += out;
  return out;
}

std::string StreamDecoder::finish() {
  if (stopped_) return {};
  std::string out = std::move(held_);
  if (!pending_utf8_.empty()) out += "\xEF\xBF\xBD";  // U+FFFD for the unfinished character
  held_.clear();
  pending_utf8_.clear();
  emitted_ += out;
  return out;
}

}  // namespace oxi::llm
