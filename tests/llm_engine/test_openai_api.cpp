// lib/llm/openai_api.h: OpenAI-style request bodies into messages / prompt and GenerateOptions
// (each field, the server's defaults where a field is absent, errors naming the field), and
// the responses, chunks and errors in the shapes OpenAI's clients read.
#include <gtest/gtest.h>

#include <string>

#include "lib/core/error.h"
#include "lib/llm/json_schema_grammar.h"
#include "lib/llm/openai_api.h"

namespace oxi::llm::openai {
namespace {

std::string error_of(const std::string& body, bool chat = true) {
  try {
    chat ? parse_chat_request(body, {}, 1) : parse_completion_request(body, {}, 1);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(OpenAiApi, ChatRequestFieldsBecomeOptions) {
  GenerateOptions defaults;
  defaults.sampling.temperature = 0.3f;
  defaults.sampling.top_k = 7;
  defaults.max_tokens = 99;
  defaults.stop = {"END"};
  const Request r = parse_chat_request(
      R"({"model": "x", "messages": [{"role": "system", "content": "be brief"},
          {"role": "user", "content": [{"type": "text", "text": "hel"}, {"type": "text",
          "text": "lo"}]}, {"role": "assistant", "content": null}],
          "max_tokens": 12, "top_p": 0.5, "min_p": 0.1, "presence_penalty": 0.25,
          "frequency_penalty": 0.5, "repeat_penalty": 1.1, "repeat_last_n": 32, "seed": 42,
          "stop": ["\n\n", "###"], "logit_bias": {"15": -100, "7": 2.5}, "stream": true,
          "n": 1, "user": "ignored"})",
      defaults, 1234);
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "hello");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(r.options.max_tokens, 12);
  EXPECT_FLOAT_EQ(r.options.sampling.temperature, 0.3f);  // the server's default kept
  EXPECT_EQ(r.options.sampling.top_k, 7);
  EXPECT_FLOAT_EQ(r.options.sampling.top_p, 0.5f);
  EXPECT_FLOAT_EQ(r.options.sampling.min_p, 0.1f);
  EXPECT_FLOAT_EQ(r.options.sampling.presence_penalty, 0.25f);
  EXPECT_FLOAT_EQ(r.options.sampling.frequency_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.options.sampling.repeat_penalty, 1.1f);
  EXPECT_EQ(r.options.sampling.repeat_last_n, 32);
  EXPECT_EQ(r.options.sampling.seed, 42u);
  EXPECT_EQ(r.options.stop, (std::vector<std::string>{"\n\n", "###"}));
  ASSERT_EQ(r.options.sampling.logit_bias.size(), 2u);
  EXPECT_EQ(r.options.sampling.logit_bias[0].id, 15);
  EXPECT_FLOAT_EQ(r.options.sampling.logit_bias[0].bias, -100.0f);
  EXPECT_TRUE(r.stream);

  // Absent fields: the defaults, the random seed given; max_completion_tokens and n_predict.
  const Request plain = parse_chat_request(R"({"messages": [{"role": "user", "content": "hi"}],
          "temperature": 0, "max_completion_tokens": 5, "stop": "x"})",
                                           defaults, 1234);
  EXPECT_EQ(plain.options.sampling.seed, 1234u);
  EXPECT_FLOAT_EQ(plain.options.sampling.temperature, 0.0f);
  EXPECT_EQ(plain.options.max_tokens, 5);
  EXPECT_EQ(plain.options.stop, (std::vector<std::string>{"x"}));
  EXPECT_FALSE(plain.stream);
  EXPECT_EQ(parse_chat_request(R"({"messages": [{"role": "user"}], "n_predict": -1})", defaults, 1)
                .options.max_tokens,
            -1);
}

