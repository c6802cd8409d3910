// lib/llm/anthropic_api.h: Anthropic Messages requests as the OpenAI chat requests they stand
// for (each field and block kind, errors naming what is wrong), and the reply as a message and
// as Anthropic's stream of events.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/core/error.h"
#include "lib/llm/anthropic_api.h"

namespace oxi::llm::anthropic {
namespace {

std::string error_of(const std::string& body) {
  try {
    parse_messages_request(body, {}, 1);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(AnthropicApi, RequestBecomesTheChatRequestItStandsFor) {
  const Json oai = chat_body(R"({"model": "claude-x", "max_tokens": 12, "temperature": 0.5,
      "top_p": 0.9, "top_k": 7, "stop_sequences": ["END"], "stream": true,
      "system": [{"type": "text", "text": "be "}, {"type": "text", "text": "brief"}],
      "metadata": {"user_id": "u"},
      "messages": [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [
          {"type": "thinking", "thinking": "they ask", "signature": "s"},
          {"type": "text", "text": "Let me look."},
          {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}]},
        {"role": "user", "content": [
          {"type": "tool_result", "tool_use_id": "toolu_1",
           "content": [{"type": "text", "text": "sunny"}]},
          {"type": "text", "text": "and tomorrow?"}]}],
      "tools": [{"name": "get_weather", "description": "the weather",
                 "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
      "tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true}})");
  const Json want = Json::parse(R"({
      "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Let me look."}],
         "tool_calls": [{"id": "toolu_1", "type": "function",
                         "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "sunny"},
        {"role": "user", "content": [{"type": "text", "text": "and tomorrow?"}]}],
      "max_tokens": 12, "temperature": 0.5, "top_p": 0.9, "top_k": 7, "stream": true,
      "stop": ["END"],
      "tools": [{"type": "function", "function": {"name": "get_weather",
                 "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                 "description": "the weather"}}],
      "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
      "parallel_tool_calls": false})");
  EXPECT_EQ(oai, want) << oai.dump(1);

  // The OpenAI parser then reads it: the messages, their fields, the sampling.
  const openai::Request r = parse_messages_request(R"({"max_tokens": 12, "temperature": 0.5,
      "stop_sequences": ["END"], "messages": [{"role": "user", "content": "hi"}]})",
                                                   {}, 1);
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].content, "hi");
  EXPECT_EQ(r.options.max_tokens, 12u);
  EXPECT_FLOAT_EQ(r.options.sampling.temperature, 0.5f);
  EXPECT_EQ(r.options.stop, std::vector<std::string>{"END"});
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.tools.has_value());

  // Without max_tokens, llama-server's 4096; the other tool choices.
  EXPECT_EQ(chat_body(R"({"messages": []})")["max_tokens"], 4096);
  const auto choice = [](const char* type) {
    return chat_body(std::string(R"({"messages": [], "tool_choice": {"type": ")") + type +
                     R"("}})")["tool_choice"];
  };
  EXPECT_EQ(choice("auto"), "auto");
  EXPECT_EQ(choice("any"), "required");
  EXPECT_EQ(choice("none"), "none");
}

TEST(AnthropicApi, WhatCannotBeAnsweredIsNamed) {
  EXPECT_NE(error_of("[1]").find("must be a JSON object"), std::string::npos);
  EXPECT_NE(error_of("{").find("not JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"max_tokens": 5})").find("messages must be a list"), std::string::npos);
  EXPECT_NE(error_of(R"({"messages": [{"role": "system", "content": "x"}]})")
                .find("messages[0].role must be \"user\" or \"assistant\""),
            std::string::npos);
  const std::string image = error_of(R"({"messages": [{"role": "user", "content": [
      {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ""}}]}]})");
  EXPECT_NE(image.find("messages[0].content[0]: image blocks are not supported"), std::string::npos)
      << image;
  EXPECT_NE(error_of(R"({"messages": [{"role": "assistant", "content": [
      {"type": "tool_result", "tool_use_id": "x", "content": "y"}]}]})")
                .find("tool_result blocks are not supported in an assistant's turn"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"messages": [], "tools": [{"type": "web_search_20250305",
      "name": "web_search"}]})")
                .find("server tool \"web_search_20250305\" is not supported"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"messages": [], "tool_choice": {"type": "tool"}})").find("tool_choice"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"system": 5, "messages": []})").find("system must be a string"),
            std::string::npos);
  // The OpenAI parser's own checks still apply.
  EXPECT_NE(error_of(R"({"messages": []})").find("messages must be a non-empty list"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})")
                .find("temperature must be a number"),
            std::string::npos);
}

