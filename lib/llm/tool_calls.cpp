#include "lib/llm/tool_calls.h"

#include <algorithm>
#include <ctime>
#include <optional>
#include <utility>

#include "lib/core/error.h"
#include "lib/llm/gbnf.h"
#include "lib/llm/json_fields.h"
#include "lib/llm/json_schema_grammar.h"

namespace oxi::llm {
namespace {

using Json = jinja::Json;

constexpr std::string_view kHermesOpen = "<tool_call>", kHermesClose = "</tool_call>";
constexpr std::string_view kMistralMarker = "[TOOL_CALLS]";
// DeepSeek R1's markers (full-width bars, U+2581 for spaces), and the other spellings of the
// calls' opening llama.cpp takes.
constexpr std::string_view kR1CallsBegin = "<｜tool▁calls▁begin｜>";
constexpr std::string_view kR1CallsEnd = "<｜tool▁calls▁end｜>";
constexpr std::string_view kR1CallBegin = "<｜tool▁call▁begin｜>";
constexpr std::string_view kR1CallEnd = "<｜tool▁call▁end｜>";
constexpr std::string_view kR1Function = "function<｜tool▁sep｜>";
constexpr std::string_view kR1Opens[] = {kR1CallsBegin, "<｜tool_calls_begin｜>",
                                         "<｜tool calls begin｜>", "<｜tool\\_calls\\_begin｜>",
                                         "<｜tool▁calls｜>"};
constexpr std::string_view kFireFunctionMarker = " functools[";
constexpr std::string_view kFunctionarySeparator = ">>>";

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}
size_t skip_space(std::string_view text, size_t pos) {
  while (pos < text.size() && is_space(text[pos])) ++pos;
  return pos;
}

// Where the JSON value starting at `pos` ends (npos: it does not end in `text`). Only the
// brackets and strings are followed; what is between is checked by the parse that follows.
size_t json_value_end(std::string_view text, size_t pos) {
  if (pos >= text.size()) return std::string_view::npos;
  const char first = text[pos];
  if (first != '{' && first != '[' && first != '"') {  // a number or a literal
    size_t end = pos;
    while (end < text.size() && !is_space(text[end]) &&
           std::string_view(",]}<;").find(text[end]) == std::string_view::npos)
      ++end;
    return end;
  }
  int depth = 0;
  bool in_string = false;
  for (size_t i = pos; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
        if (depth == 0) return i + 1;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

// The JSON value at `pos` and where it ends, if there is a whole one.
std::optional<std::pair<Json, size_t>> json_at(std::string_view text, size_t pos) {
  const size_t end = json_value_end(text, pos);
  if (end == std::string_view::npos) return std::nullopt;
  Json value = Json::parse(text.substr(pos, end - pos), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return std::nullopt;
  return std::make_pair(std::move(value), end);
}

// OpenAI's arguments are JSON text: a string the model wrote stays as it is, other values are
// written out.
std::string arguments_text(const Json& arguments) {
  return arguments.is_string() ? arguments.get<std::string>() : arguments.dump();
}

// A call object {"name": "...", `arguments_key`: ...}, or nothing.
std::optional<ToolCall> call_of(const Json& j, std::initializer_list<const char*> arguments_keys) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return std::nullopt;
  for (const char* key : arguments_keys)
    if (j.contains(key)) {
      ToolCall call{j["name"].get<std::string>(), arguments_text(j[key]), ""};
      if (j.contains("id") && j["id"].is_string()) call.id = j["id"].get<std::string>();
      return call;
    }
  return std::nullopt;
}

// Each item of a JSON list as a call {"name", "arguments"} appended to `calls`; false when one
// is not a call.
bool append_calls(const Json& list, std::vector<ToolCall>& calls) {
  for (const Json& item : list) {
    const std::optional<ToolCall> call = call_of(item, {"arguments"});
    if (!call) return false;
    calls.push_back(*call);
  }
  return true;
}

ToolReply content_only(std::string_view text) {
  return {std::string(text), {}};
}

std::string trim_right(std::string_view text) {
  size_t end = text.size();
  while (end > 0 && is_space(text[end - 1])) --end;
  return std::string(text.substr(0, end));
}

// (content)? <tool_call>{call}</tool_call> ... with only whitespace between and after.
ToolReply parse_hermes(std::string_view text) {
  const size_t open = text.find(kHermesOpen);
  if (open == std::string_view::npos) return content_only(text);
  ToolReply reply{trim_right(text.substr(0, open)), {}};
  size_t pos = open;
  while (pos < text.size()) {
    if (text.substr(pos, kHermesOpen.size()) != kHermesOpen) return content_only(text);
    const auto value = json_at(text, skip_space(text, pos + kHermesOpen.size()));
    const std::optional<ToolCall> call =
        value ? call_of(value->first, {"arguments"}) : std::nullopt;
    if (!call) return content_only(text);
    reply.calls.push_back(*call);
    pos = skip_space(text, value->second);
    if (text.substr(pos, kHermesClose.size()) != kHermesClose) return content_only(text);
    pos = skip_space(text, pos + kHermesClose.size());
  }
  return reply;
}

// Every {"name": ..., "parameters": ...} object in the text (llama.cpp drops the text around
// them once there is one).
ToolReply parse_llama3(std::string_view text) {
  ToolReply reply;
  for (size_t pos = text.find('{'); pos != std::string_view::npos; pos = text.find('{', pos)) {
    const auto value = json_at(text, pos);
    const std::optional<ToolCall> call =
        value ? call_of(value->first, {"parameters", "arguments"}) : std::nullopt;
    if (!call) {
      ++pos;
      continue;
    }
    reply.calls.push_back(*call);
    pos = value->second;
  }
  if (reply.calls.empty()) return content_only(text);
  return reply;
}

// (content)? [TOOL_CALLS][{call}, ...]
ToolReply parse_mistral_nemo(std::string_view text) {
  const size_t marker = text.find(kMistralMarker);
  if (marker == std::string_view::npos) return content_only(text);
  const size_t start = skip_space(text, marker + kMistralMarker.size());
  const auto value = json_at(text, start);
  if (!value || !value->first.is_array() || skip_space(text, value->second) != text.size())
    return content_only(text);
  ToolReply reply{std::string(text.substr(0, marker)), {}};
  if (!append_calls(value->first, reply.calls)) return content_only(text);
  return reply;
}

// (content)? <calls begin> (<call begin>? function<sep>NAME\n```json\n{args}\n```<call end>)+
// <calls end>, whitespace between; a reply cut right after its last call is taken too.
ToolReply parse_deepseek_r1(std::string_view text) {
  size_t open = std::string_view::npos, open_size = 0;
  for (std::string_view marker : kR1Opens)
    if (const size_t at = text.find(marker); at < open) {
      open = at;
      open_size = marker.size();
    }
  if (open == std::string_view::npos) return content_only(text);
  ToolReply reply{trim_right(text.substr(0, open)), {}};
  const auto takes = [&](size_t& pos, std::string_view word) {
    if (text.substr(pos, word.size()) != word) return false;
    pos += word.size();
    return true;
  };
  size_t pos = skip_space(text, open + open_size);
  while (pos < text.size() && !takes(pos, kR1CallsEnd)) {
    takes(pos, kR1CallBegin);
    if (!takes(pos, kR1Function)) return content_only(text);
    const size_t name_end = text.find('\n', pos);
    if (name_end == std::string_view::npos || name_end == pos) return content_only(text);
    ToolCall call{std::string(text.substr(pos, name_end - pos)), "", ""};
    pos = name_end;
    if (!takes(pos, "\n```json\n")) return content_only(text);
    const auto value = json_at(text, pos);
    if (!value) return content_only(text);
    call.arguments = arguments_text(value->first);
    pos = skip_space(text, value->second);
    if (!takes(pos, "```")) return content_only(text);
    pos = skip_space(text, pos);
    if (!takes(pos, kR1CallEnd)) return content_only(text);
    pos = skip_space(text, pos);
    reply.calls.push_back(std::move(call));
  }
  if (reply.calls.empty() || skip_space(text, pos) != text.size()) return content_only(text);
  return reply;
}

// (content)? " functools[{call}, ...]", or the list of calls alone (perhaps after "functools":
// a reply's first space may have been left out of its text).
ToolReply parse_firefunction_v2(std::string_view text) {
  const size_t marker = text.find(kFireFunctionMarker);
  size_t start = skip_space(text, 0);
  ToolReply reply;
  if (marker != std::string_view::npos) {
    reply.content = std::string(text.substr(0, marker));
    start = marker + kFireFunctionMarker.size() - 1;  // at the '['
  } else if (text.substr(start).starts_with(kFireFunctionMarker.substr(1))) {
    start += kFireFunctionMarker.size() - 2;
  }
  const auto value = json_at(text, start);
  if (!value || !value->first.is_array() || value->first.empty() ||
      skip_space(text, value->second) != text.size())
    return content_only(text);
  if (!append_calls(value->first, reply.calls)) return content_only(text);
  return reply;
}

// Segments joined by ">>>", each "HEADER\nbody": "all" is content, "python" code (the body as
// {"code": ...} unless it is JSON), another word a function's name and its JSON arguments. The
// first segment may also be plain content (no header).
ToolReply parse_functionary_v3_2(std::string_view text) {
  ToolReply reply;
  const auto is_word = [](std::string_view w) {
    return !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    });
  };
  size_t pos = 0;
  for (bool first = true; pos <= text.size(); first = false) {
    const size_t next = std::min(text.find(kFunctionarySeparator, pos), text.size());
    const std::string_view segment = text.substr(pos, next - pos);
    const size_t newline = segment.find('\n');
    const std::string_view header =
        newline == std::string_view::npos ? segment : segment.substr(0, newline);
    const std::string_view body =
        newline == std::string_view::npos ? std::string_view() : segment.substr(newline + 1);
    if (header == "all") {
      reply.content += body;
    } else if (is_word(header) && newline != std::string_view::npos) {
      const size_t start = skip_space(body, 0);
      const auto value = json_at(body, start);
      if (value && value->first.is_object() && skip_space(body, value->second) == body.size()) {
        reply.calls.push_back({std::string(header), value->first.dump(), ""});
      } else if (header == "python") {
        reply.calls.push_back({"python", Json{{"code", std::string(body)}}.dump(), ""});
      } else if (first) {
        reply.content += segment;
      } else {
        return content_only(text);
      }
    } else if (first) {
      reply.content += segment;
    } else {
      return content_only(text);
    }
    if (next == text.size()) break;
    pos = next + kFunctionarySeparator.size();
  }
  if (!reply.calls.empty()) reply.content = trim_right(reply.content);  // the space before calls
  return reply;
}

// {"tool_calls": [...]}, {"tool_call": {...}} or {"response": ...}.
ToolReply parse_generic(std::string_view text) {
  const size_t start = skip_space(text, 0);
  const auto value = json_at(text, start);
  if (!value || !value->first.is_object() || skip_space(text, value->second) != text.size())
    return content_only(text);
  const Json& j = value->first;
  ToolReply reply;
  if (j.contains("tool_calls") && j["tool_calls"].is_array()) {
    if (!append_calls(j["tool_calls"], reply.calls)) return content_only(text);
  } else if (j.contains("tool_call")) {
    const std::optional<ToolCall> call = call_of(j["tool_call"], {"arguments"});
    if (!call) return content_only(text);
    reply.calls.push_back(*call);
  } else if (j.contains("response")) {
    const Json& response = j["response"];
    reply.content = response.is_string() ? response.get<std::string>() : response.dump(2);
  } else {
    return content_only(text);
  }
  return reply;
}

// The functions on offer: {"name", "description"?, "parameters"} of each "function" tool.
std::vector<Json> functions_of(const ToolOffer& offer) {
  std::vector<Json> out;
  if (!offer.tools.is_array()) return out;
  for (const Json& tool : offer.tools) {
    if (!field_is(tool, "type", "function") || !tool.contains("function")) continue;
    const Json& f = tool["function"];
    if (!f.is_object() || !f.contains("name") || !f["name"].is_string())
      throw Error("tools", "a function tool needs a name: " + tool.dump());
    out.push_back(f);
  }
  return out;
}

// A function's parameters (any object when it gives none).
Json parameters_of(const Json& function) {
  const auto it = function.find("parameters");
  return it == function.end() || it->is_null() ? Json{{"type", "object"}} : *it;
}

// The schema of one call: {"name": const, `arguments_key`: the parameters} (+ extra properties).
Json call_schema(const Json& function, const char* arguments_key, const Json& extra = {}) {
  Json properties = {{"name", {{"type", "string"}, {"const", function["name"]}}},
                     {arguments_key, parameters_of(function)}};
  Json required = {"name", arguments_key};
  if (extra.is_object())
    for (const auto& [key, schema] : extra.items()) {
      properties[key] = schema;
      required.push_back(key);
    }
  return {{"type", "object"}, {"properties", properties}, {"required", required}};
}

// One of the calls' schemas.
Json any_call(const std::vector<Json>& functions, const char* arguments_key,
              const Json& extra = {}) {
  Json schemas = Json::array();
  for (const Json& f : functions) schemas.push_back(call_schema(f, arguments_key, extra));
  return schemas.size() == 1 ? schemas[0] : Json{{"anyOf", schemas}};
}

// The rules `convert` makes of the tools' schemas, its errors named as the tools'.
template <class Convert>
std::string parameters_rules(const Convert& convert) {
  try {
    return convert();
  } catch (const Error& e) {
    throw Error("tools", std::string("the tools' parameters: ") + e.what());
  }
}

// The rules of `schema` under the name `rule`, the grammar's root given by the caller.
std::string schema_rules(const Json& schema, const std::string& rule) {
  return parameters_rules([&] { return json_schema_to_gbnf(schema.dump(), rule); });
}

// The rules of a call whose function's name is written outside its JSON arguments: each
// function's arguments as the rule tool-I-arguments, and tool-call ::= one of `call(function,
// that rule)`.
template <class Call>
std::string named_call_rules(const std::vector<Json>& functions, const Call& call) {
  std::vector<std::pair<std::string, std::string>> arguments;
  std::string calls;
  for (size_t i = 0; i < functions.size(); ++i) {
    const std::string rule = "tool-" + std::to_string(i) + "-arguments";
    arguments.emplace_back(rule, parameters_of(functions[i]).dump());
    calls += std::string(i ? " | " : "") + "(" + call(functions[i], rule) + ")";
  }
  return parameters_rules([&] { return json_schemas_to_gbnf(arguments); }) +
         "tool-call ::= " + calls + "\n";
}

// The generic form's instruction, as a system message (joined to the first one when there is).
std::vector<ChatMessage> with_instruction(std::vector<ChatMessage> messages,
                                          const std::string& instruction) {
  if (!messages.empty() && messages[0].role == "system")
    messages[0].content += "\n\n" + instruction;
  else
    messages.insert(messages.begin(), ChatMessage{"system", instruction});
  return messages;
}

}  // namespace

