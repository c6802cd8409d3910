#include "lib/llm/assistant_reply.h"

namespace oxi::llm {

AssistantReplyReader::AssistantReplyReader(std::optional<ToolCallFormat> tools,
                                           std::optional<bool> thinking)
    : tools_(tools), thinking_(thinking) {
  if (thinking_) reasoning_.emplace(*thinking_);
  if (tools_) content_.emplace(*tools_);
}

std::string AssistantReplyReader::content_piece(std::string_view text) {
  if (!content_ || text.empty()) return std::string(text);
  return content_->feed(text);
}

ReplyDelta AssistantReplyReader::feed(std::string_view piece) {
  if (!reasoning_) return {"", content_piece(piece)};
  ReplyDelta d = reasoning_->feed(piece);
  d.content = content_piece(d.content);
  return d;
}

AssistantReply AssistantReplyReader::finish(std::string_view text, ReplyDelta* rest) const {
  const ReasonedReply whole =
      thinking_ ? split_reasoning(text, *thinking_) : ReasonedReply{"", std::string(text)};
  AssistantReply reply{whole.content, whole.reasoning, {}};
  ReplyDelta left;
  std::string
      content_left;  // content feed() has not passed on yet (all of it went, without reasoning)
  if (reasoning_) {
    const ReasonedReply r = reasoning_->rest(whole);
    left.reasoning = r.reasoning;
    content_left = r.content;
  }
  if (tools_) {
    const ToolReply calls = parse_tool_reply(whole.content, *tools_);
    reply.content = calls.content;
    reply.calls = calls.calls;
    // The content stream was fed what the reasoning stream let through: given the rest, what
    // it has not sent of the content the calls leave.
    ToolContentStream stream = *content_;
    stream.feed(content_left);
    left.content = stream.rest(calls);
  } else {
    left.content = content_left;
  }
  if (rest) *rest = left;
  return reply;
}

}  // namespace oxi::llm
