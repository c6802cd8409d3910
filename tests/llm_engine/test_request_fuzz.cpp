// The server's request parsers (lib/llm/openai_api.h, anthropic_api.h, responses_api.h) against
// mutated bodies: valid requests with a value somewhere replaced by one of another type, a key
// dropped, or bytes of the text changed. Each body is either read or refused with an
// oxi::Error naming the problem; no other exception (a JSON library type error would reach
// the client as a 500 with the library's words) and no crash (the ASan build runs this too).
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "lib/core/error.h"
#include "lib/llm/anthropic_api.h"
#include "lib/llm/openai_api.h"
#include "lib/llm/responses_api.h"

namespace oxi::llm {
namespace {

using Json = openai::Json;

const char* const kChat = R"({"model": "x", "messages": [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
     "function": {"name": "f", "arguments": "{\"a\": 1}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "ok"}],
  "max_tokens": 12, "temperature": 0.5, "top_p": 0.9, "top_k": 4, "min_p": 0.1, "seed": 3,
  "stop": ["\n"], "logit_bias": {"5": -1}, "logprobs": true, "top_logprobs": 2,
  "stream": true, "response_format": {"type": "json_object"},
  "tools": [{"type": "function", "function": {"name": "f", "description": "d",
             "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}],
  "tool_choice": "auto", "parallel_tool_calls": true,
  "chat_template_kwargs": {"enable_thinking": false}, "reasoning_format": "none",
  "id_slot": 0})";

const char* const kCompletion = R"({"prompt": "w1 w2", "n_predict": 5, "temperature": 0,
  "repeat_penalty": 1.1, "repeat_last_n": 8, "presence_penalty": 0.1,
  "frequency_penalty": 0.2, "grammar": "root ::= \"a\"", "json_schema": {"type": "string"},
  "ignore_eos": true, "logprobs": 2, "stop": "x"})";

const char* const kEmbedding = R"({"input": ["a", [1, 2, 3]], "encoding_format": "base64"})";

const char* const kMessages = R"({"model": "claude", "max_tokens": 20, "temperature": 0.2,
  "system": [{"type": "text", "text": "be brief"}], "stop_sequences": ["END"],
  "messages": [{"role": "user", "content": "weather?"},
    {"role": "assistant", "content": [{"type": "text", "text": "Looking."},
      {"type": "tool_use", "id": "t1", "name": "w", "input": {"city": "Oslo"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
      "content": [{"type": "text", "text": "sunny"}]}, {"type": "text", "text": "ok?"}]}],
  "tools": [{"name": "w", "input_schema": {"type": "object",
             "properties": {"city": {"type": "string"}}}}],
  "tool_choice": {"type": "auto", "disable_parallel_tool_use": true}, "stream": false})";

const char* const kResponses = R"({"model": "gpt", "instructions": "be brief",
  "max_output_tokens": 20, "temperature": 0.2, "top_p": 0.9, "stream": true,
  "input": [{"role": "developer", "content": "tools ok"},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "w?"}]},
    {"type": "function_call", "call_id": "c1", "name": "w", "arguments": "{\"c\": 1}"},
    {"type": "function_call_output", "call_id": "c1", "output": "sunny"}],
  "tools": [{"type": "function", "name": "w", "parameters": {"type": "object"}}],
  "tool_choice": {"type": "function", "name": "w"}, "parallel_tool_calls": false,
  "text": {"format": {"type": "json_schema", "schema": {"type": "object"}}}})";

Json random_value(std::mt19937& rng) {
  switch (rng() % 9) {
    case 0:
      return nullptr;
    case 1:
      return rng() % 2 == 0;
    case 2:
      return static_cast<int64_t>(rng() % 2001) - 1000;
    case 3:
      return std::vector<int64_t>{-1, 0, 1, 1LL << 40, -(1LL << 62)}[rng() % 5];
    case 4:
      return std::vector<double>{-1.5, 0.0, 1e300, -1e-300, 0.5}[rng() % 5];
    case 5:
      return std::vector<std::string>{"", "x", "user", "text", "function", "auto", "{"}[rng() % 7];
    case 6:
      return Json::array();
    case 7:
      return Json::object();
    default:
      return Json::array({Json::object(), 1, "a"});
  }
}

// A node of j picked at random (j itself included).
Json* random_node(Json& j, std::mt19937& rng) {
  Json* node = &j;
  while ((node->is_object() || node->is_array()) && !node->empty() && rng() % 4 != 0) {
    auto it = node->begin();
    std::advance(it, rng() % node->size());
    node = &*it;
  }
  return node;
}

std::string mutate(const Json& seed, std::mt19937& rng) {
  Json j = seed;
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits; ++e) {
    Json* node = random_node(j, rng);
    if ((node->is_object() || node->is_array()) && !node->empty() && rng() % 3 == 0) {
      auto it = node->begin();
      std::advance(it, rng() % node->size());
      if (node->is_object())
        node->erase(it.key());
      else
        node->erase(static_cast<size_t>(std::distance(node->begin(), it)));
    } else {
      *node = random_value(rng);
    }
  }
  std::string text = j.dump();
  if (rng() % 5 == 0 && !text.empty()) {  // a byte changed, dropped or cut
    const size_t at = rng() % text.size();
    switch (rng() % 3) {
      case 0:
        text[at] = static_cast<char>(rng() % 256);
        break;
      case 1:
        text.erase(at, 1);
        break;
      default:
        text.resize(at);
    }
  }
  return text;
}

void expect_read_or_refused(const char* seed, const std::function<void(const std::string&)>& parse,
                            uint32_t rng_seed) {
  std::mt19937 rng(rng_seed);
  const Json j = Json::parse(seed);
  ASSERT_NO_THROW(parse(j.dump()));  // the seed itself is a valid request
  int failures = 0;
  for (int i = 0; i < 3000 && failures < 10; ++i) {
    const std::string body = mutate(j, rng);
    try {
      parse(body);
    } catch (const Error&) {
      // refused with a message
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not an oxi::Error: " << e.what() << "\nbody: " << body;
      ++failures;
    }
  }
}

TEST(RequestFuzz, ChatRequests) {
  expect_read_or_refused(
      kChat, [](const std::string& b) { openai::parse_chat_request(b, {}, 1); }, 1);
}

TEST(RequestFuzz, CompletionRequests) {
  expect_read_or_refused(
      kCompletion, [](const std::string& b) { openai::parse_completion_request(b, {}, 1); }, 2);
}

TEST(RequestFuzz, EmbeddingRequests) {
  expect_read_or_refused(
      kEmbedding, [](const std::string& b) { openai::parse_embedding_request(b); }, 3);
}

TEST(RequestFuzz, AnthropicMessages) {
  expect_read_or_refused(
      kMessages, [](const std::string& b) { anthropic::parse_messages_request(b, {}, 1); }, 4);
}

TEST(RequestFuzz, ResponsesRequests) {
  expect_read_or_refused(
      kResponses, [](const std::string& b) { responses::parse_responses_request(b, {}, 1); }, 5);
}

}  // namespace
}  // namespace oxi::llm