TEST(AnthropicApi, ReplyIsAMessageOfBlocks) {
  const openai::Identity who{"msg_7", 0, "tiny"};
  TurnStats stats;
  stats.prompt_ids = {1, 2, 3, 4};
  stats.cached_tokens = 2;
  stats.generated_tokens = 5;
  stats.stop_reason = StopReason::eos;
  AssistantReply reply;
  reply.content = "Hello";
  const Json text = message_response(who, stats, reply);
  EXPECT_EQ(text, Json::parse(R"({"id": "msg_7", "type": "message", "role": "assistant",
      "model": "tiny", "content": [{"type": "text", "text": "Hello"}], "stop_reason": "end_turn",
      "stop_sequence": null, "usage": {"input_tokens": 4, "output_tokens": 5,
      "cache_read_input_tokens": 2}})"));

  stats.stop_reason = StopReason::stop_string;
  stats.stop_string = "END";
  EXPECT_EQ(message_response(who, stats, reply)["stop_reason"], "stop_sequence");
  EXPECT_EQ(message_response(who, stats, reply)["stop_sequence"], "END");
  stats.stop_reason = StopReason::max_tokens;
  EXPECT_EQ(message_response(who, stats, reply)["stop_reason"], "max_tokens");
  EXPECT_TRUE(message_response(who, stats, reply)["stop_sequence"].is_null());

  reply.content.clear();
  reply.reasoning = "think";
  reply.calls = {{"get_weather", R"({"city": "Oslo"})", "call_1"}};
  const Json called = message_response(who, stats, reply);
  EXPECT_EQ(called["content"], Json::parse(R"([
      {"type": "thinking", "thinking": "think", "signature": ""},
      {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Oslo"}}])"));
  EXPECT_EQ(called["stop_reason"], "tool_use");

  // An empty reply is one empty text block.
  EXPECT_EQ(message_response(who, stats, {})["content"],
            Json::parse(R"([{"type": "text", "text": ""}])"));
}

TEST(AnthropicApi, StreamIsBlocksOfDeltasThenTheStop) {
  MessageStream stream({"msg_1", 0, "tiny"});
  std::vector<Event> events = {stream.start(9)};
  const auto add = [&](std::vector<Event> more) {
    events.insert(events.end(), more.begin(), more.end());
  };
  add(stream.add({"hmm", ""}));  // ReplyDelta: reasoning, content
  add(stream.add({" ok", ""}));
  add(stream.add({"", "Hi"}));
  add(stream.add({"", " there"}));
  add(stream.add({"", ""}));
  TurnStats stats;
  stats.prompt_ids.assign(9, 1);
  stats.generated_tokens = 6;
  add(stream.finish(stats, {{"f", R"({"a": 1})", "call_2"}}));

  std::vector<std::string> types;
  for (const Event& e : events) {
    types.push_back(e.type);
    EXPECT_EQ(e.data["type"], e.type);
    EXPECT_EQ(sse(e), "event: " + e.type + "\ndata: " + openai::dump(e.data) + "\n\n");
  }
  const std::vector<std::string> want = {
      "message_start",      "content_block_start", "content_block_delta", "content_block_delta",
      "content_block_stop", "content_block_start", "content_block_delta", "content_block_delta",
      "content_block_stop", "content_block_start", "content_block_delta", "content_block_stop",
      "message_delta",      "message_stop"};
  EXPECT_EQ(types, want);
  EXPECT_EQ(events[0].data["message"]["usage"]["input_tokens"], 9);
  EXPECT_TRUE(events[0].data["message"]["content"].empty());
  EXPECT_EQ(events[1].data["content_block"],
            Json::parse(R"({"type": "thinking", "thinking": "", "signature": ""})"));
  EXPECT_EQ(events[2].data["delta"],
            Json::parse(R"({"type": "thinking_delta", "thinking": "hmm"})"));
  EXPECT_EQ(events[4].data["index"], 0);
  EXPECT_EQ(events[5].data["index"], 1);
  EXPECT_EQ(events[5].data["content_block"], Json::parse(R"({"type": "text", "text": ""})"));
  EXPECT_EQ(events[7].data["delta"], Json::parse(R"({"type": "text_delta", "text": " there"})"));
  EXPECT_EQ(events[9].data["index"], 2);
  EXPECT_EQ(events[9].data["content_block"],
            Json::parse(R"({"type": "tool_use", "id": "call_2", "name": "f", "input": {}})"));
  EXPECT_EQ(events[10].data["delta"],
            Json::parse(R"({"type": "input_json_delta", "partial_json": "{\"a\":1}"})"));
  EXPECT_EQ(events[12].data["delta"]["stop_reason"], "tool_use");
  EXPECT_EQ(events[12].data["usage"]["output_tokens"], 6);
}

TEST(AnthropicApi, ErrorsInAnthropicsShape) {
  EXPECT_EQ(error_body(400, "bad"), Json::parse(R"({"type": "error",
      "error": {"type": "invalid_request_error", "message": "bad"}})"));
  EXPECT_EQ(error_body(401, "")["error"]["type"], "authentication_error");
  EXPECT_EQ(error_body(404, "")["error"]["type"], "not_found_error");
  EXPECT_EQ(error_body(500, "")["error"]["type"], "api_error");
  EXPECT_EQ(error_body(503, "")["error"]["type"], "overloaded_error");
}

}  // namespace
}  // namespace oxi::llm::anthropic
