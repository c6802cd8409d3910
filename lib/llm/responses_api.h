// OpenAI's Responses API as `oxinfer serve` speaks it on /v1/responses (as llama-server does,
// for clients written against it: OpenAI's Agents SDK, Codex): a request becomes the chat
// request the server already answers (openai_api.h); the reply goes back as a response of
// output items, or as the Responses stream of events. Nothing is stored: previous_response_id is
// refused, the client sends the conversation as input items. No networking here.
//
// Request fields taken: input (a string: one user message; or items: messages {role "user",
// "assistant", "system" or "developer" (a system message), content a string or input_text /
// output_text parts}, function_call {call_id, name, arguments} (consecutive ones one assistant
// turn), function_call_output {call_id, output}; reasoning items are dropped), instructions (a
// system message first), max_output_tokens, temperature, top_p, stream, tools ({"type":
// "function", name, description, parameters}), tool_choice ("auto", "none", "required",
// {"type": "function", "name"}), parallel_tool_calls, text.format ({"type": "text" |
// "json_object" | "json_schema", "schema"}). Others (model, store, metadata, reasoning,
// truncation, user) are ignored; image and file inputs and the hosted tools (web_search, ...)
// are refused by name.
//
// Replies: {"id": "resp_...", "object": "response", "created_at", "status": "completed" (or
// "incomplete" with incomplete_details {"reason": "max_output_tokens"}), "model", "output": [a
// reasoning item (a thinking model's reasoning), a message item with one output_text part,
// function_call items], "usage": {"input_tokens", "input_tokens_details": {"cached_tokens"},
// "output_tokens", "output_tokens_details": {"reasoning_tokens"}, "total_tokens"}}; streamed,
// response.created, then for each item response.output_item.added, its deltas
// (response.reasoning_text.delta, response.content_part.added / response.output_text.delta,
// response.function_call_arguments.delta) and their .done events, response.output_item.done,
// and response.completed with the whole response; each event has a sequence_number.
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

namespace oxi::llm::responses {

using Json = openai::Json;

// The OpenAI chat request body a Responses request stands for. Throws oxi::Error("request",
// ...) naming what is wrong (status 400).
Json chat_body(std::string_view body);
// chat_body() parsed as openai::parse_chat_request parses a chat request.
openai::Request parse_responses_request(std::string_view body, const GenerateOptions& defaults,
                                        uint64_t random_seed);

// The whole reply as a response object (who: its "resp_..." id, creation time, model); the
// items' ids are the response's with the item's kind and index.
Json response_object(const openai::Identity& who, const TurnStats& stats,
                     const AssistantReply& reply);

// The events of a streamed response: reasoning and content deltas each go to an output item of
// their own (a new one each time the kind changes), tool calls to function_call items at the
// end, then response.completed with the whole response.
class ResponseStream {
 public:
  explicit ResponseStream(openai::Identity who) : who_(std::move(who)) {}
  // response.created (an in-progress response without output).
  ServerEvent start();
  // What a reply delta adds.
  std::vector<ServerEvent> add(const ReplyDelta& delta);
  // The open item's end, the calls' items, response.completed.
  std::vector<ServerEvent> finish(const TurnStats& stats, const AssistantReply& reply);

 private:
  ServerEvent event(const char* type, Json fields);
  // Opens an item of `kind` ("message", "reasoning") unless one of that kind is open (closing
  // another).
  void open_item(const char* kind, std::vector<ServerEvent>& out);
  // open_item(), then the delta of `text` (nothing for none).
  void add_to_item(const char* kind, std::string_view text, std::vector<ServerEvent>& out);
  void close_item(std::vector<ServerEvent>& out);

  openai::Identity who_;
  std::string open_;            // the kind of the open item; empty: none
  std::string open_id_;         // its id
  std::string text_;            // the open item's text so far
  Json items_ = Json::array();  // the items done, for response.completed
  size_t next_index_ = 0;
  size_t sequence_ = 0;
};

}  // namespace oxi::llm::responses