// logprobs: chat's true and top_logprobs, the legacy completions' number; the responses' shapes.
TEST(OpenAiApi, LogprobsRequestsAndResponses) {
  const std::string user = R"("messages": [{"role": "user", "content": "x"}])";
  EXPECT_EQ(parse_chat_request("{" + user + "}", {}, 1).options.logprobs, -1);
  EXPECT_EQ(parse_chat_request("{" + user + R"(, "logprobs": true})", {}, 1).options.logprobs, 0);
  EXPECT_EQ(parse_chat_request("{" + user + R"(, "logprobs": true, "top_logprobs": 3})", {}, 1)
                .options.logprobs,
            3);
  EXPECT_EQ(parse_chat_request("{" + user + R"(, "logprobs": false})", {}, 1).options.logprobs, -1);
  EXPECT_NE(error_of("{" + user + R"(, "top_logprobs": 3})").find("needs logprobs: true"),
            std::string::npos);
  EXPECT_NE(error_of("{" + user + R"(, "logprobs": true, "top_logprobs": 21})").find("0..20"),
            std::string::npos);
  EXPECT_EQ(parse_completion_request(R"({"prompt": "a", "logprobs": 2})", {}, 1).options.logprobs,
            2);

  TurnStats stats;
  stats.text = "ab";
  stats.generated_tokens = 2;
  stats.logprobs = {{7, -0.5f, {{7, -0.5f}, {9, -1.5f}}}, {8, -0.25f, {{8, -0.25f}, {3, -2.0f}}}};
  const PieceText piece = [](int32_t id) {
    return id == 7 ? std::string("a") : id == 8 ? "b" : "?";
  };
  const Identity who{"x", 1, "m"};
  const Json chat = chat_response(who, stats, &piece)["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(chat.size(), 2u);
  EXPECT_EQ(chat[0]["token"], "a");
  EXPECT_FLOAT_EQ(chat[0]["logprob"].get<float>(), -0.5f);
  EXPECT_EQ(chat[0]["bytes"], Json::array({97}));
  EXPECT_EQ(chat[1]["top_logprobs"][1]["token"], "?");
  EXPECT_FLOAT_EQ(chat[1]["top_logprobs"][1]["logprob"].get<float>(), -2.0f);
  EXPECT_TRUE(chat_response(who, stats)["choices"][0]["logprobs"].is_null());
  const Json text = completion_response(who, stats, &piece)["choices"][0]["logprobs"];
  EXPECT_EQ(text["tokens"], Json::array({"a", "b"}));
  EXPECT_EQ(text["text_offset"], Json::array({0, 1}));
  EXPECT_FLOAT_EQ(text["top_logprobs"][0]["?"].get<float>(), -1.5f);
  // Streamed: the last chunk carries the whole reply's, the pieces before none.
  EXPECT_EQ(chat_chunk(who, Json::object(), &stats, false, &piece)["choices"][0]["logprobs"],
            chat_response(who, stats, &piece)["choices"][0]["logprobs"]);
  EXPECT_FALSE(chat_chunk(who, {{"content", "a"}}, nullptr, false, &piece)["choices"][0].contains(
      "logprobs"));
  EXPECT_EQ(completion_chunk(who, "", &stats, &piece)["choices"][0]["logprobs"], text);
}

TEST(OpenAiApi, ResponseFormatAndGrammarBecomeTheGrammar) {
  const auto grammar = [](const std::string& extra) {
    return parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}], )" + extra + "}",
                              {}, 1)
        .options.grammar;
  };
  EXPECT_EQ(grammar(R"("response_format": {"type": "json_object"})"),
            json_schema_to_gbnf(R"({"type": "object"})"));
  const std::string schema = R"({"type": "object", "properties": {"a": {"type": "integer"}}})";
  EXPECT_EQ(grammar(R"("response_format": {"type": "json_schema", "json_schema": {"name": "n",
      "schema": )" + schema +
                    "}}"),
            json_schema_to_gbnf(schema));
  EXPECT_EQ(grammar(R"("response_format": {"type": "text"})"), "");
  EXPECT_EQ(grammar(R"("grammar": "root ::= \"yes\"")"), "root ::= \"yes\"");
  EXPECT_EQ(grammar(R"("json_schema": )" + schema), json_schema_to_gbnf(schema));  // llama-server's
}

