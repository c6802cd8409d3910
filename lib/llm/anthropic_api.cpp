#include "lib/llm/anthropic_api.h"

#include <utility>

#include "lib/core/error.h"
#include "lib/llm/json_fields.h"

namespace oxi::llm::anthropic {
namespace {

[[noreturn]] void bad(const std::string& what) {
  throw Error("request", what);
}

// A block's "type", or "" for what is not an object.
std::string block_type(const Json& block) {
  return string_field(block, "type");
}

// The text of a string or of a list of text blocks (others refused), joined as llama-server
// joins them: without a separator.
std::string text_of(const Json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_null()) return "";
  if (!content.is_array()) bad(where + " must be a string or a list of blocks");
  std::string text;
  for (const Json& block : content) {
    if (block_type(block) != "text" || !block.contains("text") || !block["text"].is_string())
      bad(where + ": only text blocks are supported there");
    text += block["text"].get<std::string>();
  }
  return text;
}

// One Anthropic message as OpenAI messages: a user turn's tool results first (each a "tool"
// message), then its text; an assistant turn's text and tool calls in one message.
void add_messages(const Json& m, size_t index, Json& out) {
  const std::string where = "messages[" + std::to_string(index) + "]";
  if (!m.is_object()) bad(where + " must be an object");
  const std::string role = string_field(m, "role");
  if (role != "user" && role != "assistant")
    bad(where + ".role must be \"user\" or \"assistant\", not \"" + role + "\"");
  const Json content = m.value("content", Json());
  if (!content.is_array()) {
    out.push_back({{"role", role}, {"content", text_of(content, where + ".content")}});
    return;
  }
  Json parts = Json::array(), calls = Json::array();
  for (size_t b = 0; b < content.size(); ++b) {
    const Json& block = content[b];
    const std::string type = block_type(block);
    const std::string at = where + ".content[" + std::to_string(b) + "]";
    if (type == "text") {
      parts.push_back({{"type", "text"}, {"text", text_of(Json::array({block}), at)}});
    } else if (type == "tool_use" && role == "assistant") {
      if (!block.contains("name") || !block["name"].is_string())
        bad(at + ": a tool_use block needs a name");
      const Json input = block.value("input", Json::object());
      if (!input.is_object()) bad(at + ": a tool_use block's input must be an object");
      calls.push_back({{"id", string_field(block, "id")},
                       {"type", "function"},
                       {"function", {{"name", block["name"]}, {"arguments", input.dump()}}}});
    } else if (type == "tool_result" && role == "user") {
      out.push_back({{"role", "tool"},
                     {"tool_call_id", string_field(block, "tool_use_id")},
                     {"content", text_of(block.value("content", Json()), at + ".content")}});
    } else if (type == "thinking" || type == "redacted_thinking") {
      // the model's own earlier reasoning: templates drop it from the history
    } else {
      bad(at + ": " + (type.empty() ? std::string("a block without a type") : type + " blocks") +
          " are not supported" + (role == "user" ? "" : " in an assistant's turn"));
    }
  }
  if (parts.empty() && calls.empty()) return;
  Json message = {{"role", role}, {"content", parts.empty() ? Json("") : parts}};
  if (!calls.empty()) message["tool_calls"] = calls;
  out.push_back(std::move(message));
}

Json chat_tools(const Json& tools) {
  if (!tools.is_array()) bad("tools must be a list");
  Json out = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& t = tools[i];
    const std::string where = "tools[" + std::to_string(i) + "]";
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string())
      bad(where + " must be an object with a name");
    const std::string type = string_field(t, "type", "custom");
    if (type != "custom")
      bad(where + ": Anthropic's server tool \"" + type + "\" is not supported");
    Json function = {{"name", t["name"]}, {"parameters", t.value("input_schema", Json::object())}};
    if (t.contains("description")) function["description"] = t["description"];
    out.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return out;
}

// tool_choice as OpenAI's: auto, any (required), none, or one tool by name.
void add_tool_choice(const Json& choice, Json& oai) {
  const std::string type = block_type(choice);
  if (type == "auto")
    oai["tool_choice"] = "auto";
  else if (type == "any")
    oai["tool_choice"] = "required";
  else if (type == "none")
    oai["tool_choice"] = "none";
  else if (type == "tool" && choice.contains("name") && choice["name"].is_string())
    oai["tool_choice"] = {{"type", "function"}, {"function", {{"name", choice["name"]}}}};
  else
    bad("tool_choice must be {\"type\": \"auto\" | \"any\" | \"none\"} or {\"type\": \"tool\", "
        "\"name\"}");
  if (const auto d = choice.find("disable_parallel_tool_use"); d != choice.end() && *d == true)
    oai["parallel_tool_calls"] = false;
}

Json usage(const TurnStats& stats) {
  return {{"input_tokens", stats.prompt_ids.size()},
          {"output_tokens", stats.generated_tokens},
          {"cache_read_input_tokens", stats.cached_tokens}};
}

// stop_reason and stop_sequence (the stop string, when one ended a reply without calls).
Json stop_fields(const TurnStats& stats, bool called_tools) {
  const bool stopped = stats.stop_reason == StopReason::stop_string && !called_tools;
  return {{"stop_reason", stop_reason(stats.stop_reason, called_tools)},
          {"stop_sequence", stopped ? Json(stats.stop_string) : Json()}};
}

// A tool call's input object (the arguments text the model wrote; {} when it is not an
// object, which the tool-call readers do not let through).
Json call_input(const ToolCall& call) {
  Json input = Json::parse(call.arguments, nullptr, false);
  return input.is_object() ? input : Json::object();
}

}  // namespace

