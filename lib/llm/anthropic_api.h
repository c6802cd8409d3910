// Anthropic's Messages API as `oxinfer serve` speaks it on /v1/messages (as llama-server does,
// for clients written against Anthropic's SDKs): a request becomes the OpenAI chat request the
// server already answers (openai_api.h), and the reply goes back as a message with content
// blocks, or as Anthropic's stream of events. No networking here.
//
// Request fields taken: system (a string or text blocks), messages (role "user" or
// "assistant"; content a string or blocks: text, tool_use {id, name, input} in an assistant's
// turn, tool_result {tool_use_id, content} in a user's, each result becoming an OpenAI "tool"
// message before the turn's text; thinking blocks are dropped), max_tokens (4096 when absent,
// as llama-server), temperature, top_p, top_k, stop_sequences, stream, tools ({name,
// description, input_schema}), tool_choice ({"type": "auto" | "any" | "none" | "tool", "name"};
// disable_parallel_tool_use). Others (model, metadata, thinking) are ignored; image and
// document blocks, and Anthropic's server tools, are refused by name.
//
// Replies: {"id": "msg_...", "type": "message", "role": "assistant", "model", "content": [a
// thinking block (a thinking model's reasoning), a text block, tool_use blocks], "stop_reason":
// "end_turn" | "max_tokens" | "stop_sequence" | "tool_use", "stop_sequence", "usage":
// {"input_tokens", "output_tokens", "cache_read_input_tokens"}}; streamed, message_start,
// content_block_start / content_block_delta (text_delta, thinking_delta, input_json_delta) /
// content_block_stop for each block, message_delta (the stop reason, the output tokens) and
// message_stop, each as `event: TYPE` and `data: JSON`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/llm/assistant_reply.h"
#include "lib/llm/engine.h"
#include "lib/llm/openai_api.h"
#include "lib/llm/server_event.h"

namespace oxi::llm::anthropic {

using Json = openai::Json;

// The OpenAI chat request body a Messages request (or /v1/messages/count_tokens' body) stands
// for. Throws oxi::Error("request", ...) naming what is wrong (status 400).
Json chat_body(std::string_view body);
// chat_body() parsed as openai::parse_chat_request parses a chat request.
openai::Request parse_messages_request(std::string_view body, const GenerateOptions& defaults,
                                       uint64_t random_seed);

// "tool_use" when the reply called tools, else "max_tokens" (max_tokens or a full context),
// "stop_sequence" or "end_turn".
const char* stop_reason(StopReason reason, bool called_tools);

// The whole reply as a message (who: "msg_..." id, model). Tool calls' arguments become their
// input objects.
Json message_response(const openai::Identity& who, const TurnStats& stats,
                      const AssistantReply& reply);

using Event = ServerEvent;

// The events of a streamed message, block by block: reasoning goes to a thinking block,
// content to a text block (a new block each time the kind changes), tool calls to tool_use
// blocks at the end.
class MessageStream {
 public:
  explicit MessageStream(openai::Identity who) : who_(std::move(who)) {}
  // message_start, with the prompt's token count.
  Event start(size_t input_tokens) const;
  // What a reply delta adds.
  std::vector<Event> add(const ReplyDelta& delta);
  // The open block's end, the calls' blocks, message_delta and message_stop.
  std::vector<Event> finish(const TurnStats& stats, const std::vector<ToolCall>& calls);

 private:
  // Opens a block of `kind` ("text", "thinking") unless one is open, and returns its delta.
  void add_to_block(const char* kind, std::string_view text, std::vector<Event>& out);
  void close_block(std::vector<Event>& out);

  openai::Identity who_;
  std::string open_;  // the kind of the open block; empty: none
  size_t next_index_ = 0;
};

// {"type": "error", "error": {"type", "message"}}, as Anthropic's API reports errors.
Json error_body(int status, std::string_view message);

}  // namespace oxi::llm::anthropic