TEST(OpenAiApi, MalformedRequestsNameTheField) {
  EXPECT_NE(error_of("{").find("not JSON"), std::string::npos);
  EXPECT_NE(error_of("[]").find("a JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"({"messages": []})").find("messages must be a non-empty list"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"messages": [{"content": "x"}]})").find("messages[0] needs a role"),
            std::string::npos);
  const std::string user = R"("messages": [{"role": "user", "content": "x"}])";
  EXPECT_NE(
      error_of("{" + user + R"(, "temperature": "hot"})").find("temperature must be a number"),
      std::string::npos);
  EXPECT_NE(error_of("{" + user + R"(, "max_tokens": 1.5})").find("max_tokens must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of("{" + user + R"(, "stop": [1]})").find("stop must be"), std::string::npos);
  EXPECT_NE(error_of("{" + user + R"(, "logit_bias": {"x1": 1}})").find("'x1' is not a token id"),
            std::string::npos);
  EXPECT_NE(error_of("{" + user + R"(, "n": 2})").find("n: one choice"), std::string::npos);
  const std::string tool = R"({"type": "function", "function": {"name": "f"}})";
  EXPECT_EQ(error_of("{" + user + R"(, "tools": [)" + tool + "]}"), "<no error>");
  EXPECT_EQ(error_of("{" + user + R"(, "tools": []})"), "<no error>");
  EXPECT_NE(error_of("{" + user + R"(, "tools": {}})").find("tools must be a list"),
            std::string::npos);
  EXPECT_NE(error_of("{" + user + R"(, "tools": [{"type": "function"}]})").find("tools[0] must be"),
            std::string::npos);
  EXPECT_NE(error_of("{" + user + R"(, "tools": [)" + tool + R"(], "tool_choice": "always"})")
                .find("tool_choice must be"),
            std::string::npos);
  EXPECT_NE(error_of("{" + user + R"(, "tools": [)" + tool +
                     R"(], "tool_choice": {"type": "function", "function": {"name": "g"}}})")
                .find("tool_choice names no tool on offer: g"),
            std::string::npos);
  EXPECT_NE(error_of("{" + user + R"(, "tools": [)" + tool + R"(], "parallel_tool_calls": 1})")
                .find("parallel_tool_calls must be"),
            std::string::npos);
  EXPECT_NE(error_of("{" + user + R"(, "response_format": {"type": "xml"}})")
                .find("response_format.type"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})")
                .find("only text parts"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"prompt": 3})", false).find("prompt must be a string"), std::string::npos);
  EXPECT_EQ(error_of(R"({"prompt": "once"})", false), "<no error>");
}

TEST(OpenAiApi, ToolsToolChoiceAndToolMessages) {
  const std::string f = R"({"type": "function", "function": {"name": "f", "parameters":
                             {"type": "object", "properties": {"a": {"type": "integer"}}}}})";
  const std::string g = R"({"type": "function", "function": {"name": "g"}})";
  const std::string messages = R"("messages": [
      {"role": "user", "content": "call f"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "f", "arguments": "{\"a\": 1}"}}, {"id": "call_2", "type": "function",
        "function": {"name": "f", "arguments": "not json"}}]},
      {"role": "tool", "tool_call_id": "call_1", "name": "f", "content": "42"}])";
  const Request r =
      parse_chat_request("{" + messages + R"(, "tools": [)" + f + ", " + g + "]}", {}, 1);
  ASSERT_TRUE(r.tools.has_value());
  EXPECT_EQ(r.tools->tools.size(), 2u);
  EXPECT_EQ(r.tools->choice, ToolChoice::automatic);
  EXPECT_FALSE(r.tools->parallel);  // llama-server's default
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_TRUE(r.messages[0].fields.is_null());
  EXPECT_EQ(r.messages[1].role, "assistant");
  EXPECT_EQ(r.messages[1].content, "");
  EXPECT_TRUE(r.messages[1].fields.contains("content"));  // null: the template sees None
  EXPECT_TRUE(r.messages[1].fields["content"].is_null());
  // Arguments text that holds JSON reaches the template as that object; other text stays.
  EXPECT_EQ(r.messages[1].fields["tool_calls"][0]["function"]["arguments"], Json({{"a", 1}}));
  EXPECT_EQ(r.messages[1].fields["tool_calls"][1]["function"]["arguments"], "not json");
  EXPECT_EQ(r.messages[1].fields["tool_calls"][0]["id"], "call_1");
  EXPECT_EQ(r.messages[2].content, "42");
  EXPECT_EQ(r.messages[2].fields, Json({{"tool_call_id", "call_1"}, {"name", "f"}}));

  const Request named =
      parse_chat_request("{" + messages + R"(, "tools": [)" + f + ", " + g +
                             R"(], "tool_choice": {"type": "function", "function": {"name": "g"}},
              "parallel_tool_calls": true})",
                         {}, 1);
  ASSERT_TRUE(named.tools.has_value());
  EXPECT_EQ(named.tools->choice, ToolChoice::required);
  ASSERT_EQ(named.tools->tools.size(), 1u);
  EXPECT_EQ(named.tools->tools[0]["function"]["name"], "g");
  EXPECT_TRUE(named.tools->parallel);
  for (const auto& [text, choice] : {std::pair{"auto", ToolChoice::automatic},
                                     {"none", ToolChoice::none},
                                     {"required", ToolChoice::required}}) {
    const Request c = parse_chat_request(
        "{" + messages + R"(, "tools": [)" + g + R"(], "tool_choice": ")" + text + "\"}", {}, 1);
    EXPECT_EQ(c.tools->choice, choice) << text;
  }
  EXPECT_FALSE(parse_chat_request("{" + messages + "}", {}, 1).tools.has_value());
}

