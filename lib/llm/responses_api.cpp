#include "lib/llm/responses_api.h"

#include <utility>

#include "lib/core/error.h"
#include "lib/llm/json_fields.h"

namespace oxi::llm::responses {
namespace {

[[noreturn]] void bad(const std::string& what) {
  throw Error("request", what);
}

// A message item's content as OpenAI chat content: a string, or text parts.
Json message_content(const Json& content, const std::string& where) {
  if (content.is_string() || content.is_null()) return content.is_null() ? Json("") : content;
  if (!content.is_array()) bad(where + " must be a string or a list of parts");
  Json parts = Json::array();
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string type = string_field(content[i], "type");
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (type == "input_text" || type == "output_text" || type == "text") {
      if (!content[i].contains("text") || !content[i]["text"].is_string())
        bad(at + ": a text part needs its text");
      parts.push_back({{"type", "text"}, {"text", content[i]["text"]}});
    } else if (type != "refusal") {
      bad(at + ": " + (type.empty() ? std::string("a part without a type") : type + " parts") +
          " are not supported");
    }
  }
  return parts;
}

// The input items as OpenAI chat messages.
void add_input(const Json& input, Json& messages) {
  if (input.is_string()) {
    messages.push_back({{"role", "user"}, {"content", input}});
    return;
  }
  if (!input.is_array()) bad("input must be a string or a list of items");
  for (size_t i = 0; i < input.size(); ++i) {
    const Json& item = input[i];
    const std::string where = "input[" + std::to_string(i) + "]";
    if (!item.is_object()) bad(where + " must be an object");
    const std::string type = string_field(item, "type", item.contains("role") ? "message" : "");
    if (type == "message") {
      std::string role = string_field(item, "role");
      if (role == "developer") role = "system";
      if (role != "user" && role != "assistant" && role != "system")
        bad(where + ".role must be user, assistant, system or developer");
      messages.push_back(
          {{"role", role},
           {"content", message_content(item.value("content", Json()), where + ".content")}});
    } else if (type == "function_call") {
      const std::string name = string_field(item, "name");
      if (name.empty()) bad(where + ": a function_call needs a name");
      const Json args = item.value("arguments", Json("{}"));
      const Json call = {
          {"id", string_field(item, "call_id")},
          {"type", "function"},
          {"function",
           {{"name", name}, {"arguments", args.is_string() ? args : Json(args.dump())}}}};
      // Calls right after an assistant message (or other calls) belong to that turn.
      if (!messages.empty() && string_field(messages.back(), "role") == "assistant") {
        Json& turn = messages.back();
        if (!turn.contains("tool_calls")) turn["tool_calls"] = Json::array();
        turn["tool_calls"].push_back(call);
      } else {
        messages.push_back(
            {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", Json::array({call})}});
      }
    } else if (type == "function_call_output") {
      const Json output = item.value("output", Json(""));
      messages.push_back({{"role", "tool"},
                          {"tool_call_id", string_field(item, "call_id")},
                          {"content", output.is_string() ? output : Json(output.dump())}});
    } else if (type != "reasoning") {
      bad(where + ": " + (type.empty() ? std::string("an item without a type") : type + " items") +
          " are not supported");
    }
  }
}

Json chat_tools(const Json& tools) {
  if (!tools.is_array()) bad("tools must be a list");
  Json out = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& t = tools[i];
    const std::string where = "tools[" + std::to_string(i) + "]";
    const std::string type = string_field(t, "type");
    if (type != "function")
      bad(where + ": " +
          (type.empty() ? std::string("a tool without a type")
                        : "the hosted tool \"" + type + "\"") +
          " is not supported");
    if (!t.contains("name") || !t["name"].is_string()) bad(where + ": a function needs a name");
    Json function = {{"name", t["name"]}};
    for (const char* key : {"description", "parameters"})
      if (t.contains(key) && !t[key].is_null()) function[key] = t[key];
    out.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return out;
}

// text.format as OpenAI chat's response_format.
void add_text_format(const Json& text, Json& oai) {
  if (!text.is_object() || !text.contains("format")) return;
  const Json& format = text["format"];
  const std::string type = string_field(format, "type");
  if (type == "json_object") {
    oai["response_format"] = {{"type", "json_object"}};
  } else if (type == "json_schema") {
    if (!format.contains("schema")) bad("text.format json_schema needs its schema");
    oai["response_format"] = {{"type", "json_schema"},
                              {"json_schema", {{"schema", format["schema"]}}}};
  } else if (type != "text") {
    bad("text.format.type must be text, json_object or json_schema");
  }
}

Json usage(const TurnStats& stats) {
  return {{"input_tokens", stats.prompt_ids.size()},
          {"input_tokens_details", {{"cached_tokens", stats.cached_tokens}}},
          {"output_tokens", stats.generated_tokens},
          {"output_tokens_details", {{"reasoning_tokens", 0}}},
          {"total_tokens", stats.prompt_ids.size() + stats.generated_tokens}};
}

// An output item's id: its kind's prefix, the response's number, its index.
std::string item_id(const openai::Identity& who, const char* prefix, size_t index) {
  const size_t cut = who.id.find('_');
  return std::string(prefix) + "_" + (cut == std::string::npos ? who.id : who.id.substr(cut + 1)) +
         "_" + std::to_string(index);
}

Json message_item(const std::string& id, const std::string& text, const char* status) {
  return {
      {"type", "message"},
      {"id", id},
      {"status", status},
      {"role", "assistant"},
      {"content",
       Json::array({{{"type", "output_text"}, {"text", text}, {"annotations", Json::array()}}})}};
}

Json reasoning_item(const std::string& id, const std::string& text) {
  return {{"type", "reasoning"},
          {"id", id},
          {"summary", Json::array()},
          {"content", Json::array({{{"type", "reasoning_text"}, {"text", text}}})}};
}

Json call_item(const std::string& id, const ToolCall& call, const char* status) {
  return {{"type", "function_call"},     {"id", id},
          {"call_id", call.id},          {"name", call.name},
          {"arguments", call.arguments}, {"status", status}};
}

// The response around its output items; status "in_progress" (no stats yet), "completed" or
// "incomplete" (the reply hit max_output_tokens or the context's end without calling tools).
Json response(const openai::Identity& who, Json output, const TurnStats* stats, bool called) {
  const bool cut = stats && !called &&
                   (stats->stop_reason == StopReason::max_tokens ||
                    stats->stop_reason == StopReason::context_full);
  return {{"id", who.id},
          {"object", "response"},
          {"created_at", who.created},
          {"status", !stats ? "in_progress"
                     : cut  ? "incomplete"
                            : "completed"},
          {"error", nullptr},
          {"incomplete_details", cut ? Json({{"reason", "max_output_tokens"}}) : Json()},
          {"model", who.model},
          {"output", std::move(output)},
          {"usage", stats ? usage(*stats) : Json()}};
}

}  // namespace

Json chat_body(std::string_view body) {
  const Json j = openai::parse_body(body);
  if (j.contains("previous_response_id") && !j["previous_response_id"].is_null())
    bad("previous_response_id is not supported: the server keeps no responses; send the "
        "conversation as input items");
  Json oai = Json::object(), messages = Json::array();
  if (const auto s = j.find("instructions"); s != j.end() && !s->is_null()) {
    if (!s->is_string()) bad("instructions must be a string");
    messages.push_back({{"role", "system"}, {"content", *s}});
  }
  if (!j.contains("input")) bad("input is required");
  add_input(j["input"], messages);
  oai["messages"] = std::move(messages);
  if (j.contains("max_output_tokens") && !j["max_output_tokens"].is_null())
    oai["max_tokens"] = j["max_output_tokens"];
  for (const char* key : {"temperature", "top_p", "stream", "parallel_tool_calls"})
    if (j.contains(key)) oai[key] = j[key];
  if (const auto t = j.find("tools"); t != j.end() && !t->is_null()) oai["tools"] = chat_tools(*t);
  if (const auto c = j.find("tool_choice"); c != j.end() && !c->is_null()) {
    if (field_is(*c, "type", "function") && c->contains("name"))
      oai["tool_choice"] = {{"type", "function"}, {"function", {{"name", (*c)["name"]}}}};
    else
      oai["tool_choice"] = *c;  // "auto", "none", "required"; the chat parser names others
  }
  if (j.contains("text")) add_text_format(j["text"], oai);
  return oai;
}

openai::Request parse_responses_request(std::string_view body, const GenerateOptions& defaults,
                                        uint64_t random_seed) {
  return openai::parse_chat_request(chat_body(body).dump(), defaults, random_seed);
}

Json response_object(const openai::Identity& who, const TurnStats& stats,
                     const AssistantReply& reply) {
  Json output = Json::array();
  if (!reply.reasoning.empty())
    output.push_back(reasoning_item(item_id(who, "rs", output.size()), reply.reasoning));
  if (!reply.content.empty() || (reply.calls.empty() && output.empty()))
    output.push_back(message_item(item_id(who, "msg", output.size()), reply.content, "completed"));
  for (const ToolCall& call : reply.calls)
    output.push_back(call_item(item_id(who, "fc", output.size()), call, "completed"));
  return response(who, std::move(output), &stats, !reply.calls.empty());
}

ServerEvent ResponseStream::event(const char* type, Json fields) {
  Json numbered = {{"sequence_number", sequence_++}};
  for (auto& [key, value] : fields.items()) numbered[key] = std::move(value);
  return typed_event(type, std::move(numbered));
}

ServerEvent ResponseStream::start() {
  return event("response.created", {{"response", response(who_, Json::array(), nullptr, false)}});
}

void ResponseStream::open_item(const char* kind, std::vector<ServerEvent>& out) {
  if (open_ == kind) return;
  close_item(out);
  open_ = kind;
  const bool reasoning = open_ == "reasoning";
  open_id_ = item_id(who_, reasoning ? "rs" : "msg", next_index_);
  Json item = reasoning ? reasoning_item(open_id_, "") : message_item(open_id_, "", "in_progress");
  item["content"] = Json::array();  // its parts come as they are added
  out.push_back(event("response.output_item.added",
                      {{"output_index", next_index_}, {"item", std::move(item)}}));
  if (!reasoning)
    out.push_back(
        event("response.content_part.added",
              {{"item_id", open_id_},
               {"output_index", next_index_},
               {"content_index", 0},
               {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", Json::array()}}}}));
}

void ResponseStream::add_to_item(const char* kind, std::string_view text,
                                 std::vector<ServerEvent>& out) {
  if (text.empty()) return;
  open_item(kind, out);
  text_ += text;
  out.push_back(
      event(open_ == "reasoning" ? "response.reasoning_text.delta" : "response.output_text.delta",
            {{"item_id", open_id_},
             {"output_index", next_index_},
             {"content_index", 0},
             {"delta", text}}));
}

void ResponseStream::close_item(std::vector<ServerEvent>& out) {
  if (open_.empty()) return;
  const bool reasoning = open_ == "reasoning";
  const Json where = {{"item_id", open_id_}, {"output_index", next_index_}, {"content_index", 0}};
  Json done = where;
  done["text"] = text_;
  out.push_back(event(reasoning ? "response.reasoning_text.done" : "response.output_text.done",
                      std::move(done)));
  if (!reasoning) {
    Json part = where;
    part["part"] = {{"type", "output_text"}, {"text", text_}, {"annotations", Json::array()}};
    out.push_back(event("response.content_part.done", std::move(part)));
  }
  Json item =
      reasoning ? reasoning_item(open_id_, text_) : message_item(open_id_, text_, "completed");
  items_.push_back(item);
  out.push_back(event("response.output_item.done",
                      {{"output_index", next_index_++}, {"item", std::move(item)}}));
  open_.clear();
  text_.clear();
}

std::vector<ServerEvent> ResponseStream::add(const ReplyDelta& delta) {
  std::vector<ServerEvent> out;
  add_to_item("reasoning", delta.reasoning, out);
  add_to_item("message", delta.content, out);
  return out;
}

std::vector<ServerEvent> ResponseStream::finish(const TurnStats& stats,
                                                const AssistantReply& reply) {
  std::vector<ServerEvent> out;
  if (items_.empty() && open_.empty() && reply.calls.empty())
    open_item("message", out);  // an empty reply is one empty message
  close_item(out);
  for (const ToolCall& call : reply.calls) {
    const std::string id = item_id(who_, "fc", next_index_);
    Json item = call_item(id, call, "in_progress");
    item["arguments"] = "";
    out.push_back(event("response.output_item.added",
                        {{"output_index", next_index_}, {"item", std::move(item)}}));
    out.push_back(
        event("response.function_call_arguments.delta",
              {{"item_id", id}, {"output_index", next_index_}, {"delta", call.arguments}}));
    out.push_back(
        event("response.function_call_arguments.done",
              {{"item_id", id}, {"output_index", next_index_}, {"arguments", call.arguments}}));
    item = call_item(id, call, "completed");
    items_.push_back(item);
    out.push_back(event("response.output_item.done",
                        {{"output_index", next_index_++}, {"item", std::move(item)}}));
  }
  out.push_back(event("response.completed",
                      {{"response", response(who_, items_, &stats, !reply.calls.empty())}}));
  return out;
}

}  // namespace oxi::llm::responses