const char* to_string(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::generic:
      return "generic";
    case ToolCallFormat::hermes:
      return "hermes";
    case ToolCallFormat::llama3:
      return "llama3";
    case ToolCallFormat::mistral_nemo:
      return "mistral_nemo";
    case ToolCallFormat::deepseek_r1:
      return "deepseek_r1";
    case ToolCallFormat::firefunction_v2:
      return "firefunction_v2";
    case ToolCallFormat::functionary_v3_2:
      return "functionary_v3_2";
  }
  return "?";
}

ToolCallFormat tool_call_format(std::string_view source) {
  // llama.cpp's order of checks (common/chat.cpp), for the forms done here.
  if (source.find(kR1CallsBegin) != std::string_view::npos) return ToolCallFormat::deepseek_r1;
  if (source.find(kHermesOpen) != std::string_view::npos) return ToolCallFormat::hermes;
  if (source.find(">>>all") != std::string_view::npos) return ToolCallFormat::functionary_v3_2;
  if (source.find(kFireFunctionMarker) != std::string_view::npos)
    return ToolCallFormat::firefunction_v2;
  if (source.find("<|start_header_id|>ipython<|end_header_id|>") != std::string_view::npos)
    return ToolCallFormat::llama3;
  if (source.find(kMistralMarker) != std::string_view::npos) return ToolCallFormat::mistral_nemo;
  return ToolCallFormat::generic;
}