Json chat_body(std::string_view body) {
  const Json j = openai::parse_body(body);
  Json oai = Json::object(), messages = Json::array();
  if (const auto s = j.find("system"); s != j.end() && !s->is_null())
    messages.push_back({{"role", "system"}, {"content", text_of(*s, "system")}});
  const auto m = j.find("messages");
  if (m == j.end() || !m->is_array()) bad("messages must be a list");
  for (size_t i = 0; i < m->size(); ++i) add_messages((*m)[i], i, messages);
  oai["messages"] = std::move(messages);
  oai["max_tokens"] = j.contains("max_tokens") ? j["max_tokens"] : Json(4096);
  for (const char* key : {"temperature", "top_p", "top_k", "stream"})
    if (j.contains(key)) oai[key] = j[key];
  if (j.contains("stop_sequences")) oai["stop"] = j["stop_sequences"];
  if (const auto t = j.find("tools"); t != j.end() && !t->is_null()) oai["tools"] = chat_tools(*t);
  if (const auto c = j.find("tool_choice"); c != j.end() && !c->is_null()) add_tool_choice(*c, oai);
  return oai;
}

openai::Request parse_messages_request(std::string_view body, const GenerateOptions& defaults,
                                       uint64_t random_seed) {
  return openai::parse_chat_request(chat_body(body).dump(), defaults, random_seed);
}

const char* stop_reason(StopReason reason, bool called_tools) {
  if (called_tools) return "tool_use";
  switch (reason) {
    case StopReason::max_tokens:
    case StopReason::context_full:
      return "max_tokens";
    case StopReason::stop_string:
      return "stop_sequence";
    default:
      return "end_turn";
  }
}

Json message_response(const openai::Identity& who, const TurnStats& stats,
                      const AssistantReply& reply) {
  Json content = Json::array();
  if (!reply.reasoning.empty())
    content.push_back({{"type", "thinking"}, {"thinking", reply.reasoning}, {"signature", ""}});
  if (!reply.content.empty() || (reply.calls.empty() && content.empty()))
    content.push_back({{"type", "text"}, {"text", reply.content}});
  for (const ToolCall& call : reply.calls)
    content.push_back(
        {{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", call_input(call)}});
  Json message = {{"id", who.id},
                  {"type", "message"},
                  {"role", "assistant"},
                  {"model", who.model},
                  {"content", std::move(content)}};
  message.update(stop_fields(stats, !reply.calls.empty()));
  message["usage"] = usage(stats);
  return message;
}

Event MessageStream::start(size_t input_tokens) const {
  const Json message = {{"id", who_.id},
                        {"type", "message"},
                        {"role", "assistant"},
                        {"model", who_.model},
                        {"content", Json::array()},
                        {"stop_reason", nullptr},
                        {"stop_sequence", nullptr},
                        {"usage", {{"input_tokens", input_tokens}, {"output_tokens", 0}}}};
  return typed_event("message_start", {{"message", message}});
}

void MessageStream::add_to_block(const char* kind, std::string_view text, std::vector<Event>& out) {
  if (text.empty()) return;
  const bool thinking = std::string_view(kind) == "thinking";
  if (open_ != kind) {
    close_block(out);
    Json block = {{"type", kind}, {thinking ? "thinking" : "text", ""}};
    if (thinking) block["signature"] = "";
    out.push_back(typed_event("content_block_start",
                              {{"index", next_index_}, {"content_block", std::move(block)}}));
    open_ = kind;
  }
  const Json delta = {{"type", thinking ? "thinking_delta" : "text_delta"},
                      {thinking ? "thinking" : "text", text}};
  out.push_back(typed_event("content_block_delta", {{"index", next_index_}, {"delta", delta}}));
}

void MessageStream::close_block(std::vector<Event>& out) {
  if (open_.empty()) return;
  out.push_back(typed_event("content_block_stop", {{"index", next_index_++}}));
  open_.clear();
}

std::vector<Event> MessageStream::add(const ReplyDelta& delta) {
  std::vector<Event> out;
  add_to_block("thinking", delta.reasoning, out);
  add_to_block("text", delta.content, out);
  return out;
}

std::vector<Event> MessageStream::finish(const TurnStats& stats,
                                         const std::vector<ToolCall>& calls) {
  std::vector<Event> out;
  close_block(out);
  for (const ToolCall& call : calls) {
    const Json block = {
        {"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", Json::object()}};
    out.push_back(
        typed_event("content_block_start", {{"index", next_index_}, {"content_block", block}}));
    const Json delta = {{"type", "input_json_delta"}, {"partial_json", call_input(call).dump()}};
    out.push_back(typed_event("content_block_delta", {{"index", next_index_}, {"delta", delta}}));
    out.push_back(typed_event("content_block_stop", {{"index", next_index_++}}));
  }
  const Json delta = stop_fields(stats, !calls.empty());
  out.push_back(typed_event("message_delta", {{"delta", delta}, {"usage", usage(stats)}}));
  out.push_back(typed_event("message_stop", Json::object()));
  return out;
}

Json error_body(int status, std::string_view message) {
  const char* type = status == 401   ? "authentication_error"
                     : status == 403 ? "permission_error"
                     : status == 404 ? "not_found_error"
                     : status == 413 ? "request_too_large"
                     : status == 429 ? "rate_limit_error"
                     : status == 503 ? "overloaded_error"
                     : status >= 500 ? "api_error"
                                     : "invalid_request_error";
  return {{"type", "error"}, {"error", {{"type", type}, {"message", message}}}};
}

}  // namespace oxi::llm::anthropic
