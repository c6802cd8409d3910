// lib/llm/responses_api.h: OpenAI Responses requests as the chat requests they stand for (each
// field and item kind, errors naming what is wrong), and the reply as a response object and as
// the Responses stream of events.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/core/error.h"
#include "lib/llm/responses_api.h"

namespace oxi::llm::responses {
namespace {

std::string error_of(const std::string& body) {
  try {
    parse_responses_request(body, {}, 1);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(ResponsesApi, RequestBecomesTheChatRequestItStandsFor) {
  const Json oai = chat_body(R"({"model": "gpt-x", "instructions": "be brief",
      "max_output_tokens": 40, "temperature": 0.2, "top_p": 0.8, "stream": true,
      "store": false, "parallel_tool_calls": false,
      "input": [
        {"role": "developer", "content": "use tools"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "weather?"}]},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]},
        {"type": "function_call", "call_id": "call_1", "name": "w", "arguments": "{\"c\": \"Oslo\"}"},
        {"type": "function_call", "call_id": "call_2", "name": "w", "arguments": "{\"c\": \"Rome\"}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        {"type": "function_call_output", "call_id": "call_2", "output": {"sky": "rain"}}],
      "tools": [{"type": "function", "name": "w", "description": "weather",
                 "parameters": {"type": "object"}, "strict": true}],
      "tool_choice": {"type": "function", "name": "w"},
      "text": {"format": {"type": "json_schema", "name": "s", "schema": {"type": "object"}}}})");
  const Json want = Json::parse(R"({
      "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "system", "content": "use tools"},
        {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Looking."}],
         "tool_calls": [
           {"id": "call_1", "type": "function", "function": {"name": "w", "arguments": "{\"c\": \"Oslo\"}"}},
           {"id": "call_2", "type": "function", "function": {"name": "w", "arguments": "{\"c\": \"Rome\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_2", "content": "{\"sky\":\"rain\"}"}],
      "max_tokens": 40, "temperature": 0.2, "top_p": 0.8, "stream": true,
      "parallel_tool_calls": false,
      "tools": [{"type": "function", "function": {"name": "w", "description": "weather",
                 "parameters": {"type": "object"}}}],
      "tool_choice": {"type": "function", "function": {"name": "w"}},
      "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "object"}}}})");
  EXPECT_EQ(oai, want) << oai.dump(1);

  // A string input is one user message; calls with no assistant turn before them make one.
  EXPECT_EQ(chat_body(R"({"input": "hi"})")["messages"],
            Json::parse(R"([{"role": "user", "content": "hi"}])"));
  EXPECT_EQ(chat_body(R"({"input": [{"role": "user", "content": "x"}, {"type": "function_call",
                "call_id": "c", "name": "f", "arguments": "{}"}]})")["messages"][1],
            Json::parse(R"({"role": "assistant", "content": null, "tool_calls": [{"id": "c",
                "type": "function", "function": {"name": "f", "arguments": "{}"}}]})"));
  const openai::Request r =
      parse_responses_request(R"({"input": "hi", "max_output_tokens": 7, "tool_choice": "auto",
                                  "tools": [{"type": "function", "name": "f"}]})",
                              {}, 1);
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.options.max_tokens, 7);
  ASSERT_TRUE(r.tools.has_value());
  EXPECT_EQ(r.tools->choice, ToolChoice::automatic);
}

TEST(ResponsesApi, WhatCannotBeAnsweredIsNamed) {
  EXPECT_NE(error_of("[]").find("must be a JSON object"), std::string::npos);
  EXPECT_NE(error_of("{}").find("input is required"), std::string::npos);
  EXPECT_NE(error_of(R"({"input": "x", "previous_response_id": "resp_1"})")
                .find("previous_response_id is not supported"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"input": [{"role": "user", "content": [{"type": "input_image",
                "image_url": "x"}]}]})")
                .find("input[0].content[0]: input_image parts are not supported"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"input": [{"type": "web_search_call"}]})")
                .find("input[0]: web_search_call items are not supported"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"input": "x", "tools": [{"type": "web_search"}]})")
                .find("the hosted tool \"web_search\" is not supported"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"input": [{"role": "tool", "content": "x"}]})").find("input[0].role"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"input": "x", "text": {"format": {"type": "xml"}}})").find("text.format"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"input": "x", "tool_choice": "sometimes",
                         "tools": [{"type": "function", "name": "f"}]})")
                .find("tool_choice"),
            std::string::npos);
}

