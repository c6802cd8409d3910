// The OpenAI-compatible chat and text completion requests and responses `oxinfer serve` speaks
// (as llama.cpp's llama-server does): a request body parsed into messages / a prompt and
// GenerateOptions, and the reply, its streamed chunks and errors as the JSON clients expect.
// No networking here; tools/oxinfer/http_server.h carries them.
//
// Request fields taken (others are ignored, as OpenAI's clients send many): messages (role and
// content, a string or a list of {"type": "text", "text"} parts), prompt (completions),
// max_tokens / max_completion_tokens / n_predict, temperature, top_p, top_k, min_p,
// presence_penalty, frequency_penalty, repeat_penalty, repeat_last_n, seed, stop (a string or a
// list), logit_bias ({"token id": bias}), logprobs (chat: true with top_logprobs 0-20;
// completions: the number of alternatives), grammar (GBNF), response_format ({"type":
// "json_object"} or {"type": "json_schema", "json_schema": {"schema": ...}}), json_schema (a
// schema, llama-server's own field), stream, n (1), and for tool calls (tool_calls.h) tools,
// tool_choice ("auto", "none", "required" or {"type": "function", "function": {"name"}}: that
// one, required) and parallel_tool_calls; messages' other fields (an assistant's tool_calls, a
// tool result's tool_call_id, name) go to the template as ChatMessage::fields, each call's
// arguments text as the object it holds (templates write arguments with tojson, as
// transformers' documents them: a dict); llama-server's chat_template_kwargs and
// reasoning_format.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/llm/assistant_reply.h"
#include "lib/llm/engine.h"
#include "lib/llm/infill.h"
#include "lib/tokenizer/tokenizer.h"

namespace oxi::llm::openai {

using Json = nlohmann::ordered_json;

struct Request {
  std::vector<ChatMessage> messages;  // chat completions
  std::string prompt;                 // text completions
  GenerateOptions options;
  bool stream = false;
  std::optional<ToolOffer> tools;  // chat: a non-empty tools list
  // chat: llama-server's chat_template_kwargs, more variables for the template (an object,
  // e.g. {"enable_thinking": false}); null: none.
  Json template_kwargs;
  // chat: llama-server's reasoning_format: "none" leaves a thinking model's <think> block in
  // the content, "auto" / "deepseek" set it apart as reasoning_content; empty: the server's.
  std::string reasoning_format;
  // llama-server's id_slot: the slot to answer on (oxinfer serve --parallel); -1: any.
  int id_slot = -1;
};

// A request body as a JSON object; throws oxi::Error("request", ...) for one that is not JSON
// or not an object (status 400).
Json parse_body(std::string_view body);

// Fields absent from the body keep `defaults`' values (the server's command-line sampling),
// but the seed: a request without one gets `random_seed`. Throws oxi::Error("request", ...)
// naming the field for a body that is not such a request (status 400).
Request parse_chat_request(std::string_view body, const GenerateOptions& defaults,
                           uint64_t random_seed);
Request parse_completion_request(std::string_view body, const GenerateOptions& defaults,
                                 uint64_t random_seed);

// llama-server's /infill: /completion's fields (prompt optional: the start of the middle, its
// special tokens parsed), input_prefix / input_suffix (text, or a list of token ids and texts),
// input_extra ([{"filename", "text"}]: other files of the project). Texts tokenized as llama.cpp
// does there (no BOS, special tokens as text). Throws oxi::Error("request", ...) (status 400).
struct InfillRequest {
  Request request;
  InfillInput input;
};
InfillRequest parse_infill_request(std::string_view body, const GenerateOptions& defaults,
                                   uint64_t random_seed, const tokenizer::Tokenizer& tok);

// "stop" (an end token, a stop string, a choice) or "length" (max_tokens, a full context);
// "tool_calls" for a reply that calls tools.
const char* finish_reason(StopReason reason, bool called_tools = false);

// One response's identity: its id ("chatcmpl-..." / "cmpl-..."), creation time, model name.
struct Identity {
  std::string id;
  int64_t created = 0;
  std::string model;
};

// A token's text (Tokenizer::token_piece), for logprobs.
using PieceText = std::function<std::string(int32_t)>;

// chat.completion: the assistant message, finish_reason and usage (prompt tokens: the whole
// context the reply followed, cached or not); with `piece` given (the request asked for
// logprobs), choices[0].logprobs.content from stats.logprobs (token, logprob, bytes,
// top_logprobs), else null. With `message` (the reply was read for tool calls or reasoning)
// the message is its content (null when empty beside calls), reasoning_content (when not
// empty) and tool_calls ({"id", "type": "function", "function": {"name", "arguments"}}), the
// ids as given (name_tool_calls() names those without).
Json chat_response(const Identity& who, const TurnStats& stats, const PieceText* piece = nullptr,
                   const AssistantReply* message = nullptr);
// chat.completion.chunk: the first has delta {"role": "assistant"}, then {"content": piece}
// or {"reasoning_content": piece} (tool_calls_delta() for calls), the last an empty delta and
// the finish_reason (and usage; with `piece`, the whole reply's logprobs: the pieces streamed
// before do not carry theirs).
Json chat_chunk(const Identity& who, const Json& delta, const TurnStats* final_stats,
                bool called_tools = false, const PieceText* piece = nullptr);
// A streamed delta with all of a reply's calls, each with its index.
Json tool_calls_delta(const std::vector<ToolCall>& calls);
// Calls the model gave no id get "call_" and 24 letters and digits drawn from `random`.
void name_tool_calls(std::vector<ToolCall>& calls, const std::function<uint32_t()>& random);
// text_completion and its streamed chunks (choices[0].text); with `piece`, the legacy
// logprobs object (tokens, token_logprobs, top_logprobs, text_offset).
Json completion_response(const Identity& who, const TurnStats& stats,
                         const PieceText* piece = nullptr);
Json completion_chunk(const Identity& who, std::string_view text, const TurnStats* final_stats,
                      const PieceText* piece = nullptr);
// llama-server's own /completion: {"content", "stop": false} while streaming; the whole reply
// (or the last, empty piece) with "stop": true, "stop_type" ("eos", "word", "limit"), the
// stop string that ended it ("stopping_word", "" for none),
// tokens_predicted / tokens_evaluated and the model.
Json native_completion(std::string_view model, std::string_view content,
                       const TurnStats* final_stats);
// POST /v1/embeddings: "input" a string, a list of strings, a list of token ids or a list of
// such lists (each item one embedding); "encoding_format" "float" (the default) or "base64".
struct EmbeddingInput {
  std::string text;          // when not given as ids
  std::vector<int32_t> ids;  // token ids given as they are
  bool given_as_ids = false;
};
struct EmbeddingRequest {
  std::vector<EmbeddingInput> inputs;
  bool base64 = false;
};
// Throws oxi::Error("request", ...) naming the field (status 400).
EmbeddingRequest parse_embedding_request(std::string_view body);
// {"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model",
// "usage": {"prompt_tokens", "total_tokens"}}; base64: each embedding its little-endian float32
// bytes in base64, as OpenAI's encoding_format "base64".
Json embeddings_response(std::string_view model, const std::vector<std::vector<float>>& vectors,
                         size_t prompt_tokens, bool base64 = false);

// {"error": {"message", "type", "code"}}, as OpenAI's API reports errors.
Json error_body(int status, std::string_view message);

// The JSON text of a response: bytes that are not UTF-8 (a model's reply can end inside a
// character, or be made of stray bytes) become U+FFFD instead of an error.
std::string dump(const Json& j);

}  // namespace oxi::llm::openai