TEST(OpenAiApi, ToolCallResponsesAndChunks) {
  TurnStats stats;
  stats.text = "<tool_call>...</tool_call>";
  stats.stop_reason = StopReason::eos;
  const Identity who{"chatcmpl-8", 1700000000, "tiny"};
  AssistantReply reply{"", "", {{"f", R"({"a":1})", "call_x"}, {"g", "{}", ""}}};
  name_tool_calls(reply.calls, [n = 0u]() mutable { return n++; });
  EXPECT_EQ(reply.calls[0].id, "call_x");  // the model's own id stays
  ASSERT_EQ(reply.calls[1].id.size(), 5u + 24u);
  EXPECT_EQ(reply.calls[1].id.substr(0, 5), "call_");
  EXPECT_EQ(reply.calls[1].id.substr(5, 3), "abc");
  const Json r = chat_response(who, stats, nullptr, &reply);
  const Json& message = r["choices"][0]["message"];
  EXPECT_TRUE(message["content"].is_null());
  ASSERT_EQ(message["tool_calls"].size(), 2u);
  EXPECT_EQ(message["tool_calls"][0],
            Json({{"id", "call_x"},
                  {"type", "function"},
                  {"function", {{"name", "f"}, {"arguments", R"({"a":1})"}}}}));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");
  const Json delta = tool_calls_delta(reply.calls);
  EXPECT_EQ(delta["tool_calls"][1]["index"], 1);
  EXPECT_EQ(delta["tool_calls"][1]["function"]["name"], "g");
  EXPECT_EQ(chat_chunk(who, Json::object(), &stats, true)["choices"][0]["finish_reason"],
            "tool_calls");
  // A reply without calls: its content, no tool_calls, the plain finish reason.
  const AssistantReply plain{"just text", "", {}};
  const Json p = chat_response(who, stats, nullptr, &plain);
  EXPECT_EQ(p["choices"][0]["message"]["content"], "just text");
  EXPECT_FALSE(p["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(p["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(p["choices"][0]["message"].contains("reasoning_content"));
  const AssistantReply both{"Let me look.", "They want f.", {{"f", "{}", "call_y"}}};
  const Json b = chat_response(who, stats, nullptr, &both)["choices"][0]["message"];
  EXPECT_EQ(b["content"], "Let me look.");
  EXPECT_EQ(b["reasoning_content"], "They want f.");
}

TEST(OpenAiApi, ResponsesChunksAndErrors) {
  TurnStats stats;
  stats.text = "Hi there";
  stats.stop_reason = StopReason::max_tokens;
  stats.prompt_ids = {1, 2, 3, 4};
  stats.generated_tokens = 2;
  const Identity who{"chatcmpl-7", 1700000000, "tiny"};
  const Json r = chat_response(who, stats);
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["id"], "chatcmpl-7");
  EXPECT_EQ(r["model"], "tiny");
  EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(r["choices"][0]["message"]["content"], "Hi there");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(r["usage"]["completion_tokens"], 2);
  EXPECT_EQ(r["usage"]["total_tokens"], 6);
  const Json first = chat_chunk(who, {{"role", "assistant"}}, nullptr);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(first.contains("usage"));
  stats.stop_reason = StopReason::stop_string;
  stats.stop_string = "###";
  const Json last = chat_chunk(who, Json::object(), &stats);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(last["usage"]["total_tokens"], 6);
  EXPECT_EQ(completion_response(who, stats)["choices"][0]["text"], "Hi there");
  EXPECT_EQ(completion_response(who, stats)["object"], "text_completion");
  EXPECT_EQ(completion_chunk(who, "ab", nullptr)["choices"][0]["text"], "ab");
  for (StopReason s : {StopReason::eos, StopReason::stop_string, StopReason::choice})
    EXPECT_STREQ(finish_reason(s), "stop");
  EXPECT_STREQ(finish_reason(StopReason::context_full), "length");
  const Json piece = native_completion("tiny", "ab", nullptr);
  EXPECT_EQ(piece["content"], "ab");
  EXPECT_EQ(piece["stop"], false);
  EXPECT_FALSE(piece.contains("stop_type"));
  const Json whole = native_completion("tiny", "Hi there", &stats);  // a stop string ended it
  EXPECT_EQ(whole["stop"], true);
  EXPECT_EQ(whole["stop_type"], "word");
  EXPECT_EQ(whole["stopping_word"], "###");
  EXPECT_EQ(whole["tokens_predicted"], 2);
  EXPECT_EQ(whole["tokens_evaluated"], 4);
  const Json e = error_body(400, "bad thing");
  EXPECT_EQ(e["error"]["message"], "bad thing");
  EXPECT_EQ(e["error"]["type"], "invalid_request_error");
  EXPECT_EQ(error_body(401, "")["error"]["type"], "authentication_error");
}

}  // namespace
}  // namespace oxi::llm::openai