ToolTurn offer_tools(const ChatTemplate& chat_template, std::vector<ChatMessage> messages,
                     const ToolOffer& offer) {
  const std::vector<Json> functions = functions_of(offer);
  const ToolCallFormat format = tool_call_format(chat_template.source());
  ToolTurn turn;
  turn.format = format;
  turn.template_variables = {{"tools", functions.empty() ? Json() : offer.tools}};
  if (offer.choice == ToolChoice::none || functions.empty()) {
    if (offer.choice == ToolChoice::required)
      throw Error("tools", "tool_choice is required, but no function is offered");
    turn.messages = std::move(messages);
    return turn;
  }
  const bool required = offer.choice == ToolChoice::required;
  switch (format) {
    case ToolCallFormat::hermes: {
      // "auto": the same grammar, lazy, from the first <tool_call> on.
      const std::string call =
          "(\"<tool_call>\" \"\\n\"? tool-call \"\\n\"? \"</tool_call>\" \"\\n\"?)";
      turn.grammar = schema_rules(any_call(functions, "arguments"), "tool-call") +
                     "root ::= " + call + (offer.parallel ? "+" : "") + "\n";
      if (!required) turn.grammar_triggers.push_back(std::string(kHermesOpen));
      break;
    }
    case ToolCallFormat::llama3: {
      // llama.cpp's: the tools in the system message, not the first user message.
      turn.template_variables["tools_in_user_message"] = false;
      turn.stop.push_back("<|eom_id|>");
      turn.grammar =
          schema_rules(any_call(functions, "parameters"), "tool-call") + "root ::= tool-call\n";
      if (!required) {  // "auto": a call that opens the reply, as llama.cpp's at_start triggers
        turn.grammar_triggers = {"{\"name\":", "{\n  \"name\":", "{\n    \"name\":"};
        turn.grammar_triggers_at_start = true;
      }
      break;
    }
    case ToolCallFormat::mistral_nemo: {
      // Nemo's template expects 9 letters and digits as an id (as llama.cpp holds it).
      const Json id = {{"id", {{"type", "string"}, {"pattern", "^[a-zA-Z0-9]{9}$"}}}};
      Json array = {
          {"type", "array"}, {"items", any_call(functions, "arguments", id)}, {"minItems", 1}};
      if (!offer.parallel) array["maxItems"] = 1;
      turn.grammar = schema_rules(array, "tool-calls") +
                     "root ::= " + gbnf::literal(kMistralMarker) + " tool-calls\n";
      if (!required) turn.grammar_triggers.push_back(std::string(kMistralMarker));
      break;
    }
    case ToolCallFormat::deepseek_r1: {
      // llama.cpp's grammar: one rule per function, its name written before its arguments.
      const std::string calls =
          named_call_rules(functions, [](const Json& f, const std::string& rule) {
            return gbnf::literal(kR1CallBegin) + "? " +
                   gbnf::literal(std::string(kR1Function) + f["name"].get<std::string>() +
                                 "\n```json\n") +
                   " " + rule + " \"\\n\"? " + gbnf::literal("```") + " " +
                   gbnf::literal(kR1CallEnd);
          });
      std::string opens;
      for (std::string_view marker : kR1Opens)
        opens += std::string(opens.empty() ? "" : " | ") + gbnf::literal(marker);
      turn.grammar = calls + "root ::= (" + opens + ") tool-call" +
                     (offer.parallel ? " (\"\\n\"? tool-call)*" : "") + " " +
                     gbnf::literal(kR1CallsEnd) + "\n";
      if (!required)
        for (std::string_view marker : kR1Opens) turn.grammar_triggers.emplace_back(marker);
      break;
    }
    case ToolCallFormat::firefunction_v2: {
      // The template lists the functions from a text of their JSON, and wants the date.
      turn.template_variables["functions"] = Json(functions).dump(2);
      const std::time_t now = std::time(nullptr);
      char date[64];
      std::tm utc{};
      gmtime_r(&now, &utc);
      std::strftime(date, sizeof date, "%b %d %Y %H:%M:%S GMT", &utc);
      turn.template_variables["datetime"] = date;
      Json array = {
          {"type", "array"}, {"items", any_call(functions, "arguments")}, {"minItems", 1}};
      if (!offer.parallel) array["maxItems"] = 1;
      turn.grammar = schema_rules(array, "tool-calls") + "root ::= \" functools\"? tool-calls\n";
      if (!required) turn.grammar_triggers.push_back(std::string(kFireFunctionMarker));
      break;
    }
    case ToolCallFormat::functionary_v3_2: {
      // "NAME\n{arguments}", later calls after ">>>" (the generation prompt ends with one).
      turn.grammar = named_call_rules(functions, [](const Json& f, const std::string& rule) {
        return gbnf::literal(f["name"].get<std::string>() + "\n") + " " + rule;
      });
      // "auto": the grammar holds from a ">>>NAME\n" on, so the separator may open it.
      turn.grammar += "root ::= " + std::string(required ? "" : "\">>>\"? ") + "tool-call" +
                      (offer.parallel ? " (\">>>\" tool-call)*" : "") + "\n";
      if (!required)
        for (const Json& f : functions)
          turn.grammar_triggers.push_back(std::string(kFunctionarySeparator) +
                                          f["name"].get<std::string>() + "\n");
      break;
    }
    case ToolCallFormat::generic: {
      const Json call = any_call(functions, "arguments");
      const Json calls =
          offer.parallel
              ? Json{{"type", "object"},
                     {"properties",
                      {{"tool_calls", {{"type", "array"}, {"items", call}, {"minItems", 1}}}}},
                     {"required", {"tool_calls"}}}
              : Json{{"type", "object"},
                     {"properties", {{"tool_call", call}}},
                     {"required", {"tool_call"}}};
      const Json response = {{"type", "object"},
                             {"properties", {{"response", {{"type", "string"}}}}},
                             {"required", {"response"}}};
      turn.grammar = schema_rules(required ? calls : Json{{"anyOf", {calls, response}}}, "root");
      const char* key = offer.parallel ? "`tool_calls` (a list of requests to call tools)"
                                       : "`tool_call` (a request to call a tool)";
      std::string instruction = required
                                    ? std::string("Respond in JSON format, with ") + key
                                    : std::string("Respond in JSON format, either with ") + key +
                                          " or with `response` (a reply to the user's request)";
      // A template that does not show the tools to the model: the instruction lists them.
      if (chat_template.source().find("tools") == std::string::npos)
        instruction += ". The tools you can call:\n" + Json(functions).dump(2);
      turn.messages = with_instruction(std::move(messages), instruction);
      return turn;
    }
  }
  turn.messages = std::move(messages);
  return turn;
}