TEST(ResponsesApi, ReplyIsAResponseOfOutputItems) {
  const openai::Identity who{"resp_7", 1700000000, "tiny"};
  TurnStats stats;
  stats.prompt_ids = {1, 2, 3};
  stats.cached_tokens = 1;
  stats.generated_tokens = 4;
  AssistantReply reply;
  reply.content = "Hello";
  EXPECT_EQ(response_object(who, stats, reply), Json::parse(R"({"id": "resp_7",
      "object": "response", "created_at": 1700000000, "status": "completed", "error": null,
      "incomplete_details": null, "model": "tiny",
      "output": [{"type": "message", "id": "msg_7_0", "status": "completed", "role": "assistant",
                  "content": [{"type": "output_text", "text": "Hello", "annotations": []}]}],
      "usage": {"input_tokens": 3, "input_tokens_details": {"cached_tokens": 1},
                "output_tokens": 4, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 7}})"));
  stats.stop_reason = StopReason::max_tokens;
  const Json cut = response_object(who, stats, reply);
  EXPECT_EQ(cut["status"], "incomplete");
  EXPECT_EQ(cut["incomplete_details"]["reason"], "max_output_tokens");

  reply.content.clear();
  reply.reasoning = "think";
  reply.calls = {{"f", R"({"a": 1})", "call_9"}};
  const Json called = response_object(who, stats, reply);
  EXPECT_EQ(called["status"], "completed");
  EXPECT_EQ(called["output"], Json::parse(R"([
      {"type": "reasoning", "id": "rs_7_0", "summary": [],
       "content": [{"type": "reasoning_text", "text": "think"}]},
      {"type": "function_call", "id": "fc_7_1", "call_id": "call_9", "name": "f",
       "arguments": "{\"a\": 1}", "status": "completed"}])"));
}

TEST(ResponsesApi, StreamIsItemsOfDeltasThenTheWholeResponse) {
  ResponseStream stream({"resp_2", 5, "tiny"});
  std::vector<ServerEvent> events = {stream.start()};
  const auto add = [&](std::vector<ServerEvent> more) {
    events.insert(events.end(), more.begin(), more.end());
  };
  add(stream.add({"hm", ""}));  // ReplyDelta: reasoning, content
  add(stream.add({"", "Hi"}));
  add(stream.add({"", " there"}));
  TurnStats stats;
  stats.prompt_ids = {1, 2};
  stats.generated_tokens = 5;
  AssistantReply reply{"Hi there", "hm", {{"f", "{}", "call_1"}}};
  add(stream.finish(stats, reply));

  std::vector<std::string> types;
  for (size_t i = 0; i < events.size(); ++i) {
    types.push_back(events[i].type);
    EXPECT_EQ(events[i].data["type"], events[i].type);
    EXPECT_EQ(events[i].data["sequence_number"], i);
  }
  const std::vector<std::string> want = {"response.created",
                                         "response.output_item.added",
                                         "response.reasoning_text.delta",
                                         "response.reasoning_text.done",
                                         "response.output_item.done",
                                         "response.output_item.added",
                                         "response.content_part.added",
                                         "response.output_text.delta",
                                         "response.output_text.delta",
                                         "response.output_text.done",
                                         "response.content_part.done",
                                         "response.output_item.done",
                                         "response.output_item.added",
                                         "response.function_call_arguments.delta",
                                         "response.function_call_arguments.done",
                                         "response.output_item.done",
                                         "response.completed"};
  EXPECT_EQ(types, want);
  EXPECT_EQ(events[0].data["response"]["status"], "in_progress");
  EXPECT_EQ(events[7].data["delta"], "Hi");
  EXPECT_EQ(events[7].data["item_id"], "msg_2_1");
  EXPECT_EQ(events[9].data["text"], "Hi there");
  EXPECT_EQ(events[13].data["item_id"], "fc_2_2");
  // The completed response holds what was streamed, as response_object() gives it whole.
  const Json& done = events.back().data["response"];
  EXPECT_EQ(done, response_object({"resp_2", 5, "tiny"}, stats, reply));
}

// A reply of nothing is one empty message item, streamed as one too: added, then done.
TEST(ResponsesApi, EmptyReplyStreamsOneEmptyMessage) {
  const openai::Identity who{"resp_3", 5, "tiny"};
  ResponseStream stream(who);
  std::vector<ServerEvent> events = {stream.start()};
  TurnStats stats;
  const std::vector<ServerEvent> rest = stream.finish(stats, {});
  events.insert(events.end(), rest.begin(), rest.end());
  std::vector<std::string> types;
  for (const ServerEvent& e : events) types.push_back(e.type);
  const std::vector<std::string> want = {
      "response.created",          "response.output_item.added", "response.content_part.added",
      "response.output_text.done", "response.content_part.done", "response.output_item.done",
      "response.completed"};
  EXPECT_EQ(types, want);
  EXPECT_EQ(events.back().data["response"], response_object(who, stats, {}));
}

}  // namespace
}  // namespace oxi::llm::responses
