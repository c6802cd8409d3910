#include "lib/llm/reasoning.h"

#include <algorithm>

namespace oxi::llm {
namespace {

constexpr std::string_view kOpen = "<think>", kClose = "</think>";

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}
std::string_view lstrip(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  return s;
}
std::string_view rstrip(std::string_view s) {
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}
// `s` less a tail that is a proper start of `tag`.
std::string_view without_tag_start(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(tag.size() - 1, s.size()); n > 0; --n)
    if (s.substr(s.size() - n) == tag.substr(0, n)) return s.substr(0, s.size() - n);
  return s;
}

// The split of a reply so far. `whole`: the reply is complete (else only what cannot change
// as more comes).
ReasonedReply split(std::string_view text, bool opened, bool whole) {
  size_t start = 0;  // where the reasoning begins
  if (!opened) {
    const std::string_view lead = lstrip(text);
    if (!lead.starts_with(kOpen)) {
      if (!whole && kOpen.starts_with(lead)) return {};  // it may still open
      return {"", std::string(lead)};
    }
    start = text.size() - lead.size() + kOpen.size();
  }
  const size_t close = text.find(kClose, start);
  if (close == std::string_view::npos) {
    if (whole && !opened) return {"", std::string(lstrip(text))};  // cut before </think>
    std::string_view reasoning = text.substr(start);
    if (!whole) reasoning = without_tag_start(reasoning, kClose);
    return {std::string(rstrip(lstrip(reasoning))), ""};
  }
  return {std::string(rstrip(lstrip(text.substr(start, close - start)))),
          std::string(lstrip(text.substr(close + kClose.size())))};
}

// What `now` adds to `sent` (nothing when it does not continue it).
std::string added(const std::string& now, const std::string& sent) {
  return now.size() > sent.size() && now.compare(0, sent.size(), sent) == 0
             ? now.substr(sent.size())
             : "";
}

}  // namespace

bool prompt_opens_thinking(std::string_view prompt) {
  const size_t open = prompt.rfind(kOpen);
  return open != std::string_view::npos && prompt.find(kClose, open) == std::string_view::npos;
}

ReasonedReply split_reasoning(std::string_view reply, bool opened) {
  return split(reply, opened, /*whole=*/true);
}

ReasoningStream::ReasoningStream(bool opened) : opened_(opened) {}

ReasonedReply ReasoningStream::feed(std::string_view piece) {
  text_ += piece;
  const ReasonedReply now = split(text_, opened_, /*whole=*/false);
  ReasonedReply out{added(now.reasoning, sent_.reasoning), added(now.content, sent_.content)};
  sent_.reasoning += out.reasoning;
  sent_.content += out.content;
  return out;
}

ReasonedReply ReasoningStream::rest(const ReasonedReply& whole) const {
  return {added(whole.reasoning, sent_.reasoning), added(whole.content, sent_.content)};
}

}  // namespace oxi::llm