ToolReply parse_tool_reply(std::string_view text, ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::hermes:
      return parse_hermes(text);
    case ToolCallFormat::llama3:
      return parse_llama3(text);
    case ToolCallFormat::mistral_nemo:
      return parse_mistral_nemo(text);
    case ToolCallFormat::deepseek_r1:
      return parse_deepseek_r1(text);
    case ToolCallFormat::firefunction_v2:
      return parse_firefunction_v2(text);
    case ToolCallFormat::functionary_v3_2:
      return parse_functionary_v3_2(text);
    case ToolCallFormat::generic:
      return parse_generic(text);
  }
  return content_only(text);
}

ToolContentStream::ToolContentStream(ToolCallFormat format)
    : marker_(format == ToolCallFormat::hermes            ? kHermesOpen
              : format == ToolCallFormat::mistral_nemo    ? kMistralMarker
              : format == ToolCallFormat::deepseek_r1     ? kR1CallsBegin
              : format == ToolCallFormat::firefunction_v2 ? kFireFunctionMarker
                                                          : std::string_view()),
      held_(marker_.empty()) {}

std::string ToolContentStream::feed(std::string_view piece) {
  text_ += piece;
  if (held_) return "";
  size_t end = text_.find(marker_, sent_ > marker_.size() ? sent_ - marker_.size() : 0);
  if (end != std::string::npos) {
    held_ = true;
  } else {
    // A tail that could be the marker's start waits for the next piece.
    end = text_.size();
    for (size_t n = std::min(marker_.size() - 1, text_.size()); n > 0; --n)
      if (std::string_view(text_).substr(text_.size() - n) == marker_.substr(0, n)) {
        end = text_.size() - n;
        break;
      }
  }
  while (end > sent_ && is_space(text_[end - 1])) --end;  // whitespace before a marker
  if (end <= sent_) return "";
  std::string out = text_.substr(sent_, end - sent_);
  sent_ = end;
  return out;
}

std::string ToolContentStream::rest(const ToolReply& reply) const {
  if (reply.content.size() < sent_ || reply.content.compare(0, sent_, text_, 0, sent_) != 0)
    return "";
  return reply.content.substr(sent_);
}

}  // namespace oxi::llm
