// An assistant's reply read as it streams and when whole, as llama-server reads it: the
// reasoning of a thinking model (reasoning.h) and the tool calls of a turn that offered tools
// (tool_calls.h) set apart from the content. The pieces handed out while streaming join into
// what the whole reply is read as (but for a cut reply: ReasoningStream).
//
//   AssistantReplyReader reader(format, opened);
//   for each piece: ReplyDelta d = reader.feed(piece);  // send d.reasoning, d.content
//   ReplyDelta rest;
//   AssistantReply reply = reader.finish(stats.text, &rest);  // send rest, then reply.calls
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/llm/reasoning.h"
#include "lib/llm/tool_calls.h"

namespace oxi::llm {

struct AssistantReply {
  std::string content;
  std::string reasoning;  // empty: none
  std::vector<ToolCall> calls;
};

// What of a streamed reply goes out at a time: reasoning and content.
using ReplyDelta = ReasonedReply;

class AssistantReplyReader {
 public:
  // tools: the form calls come in (none: the turn offered no tools); thinking: whether the
  // prompt opened a <think> block (none: the reasoning is not set apart).
  AssistantReplyReader(std::optional<ToolCallFormat> tools, std::optional<bool> thinking);
  // What can be sent now, after `piece` joins the reply.
  ReplyDelta feed(std::string_view piece);
  // The whole reply read; `rest` (if given) gets what feed() has not handed out.
  AssistantReply finish(std::string_view text, ReplyDelta* rest = nullptr) const;

 private:
  // Content through the tool-call holdback (when tools were offered).
  std::string content_piece(std::string_view text);

  std::optional<ToolCallFormat> tools_;
  std::optional<bool> thinking_;
  std::optional<ReasoningStream> reasoning_;
  std::optional<ToolContentStream> content_;
};

}  // namespace oxi::llm
