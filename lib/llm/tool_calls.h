// Tool (function) calls in chat replies, as llama.cpp's server offers them with --jinja: the
// tools a client describes (OpenAI's "tools" list) go to the model's own chat template, and the
// reply is read back into content and calls in the form the template's model writes them. The
// form is told from the template's text, as llama.cpp tells it:
//
//   hermes        <tool_call>{"name": "f", "arguments": {...}}</tool_call>, one or more, perhaps
//                 after some content (Hermes 2/3, Qwen 2.5 / 3: templates that write <tool_call>)
//   llama3        {"name": "f", "parameters": {...}} (Llama 3.1-3.3: templates with an ipython
//                 header); the template is told tools_in_user_message = false, as llama.cpp does
//   mistral_nemo  [TOOL_CALLS][{"name": "f", "arguments": {...}, "id": "abcDEF123"}, ...]
//   deepseek_r1   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f
//                 ```json\n{...}\n```<｜tool▁call▁end｜>...<｜tool▁calls▁end｜> (DeepSeek R1 and
//                 its distills: templates that write <｜tool▁calls▁begin｜>)
//   firefunction_v2  " functools[{"name": "f", "arguments": {...}}, ...]" (FireFunction v2; the
//                 template is given the tools as `functions` text and `datetime`)
//   functionary_v3_2  segments "name\n{...}" joined by ">>>", "all\n" ones being content, a
//                 "python\n" one code (Functionary v3.2: templates that write ">>>all")
//   generic       any other template: an added system instruction (with the tools' JSON when the
//                 template does not mention tools) asks for {"tool_call": {"name", "arguments"}}
//                 ({"tool_calls": [...]} with parallel calls) or {"response": "..."}, and a
//                 grammar holds the reply to that JSON.
//
// tool_choice "required" (or a named function) holds every form to calls by a grammar built
// from the tools' parameter schemas (json_schema_grammar.h). With "auto" the reply is free
// until a call opens: hermes, mistral_nemo, deepseek_r1 and firefunction_v2 replies are held
// to the grammar from their marker on (a lazy grammar, GenerateOptions::grammar_triggers, as
// llama.cpp's); llama3 replies from a {"name": at their start (llama.cpp's at_start triggers; a
// call later in the text is read back from free text); generic replies are JSON throughout. A reply
// whose calls do not parse is content, as llama.cpp treats it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lib/chat/chat_template.h"

namespace oxi::llm {

enum class ToolCallFormat {
  generic,
  hermes,
  llama3,
  mistral_nemo,
  deepseek_r1,
  firefunction_v2,
  functionary_v3_2
};
const char* to_string(ToolCallFormat format);
// The form a template's model writes calls in (above).
ToolCallFormat tool_call_format(std::string_view template_source);

enum class ToolChoice { automatic, required, none };

// What a request offers: OpenAI's tools ([{"type": "function", "function": {"name",
// "description", "parameters"}}, ...]; entries of other types are skipped), the choice and
// whether a reply may make several calls (parallel_tool_calls; llama-server's default: no).
struct ToolOffer {
  jinja::Json tools = jinja::Json::array();
  ToolChoice choice = ToolChoice::automatic;
  bool parallel = false;
};

// What a chat turn with tools on offer is given: its messages (the generic instruction added),
// the template's variables (tools, ...), a grammar (empty: none) with the words that start it
// (empty: it holds from the start), stop strings to add; and the form its reply is read in.
struct ToolTurn {
  ToolCallFormat format = ToolCallFormat::generic;
  std::vector<ChatMessage> messages;
  jinja::Json template_variables;
  std::string grammar;
  std::vector<std::string> grammar_triggers;
  bool grammar_triggers_at_start = false;  // they count only at the reply's start
  std::vector<std::string> stop;
};
// Throws oxi::Error("tools", ...) for a tool without a name or with parameters the grammar
// cannot hold (json_schema_grammar.h) when one is built.
ToolTurn offer_tools(const ChatTemplate& chat_template, std::vector<ChatMessage> messages,
                     const ToolOffer& offer);

struct ToolCall {
  std::string name;
  std::string arguments;  // JSON text, as OpenAI's function.arguments
  std::string id;         // as the model wrote it (mistral_nemo), else empty
};

struct ToolReply {
  std::string content;
  std::vector<ToolCall> calls;
};
// A reply read in `format`: its calls and the content beside them. Never throws: a reply that
// does not parse as calls is all content.
ToolReply parse_tool_reply(std::string_view text, ToolCallFormat format);

// What of a streamed reply can go out as content before it ends: for the forms whose calls
// open with a marker (hermes, mistral_nemo, deepseek_r1, firefunction_v2; functionary_v3_2
// replies are held whole, their content having headers), the text before the
// marker, less a tail that could be the marker's start or whitespace before it; llama3 and generic
// replies are held whole (a call is their whole text). The content parse_tool_reply then finds
// begins with what was sent.
class ToolContentStream {
 public:
  explicit ToolContentStream(ToolCallFormat format);
  // The content to send now, after `piece` joins the reply.
  std::string feed(std::string_view piece);
  // The rest of `reply`'s content (parse_tool_reply's) after what feed() gave.
  std::string rest(const ToolReply& reply) const;

 private:
  std::string marker_;  // empty: nothing streams
  std::string text_;    // the reply so far
  size_t sent_ = 0;
  bool held_ = false;  // the marker came: nothing more streams
};

}  // namespace oxi::llm
