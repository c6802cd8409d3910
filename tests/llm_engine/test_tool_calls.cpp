// lib/llm/tool_calls.h: the call form told from a template's text, replies of each form read
// back into content and calls (and malformed ones left as content), the grammars that hold a
// reply to calls (each accepts well-formed calls of the tools on offer and refuses others),
// the generic form's instruction, the content streamed before a call, and a reply of a tiny
// random model under tool_choice "required" that parses as a call of an offered tool.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "lib/core/error.h"
#include "lib/llm/engine.h"
#include "lib/llm/gbnf.h"
#include "lib/llm/grammar_matcher.h"
#include "lib/llm/model.h"
#include "lib/llm/tool_calls.h"
#include "tests/common/test_data.h"
#include "tests/llm_engine/engine_fixture.h"

namespace oxi::llm::test {
namespace {

using Json = jinja::Json;

// Whole-reply check against a grammar.
bool grammar_takes(const std::string& grammar, const std::string& text) {
  GrammarMatcher m(std::make_shared<const gbnf::Grammar>(gbnf::Grammar::parse(grammar)));
  if (!m.accepts(text)) return false;
  m.accept(text);
  return m.can_end();
}

// Templates standing for each form: only the text the form is told from matters here.
const char* const kHermesTemplate =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>\n{\"name\": \"{{ c.function.name "
    "}}\", \"arguments\": {{ c.function.arguments | tojson }}}\n</tool_call>{% endfor %}{% endif "
    "%}<|im_end|>\n{% endfor %}{% if tools %}<tools>{% for t in tools %}{{ t | tojson }}{% endfor "
    "%}</tools>{% endif %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
const char* const kLlama3Template =
    "{{ bos_token }}{% if tools_in_user_message %}IN USER{% endif %}{% for m in messages %}"
    "<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content }}<|eot_id|>{% endfor %}"
    "{# <|start_header_id|>ipython<|end_header_id|> #}";
const char* const kMistralTemplate =
    "{% for m in messages %}[INST]{{ m.content }}[/INST]{% endfor %}{# [TOOL_CALLS] #}";
// DeepSeek R1's template writes the calls' markers; FireFunction v2's ends a reply's calls
// with " functools[" and lists `functions` (a text) and `datetime`.
const char* const kDeepSeekR1Template =
    "{% for m in messages %}<｜{{ m.role }}｜>{{ m.content }}{% endfor %}"
    "{# <｜tool▁calls▁begin｜><｜tool▁call▁begin｜> #}<｜Assistant｜>";
const char* const kFireFunctionTemplate =
    "{{ functions }}|{{ datetime }}|{% for m in messages %}{{ m.role }}: {{ m.content }}\n"
    "{% endfor %}{# functools[ #}";
// Functionary v3.2's generation prompt ends with ">>>"; its template writes ">>>all".
const char* const kFunctionaryTemplate =
    "{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content }}"
    "<|eot_id|>{% endfor %}{# >>>all #}<|start_header_id|>assistant<|end_header_id|>\n\n>>>";
const char* const kPlainTemplate =
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}";

ChatTemplate make_template(const char* source) {
  return ChatTemplate(source, "<s>", "</s>");
}

Json weather_tools() {
  return Json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather now",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                     "days": {"type": "integer", "minimum": 1, "maximum": 7}},
                     "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time",
      "parameters": {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}},
                     "required": ["zone"]}}},
    {"type": "retrieval"}])");
}

ToolOffer offer(ToolChoice choice, bool parallel = false) {
  ToolOffer o;
  o.tools = weather_tools();
  o.choice = choice;
  o.parallel = parallel;
  return o;
}

TEST(ToolCalls, FormatToldFromTheTemplate) {
  EXPECT_EQ(tool_call_format(kHermesTemplate), ToolCallFormat::hermes);
  EXPECT_EQ(tool_call_format(kLlama3Template), ToolCallFormat::llama3);
  EXPECT_EQ(tool_call_format(kMistralTemplate), ToolCallFormat::mistral_nemo);
  EXPECT_EQ(tool_call_format(kPlainTemplate), ToolCallFormat::generic);
  EXPECT_EQ(tool_call_format(kDeepSeekR1Template), ToolCallFormat::deepseek_r1);
  EXPECT_EQ(tool_call_format(kFireFunctionTemplate), ToolCallFormat::firefunction_v2);
  EXPECT_EQ(tool_call_format(kFunctionaryTemplate), ToolCallFormat::functionary_v3_2);
  // R1 first, as llama.cpp checks it first (its templates may mention <tool_call> too).
  EXPECT_EQ(tool_call_format(std::string(kDeepSeekR1Template) + "<tool_call>"),
            ToolCallFormat::deepseek_r1);
  // A Llama 3 header alone is not the tool form: no ipython turn.
  EXPECT_EQ(tool_call_format("<|start_header_id|>user<|end_header_id|>"), ToolCallFormat::generic);
  EXPECT_STREQ(to_string(ToolCallFormat::mistral_nemo), "mistral_nemo");
}

void expect_call(const ToolCall& c, const std::string& name, const Json& arguments,
                 const std::string& id = "") {
  EXPECT_EQ(c.name, name);
  EXPECT_EQ(Json::parse(c.arguments), arguments) << c.arguments;
  EXPECT_EQ(c.id, id);
}

TEST(ToolCalls, HermesRepliesRead) {
  ToolReply r = parse_tool_reply(
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Oslo\"}}\n</tool_call>\n",
      ToolCallFormat::hermes);
  EXPECT_EQ(r.content, "Let me check.");
  ASSERT_EQ(r.calls.size(), 1u);
  expect_call(r.calls[0], "get_weather", {{"city", "Oslo"}});
  r = parse_tool_reply(
      "<tool_call>{\"name\": \"a\", \"arguments\": {\"x\": \"}{\\\"\"}}</tool_call>\n"
      "<tool_call>\n{\"name\": \"b\", \"arguments\": \"{\\\"y\\\": 2}\"}\n</tool_call>",
      ToolCallFormat::hermes);
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.calls.size(), 2u);
  expect_call(r.calls[0], "a", {{"x", "}{\""}});
  expect_call(r.calls[1], "b", {{"y", 2}});  // arguments written as text stay that text
  // Not calls: all content, as llama.cpp leaves them.
  for (const std::string text :
       {"no call here", "<tool_call>{\"name\": \"a\", \"arguments\": {}}",  // not closed
        "<tool_call>{\"name\": \"a\", \"arguments\": {}</tool_call>",       // JSON cut
        "<tool_call>{\"arguments\": {}}</tool_call>",                       // no name
        "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call> and more"}) {
    r = parse_tool_reply(text, ToolCallFormat::hermes);
    EXPECT_EQ(r.content, text);
    EXPECT_TRUE(r.calls.empty()) << text;
  }
}

TEST(ToolCalls, Llama3MistralAndGenericRepliesRead) {
  ToolReply r = parse_tool_reply(
      "{\"type\": \"function\", \"name\": \"get_time\", \"parameters\": {\"zone\": \"UTC\"}}",
      ToolCallFormat::llama3);
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.calls.size(), 1u);
  expect_call(r.calls[0], "get_time", {{"zone", "UTC"}});
  r = parse_tool_reply(
      "Sure: {\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", "
      "\"parameters\": {\"k\": [1, {\"n\": 2}]}}",
      ToolCallFormat::llama3);
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.content, "");  // as llama.cpp: the text around calls is dropped
  expect_call(r.calls[1], "b", {{"k", {1, {{"n", 2}}}}});
  r = parse_tool_reply("The set {1, 2} has {\"size\": 2}", ToolCallFormat::llama3);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, "The set {1, 2} has {\"size\": 2}");

  r = parse_tool_reply(
      "ok[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"q\": 1}, \"id\": \"abcDEF123\"}, "
      "{\"name\": \"b\", \"arguments\": {}}]",
      ToolCallFormat::mistral_nemo);
  EXPECT_EQ(r.content, "ok");
  ASSERT_EQ(r.calls.size(), 2u);
  expect_call(r.calls[0], "a", {{"q", 1}}, "abcDEF123");
  expect_call(r.calls[1], "b", Json::object());
  r = parse_tool_reply("[TOOL_CALLS][{\"name\": \"a\"}]", ToolCallFormat::mistral_nemo);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, "[TOOL_CALLS][{\"name\": \"a\"}]");

  r = parse_tool_reply("{\"tool_call\": {\"name\": \"a\", \"arguments\": {\"z\": null}}}",
                       ToolCallFormat::generic);
  ASSERT_EQ(r.calls.size(), 1u);
  expect_call(r.calls[0], "a", {{"z", nullptr}});
  r = parse_tool_reply(
      " {\"tool_calls\": [{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", "
      "\"arguments\": {\"n\": 1}}]}\n",
      ToolCallFormat::generic);
  ASSERT_EQ(r.calls.size(), 2u);
  expect_call(r.calls[1], "b", {{"n", 1}});
  r = parse_tool_reply("{\"response\": \"Hello there\"}", ToolCallFormat::generic);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, "Hello there");
  r = parse_tool_reply("{\"response\": \"cut", ToolCallFormat::generic);
  EXPECT_EQ(r.content, "{\"response\": \"cut");
}

const std::string kR1Oslo =
    "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Oslo\"}\n```"
    "<｜tool▁call▁end｜>";
const std::string kR1Utc =
    "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{\"zone\": \"UTC\"}\n```"
    "<｜tool▁call▁end｜>";

TEST(ToolCalls, DeepSeekR1AndFireFunctionRepliesRead) {
  ToolReply r = parse_tool_reply(
      "I will look.\n\n<｜tool▁calls▁begin｜>" + kR1Oslo + "\n" + kR1Utc + "<｜tool▁calls▁end｜>",
      ToolCallFormat::deepseek_r1);
  EXPECT_EQ(r.content, "I will look.");
  ASSERT_EQ(r.calls.size(), 2u);
  expect_call(r.calls[0], "get_weather", {{"city", "Oslo"}});
  expect_call(r.calls[1], "get_time", {{"zone", "UTC"}});
  // llama.cpp's other spellings of the opening, a call without its own opening, no closing.
  r = parse_tool_reply(
      "<｜tool_calls_begin｜>function<｜tool▁sep｜>f\n```json\n{}```<｜tool▁call▁end｜>",
      ToolCallFormat::deepseek_r1);
  ASSERT_EQ(r.calls.size(), 1u);
  expect_call(r.calls[0], "f", Json::object());
  for (const std::string& text :
       {std::string("plain"), "<｜tool▁calls▁begin｜>" + kR1Oslo.substr(0, 60),
        std::string(
            "<｜tool▁calls▁begin｜>function<｜tool▁sep｜>\n```json\n{}\n```<｜tool▁call▁end｜>"),
        "<｜tool▁calls▁begin｜>" + kR1Oslo + "<｜tool▁calls▁end｜> more"}) {
    r = parse_tool_reply(text, ToolCallFormat::deepseek_r1);
    EXPECT_TRUE(r.calls.empty()) << text;
    EXPECT_EQ(r.content, text);
  }

  r = parse_tool_reply(
      "Sure. functools[{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}]",
      ToolCallFormat::firefunction_v2);
  EXPECT_EQ(r.content, "Sure.");
  ASSERT_EQ(r.calls.size(), 1u);
  expect_call(r.calls[0], "get_time", {{"zone", "CET"}});
  r = parse_tool_reply(
      "[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", "
      "\"arguments\": {\"n\": 1}}]",
      ToolCallFormat::firefunction_v2);
  ASSERT_EQ(r.calls.size(), 2u);
  expect_call(r.calls[1], "b", {{"n", 1}});
  r = parse_tool_reply("functools[{\"name\": \"a\", \"arguments\": {}}]",
                       ToolCallFormat::firefunction_v2);
  ASSERT_EQ(r.calls.size(), 1u);  // a reply's first space left out of its text
  EXPECT_EQ(r.content, "");
  r = parse_tool_reply(" functools[{\"name\": \"a\"}]", ToolCallFormat::firefunction_v2);
  EXPECT_TRUE(r.calls.empty());
}

TEST(ToolCalls, FunctionaryRepliesGrammarsAndTurns) {
  const ToolCallFormat f = ToolCallFormat::functionary_v3_2;
  ToolReply r = parse_tool_reply(
      "all\nLet me see.\n>>>get_weather\n{\"city\": \"Oslo\"}>>>get_time\n{\"zone\": \"UTC\"}", f);
  EXPECT_EQ(r.content, "Let me see.");
  ASSERT_EQ(r.calls.size(), 2u);
  expect_call(r.calls[0], "get_weather", {{"city", "Oslo"}});
  expect_call(r.calls[1], "get_time", {{"zone", "UTC"}});
  r = parse_tool_reply("get_time\n{\"zone\": \"CET\"}\n", f);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.content, "");
  r = parse_tool_reply("python\nprint(1 + 1)", f);
  ASSERT_EQ(r.calls.size(), 1u);
  expect_call(r.calls[0], "python", {{"code", "print(1 + 1)"}});
  r = parse_tool_reply("all\nJust an answer.", f);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, "Just an answer.");
  for (const std::string& text : {std::string("plain words"), std::string("get_time\n{\"zone\": "),
                                  std::string("get_time\n{}>>>get weather\n{}")}) {
    r = parse_tool_reply(text, f);
    EXPECT_TRUE(r.calls.empty()) << text;
    EXPECT_EQ(r.content, text);
  }

  const std::vector<ChatMessage> messages = {{"user", "weather?"}};
  const ToolTurn required =
      offer_tools(make_template(kFunctionaryTemplate), messages, offer(ToolChoice::required));
  EXPECT_EQ(required.format, f);
  const std::string oslo = "get_weather\n{\"city\": \"Oslo\"}";
  EXPECT_TRUE(grammar_takes(required.grammar, oslo));
  EXPECT_TRUE(grammar_takes(required.grammar, "get_time\n{\"zone\": \"UTC\"}"));
  EXPECT_FALSE(grammar_takes(required.grammar, "get_time\n{\"city\": \"Oslo\"}"));
  EXPECT_FALSE(grammar_takes(required.grammar, oslo + ">>>" + oslo));  // one call
  EXPECT_FALSE(grammar_takes(required.grammar, "all\nhi"));
  EXPECT_TRUE(required.grammar_triggers.empty());
  const ToolTurn parallel =
      offer_tools(make_template(kFunctionaryTemplate), messages, offer(ToolChoice::required, true));
  EXPECT_TRUE(grammar_takes(parallel.grammar, oslo + ">>>" + oslo));
  const ToolTurn automatic =
      offer_tools(make_template(kFunctionaryTemplate), messages, offer(ToolChoice::automatic));
  EXPECT_EQ(automatic.grammar_triggers,
            (std::vector<std::string>{">>>get_weather\n", ">>>get_time\n"}));
  EXPECT_TRUE(grammar_takes(automatic.grammar, ">>>" + oslo));
}

TEST(ToolCalls, DeepSeekR1AndFireFunctionGrammarsAndTurns) {
  const std::vector<ChatMessage> messages = {{"user", "weather?"}};
  const ToolTurn r1 =
      offer_tools(make_template(kDeepSeekR1Template), messages, offer(ToolChoice::required));
  EXPECT_EQ(r1.format, ToolCallFormat::deepseek_r1);
  const std::string begin = "<｜tool▁calls▁begin｜>", end = "<｜tool▁calls▁end｜>";
  EXPECT_TRUE(grammar_takes(r1.grammar, begin + kR1Oslo + end));
  EXPECT_TRUE(grammar_takes(r1.grammar, begin + kR1Utc + end));
  EXPECT_FALSE(grammar_takes(r1.grammar, begin + kR1Oslo + "\n" + kR1Utc + end));  // one call
  EXPECT_FALSE(grammar_takes(r1.grammar, "Sure. " + begin + kR1Oslo + end));
  // The name goes with its own arguments: get_time's zone under get_weather is refused.
  std::string swapped = kR1Utc;
  swapped.replace(swapped.find("get_time"), 8, "get_weather");
  EXPECT_FALSE(grammar_takes(r1.grammar, begin + swapped + end));
  EXPECT_FALSE(grammar_takes(r1.grammar, begin + end));
  EXPECT_TRUE(r1.grammar_triggers.empty());
  const ToolTurn r1_parallel =
      offer_tools(make_template(kDeepSeekR1Template), messages, offer(ToolChoice::required, true));
  EXPECT_TRUE(grammar_takes(r1_parallel.grammar, begin + kR1Oslo + "\n" + kR1Utc + end));
  EXPECT_EQ(parse_tool_reply(begin + kR1Oslo + "\n" + kR1Utc + end, ToolCallFormat::deepseek_r1)
                .calls.size(),
            2u);
  const ToolTurn r1_auto =
      offer_tools(make_template(kDeepSeekR1Template), messages, offer(ToolChoice::automatic));
  EXPECT_EQ(r1_auto.grammar, r1.grammar);
  ASSERT_FALSE(r1_auto.grammar_triggers.empty());
  EXPECT_EQ(r1_auto.grammar_triggers[0], begin);

  const ToolTurn fire =
      offer_tools(make_template(kFireFunctionTemplate), messages, offer(ToolChoice::required));
  EXPECT_EQ(fire.format, ToolCallFormat::firefunction_v2);
  const std::string call = "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}]";
  EXPECT_TRUE(grammar_takes(fire.grammar, " functools" + call));
  EXPECT_TRUE(grammar_takes(fire.grammar, call));
  EXPECT_FALSE(
      grammar_takes(fire.grammar, " functools[{\"name\": \"get_weather\", \"arguments\": {}}]"));
  // The template sees the functions as text and the date.
  const std::string prompt =
      make_template(kFireFunctionTemplate).apply(fire.messages, true, fire.template_variables);
  EXPECT_NE(prompt.find("\"name\": \"get_time\""), std::string::npos) << prompt;
  EXPECT_NE(prompt.find(" GMT|"), std::string::npos) << prompt;
  EXPECT_EQ(
      offer_tools(make_template(kFireFunctionTemplate), messages, offer(ToolChoice::automatic))
          .grammar_triggers,
      std::vector<std::string>{" functools["});
}

// Each form's "required" grammar takes well-formed calls of the offered functions and refuses
// calls of others, arguments off their schema and text around the calls.
TEST(ToolCalls, RequiredGrammarsHoldRepliesToCalls) {
  const std::vector<ChatMessage> messages = {{"user", "weather?"}};
  const ToolTurn hermes =
      offer_tools(make_template(kHermesTemplate), messages, offer(ToolChoice::required));
  EXPECT_EQ(hermes.format, ToolCallFormat::hermes);
  const std::string oslo =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"days\": "
      "3}}\n</tool_call>";
  EXPECT_TRUE(grammar_takes(hermes.grammar, oslo));
  EXPECT_TRUE(grammar_takes(
      hermes.grammar,
      "<tool_call>{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}</tool_call>"));
  EXPECT_FALSE(grammar_takes(hermes.grammar, oslo + oslo));  // one call: parallel is off
  EXPECT_FALSE(grammar_takes(hermes.grammar, "Sure. " + oslo));
  EXPECT_FALSE(grammar_takes(
      hermes.grammar,
      "<tool_call>{\"name\": \"get_time\", \"arguments\": {\"zone\": \"PST\"}}</tool_call>"));
  EXPECT_FALSE(grammar_takes(
      hermes.grammar,
      "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"days\": 3}}</tool_call>"));
  EXPECT_FALSE(grammar_takes(
      hermes.grammar, "<tool_call>{\"name\": \"retrieval\", \"arguments\": {}}</tool_call>"));
  const ToolTurn parallel =
      offer_tools(make_template(kHermesTemplate), messages, offer(ToolChoice::required, true));
  EXPECT_TRUE(grammar_takes(parallel.grammar, oslo + "\n" + oslo));
  EXPECT_EQ(parse_tool_reply(oslo + "\n" + oslo, ToolCallFormat::hermes).calls.size(), 2u);

  const ToolTurn llama3 =
      offer_tools(make_template(kLlama3Template), messages, offer(ToolChoice::required));
  EXPECT_EQ(llama3.format, ToolCallFormat::llama3);
  EXPECT_TRUE(grammar_takes(llama3.grammar,
                            "{\"name\": \"get_time\", \"parameters\": {\"zone\": \"UTC\"}}"));
  EXPECT_FALSE(grammar_takes(llama3.grammar,
                             "{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}}"));
  EXPECT_EQ(llama3.stop, std::vector<std::string>{"<|eom_id|>"});
  EXPECT_EQ(llama3.template_variables["tools_in_user_message"], false);

  const ToolTurn mistral =
      offer_tools(make_template(kMistralTemplate), messages, offer(ToolChoice::required));
  const std::string nemo =
      "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}, \"id\": "
      "\"a1B2c3D4e\"}]";
  EXPECT_TRUE(grammar_takes(mistral.grammar, nemo));
  EXPECT_FALSE(grammar_takes(mistral.grammar, nemo.substr(12)));  // the marker is needed
  EXPECT_FALSE(grammar_takes(mistral.grammar,
                             "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {\"zone\": "
                             "\"UTC\"}, \"id\": \"short\"}]"));

  const ToolTurn generic =
      offer_tools(make_template(kPlainTemplate), messages, offer(ToolChoice::required));
  EXPECT_TRUE(grammar_takes(generic.grammar,
                            "{\"tool_call\": {\"name\": \"get_time\", \"arguments\": {\"zone\": "
                            "\"UTC\"}}}"));
  EXPECT_FALSE(grammar_takes(generic.grammar, "{\"response\": \"hi\"}"));
  const ToolTurn generic_auto =
      offer_tools(make_template(kPlainTemplate), messages, offer(ToolChoice::automatic));
  EXPECT_TRUE(grammar_takes(generic_auto.grammar, "{\"response\": \"hi\"}"));
  EXPECT_TRUE(grammar_takes(generic_auto.grammar,
                            "{\"tool_call\": {\"name\": \"get_weather\", \"arguments\": "
                            "{\"city\": \"Rome\"}}}"));
  // With "auto" the hermes and mistral_nemo grammars wait for their marker anywhere.
  const ToolTurn hermes_auto =
      offer_tools(make_template(kHermesTemplate), messages, offer(ToolChoice::automatic));
  EXPECT_EQ(hermes_auto.grammar, hermes.grammar);
  EXPECT_EQ(hermes_auto.grammar_triggers, std::vector<std::string>{"<tool_call>"});
  EXPECT_TRUE(hermes.grammar_triggers.empty());
  EXPECT_EQ(offer_tools(make_template(kMistralTemplate), messages, offer(ToolChoice::automatic))
                .grammar_triggers,
            std::vector<std::string>{"[TOOL_CALLS]"});
  // llama3: the same grammar from a {"name": that opens the reply.
  const ToolTurn llama3_auto =
      offer_tools(make_template(kLlama3Template), messages, offer(ToolChoice::automatic));
  EXPECT_EQ(llama3_auto.grammar, llama3.grammar);
  EXPECT_TRUE(llama3_auto.grammar_triggers_at_start);
  for (const std::string& trigger : llama3_auto.grammar_triggers) {
    GrammarMatcher m(std::make_shared<const gbnf::Grammar>(gbnf::Grammar::parse(llama3.grammar)));
    EXPECT_TRUE(m.accepts(trigger)) << trigger;  // each can start the grammar
  }
}

TEST(ToolCalls, TurnsGiveTheTemplateTheToolsAndTheGenericInstruction) {
  const std::vector<ChatMessage> messages = {{"system", "Be brief."}, {"user", "time?"}};
  const ToolTurn hermes =
      offer_tools(make_template(kHermesTemplate), messages, offer(ToolChoice::automatic));
  EXPECT_EQ(hermes.messages.size(), 2u);
  EXPECT_EQ(hermes.messages[0].content, "Be brief.");
  EXPECT_EQ(hermes.template_variables["tools"], weather_tools());
  const std::string prompt =
      make_template(kHermesTemplate).apply(hermes.messages, true, hermes.template_variables);
  EXPECT_NE(prompt.find("<tools>{\"type\": \"function\""), std::string::npos) << prompt;

  // The generic form: the instruction joins the system message; this template does not show
  // tools, so the instruction lists them.
  const ToolTurn generic =
      offer_tools(make_template(kPlainTemplate), messages, offer(ToolChoice::automatic));
  ASSERT_EQ(generic.messages.size(), 2u);
  EXPECT_EQ(
      generic.messages[0].content.rfind("Be brief.\n\nRespond in JSON format, either with", 0), 0u);
  EXPECT_NE(generic.messages[0].content.find("\"name\": \"get_weather\""), std::string::npos);
  const ToolTurn inserted =
      offer_tools(make_template(kPlainTemplate), {{"user", "time?"}}, offer(ToolChoice::required));
  ASSERT_EQ(inserted.messages.size(), 2u);
  EXPECT_EQ(inserted.messages[0].role, "system");
  EXPECT_EQ(inserted.messages[0].content.find("either"), std::string::npos);

  // "none": the tools reach the template, nothing else changes.
  const ToolTurn none =
      offer_tools(make_template(kPlainTemplate), messages, offer(ToolChoice::none));
  EXPECT_EQ(none.messages.size(), 2u);
  EXPECT_EQ(none.messages[0].content, "Be brief.");
  EXPECT_TRUE(none.grammar.empty());
  EXPECT_EQ(none.template_variables["tools"], weather_tools());

  ToolOffer nameless = offer(ToolChoice::required);
  nameless.tools.push_back({{"type", "function"}, {"function", {{"description", "?"}}}});
  EXPECT_THROW(offer_tools(make_template(kHermesTemplate), messages, nameless), Error);
  ToolOffer bad_schema = offer(ToolChoice::required);
  bad_schema.tools[0]["function"]["parameters"] = {{"type", "object"}, {"not", {}}};
  EXPECT_THROW(offer_tools(make_template(kHermesTemplate), messages, bad_schema), Error);
}

// The content streamed before the end is where parse_tool_reply's content begins, in every
// split of a reply into pieces, and nothing after a call's marker streams.
TEST(ToolCalls, StreamedContentIsTheParsedContentsStart) {
  const std::vector<std::pair<ToolCallFormat, std::string>> replies = {
      {ToolCallFormat::hermes,
       "Checking the weather.  \n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>"},
      {ToolCallFormat::hermes, "Plain < answer <tool with <tool_cal text"},
      {ToolCallFormat::hermes, "Broken <tool_call>{\"name\": </tool_call>"},
      {ToolCallFormat::mistral_nemo, "So [TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}]"},
      {ToolCallFormat::llama3, "{\"name\": \"f\", \"parameters\": {}}"},
      {ToolCallFormat::generic, "{\"response\": \"hi\"}"},
      {ToolCallFormat::deepseek_r1,
       "Looking. <｜tool▁calls▁begin｜>" + kR1Oslo + "<｜tool▁calls▁end｜>"},
      {ToolCallFormat::deepseek_r1, "A <｜tool but no call"},
      {ToolCallFormat::firefunction_v2, "Fine. functools[{\"name\": \"f\", \"arguments\": {}}]"},
  };
  std::mt19937 rng(3);
  for (const auto& [format, text] : replies) {
    for (int round = 0; round < 50; ++round) {
      ToolContentStream stream(format);
      std::string sent;
      for (size_t pos = 0; pos < text.size();) {
        const size_t n = std::min<size_t>(1 + rng() % 6, text.size() - pos);
        sent += stream.feed(std::string_view(text).substr(pos, n));
        pos += n;
      }
      const ToolReply reply = parse_tool_reply(text, format);
      EXPECT_EQ(sent + stream.rest(reply), reply.content) << text;
      if (!reply.calls.empty()) {
        EXPECT_EQ(sent.find('{'), std::string::npos) << text;  // no call text went out
      }
      if (format == ToolCallFormat::llama3 || format == ToolCallFormat::generic ||
          format == ToolCallFormat::functionary_v3_2) {
        EXPECT_EQ(sent, "") << text;
      }
    }
  }
}

// A tiny random model under tool_choice "required", greedy and sampled: every reply is a call
// of an offered function whose arguments hold to its schema (the form's grammar at work on
// real token pieces, the byte tokens included).
TEST(ToolCalls, RequiredRepliesOfAModelAreCalls) {
  oxi::test::TempDir dir;
  write_tiny_llama(dir.path() / "tiny.gguf");
  for (const char* source :
       {kHermesTemplate, kPlainTemplate, kDeepSeekR1Template, kFireFunctionTemplate}) {
    EngineOptions options;
    options.threads = 1;
    options.n_ctx = 2048;  // the tools' JSON in byte tokens
    const std::filesystem::path file = dir.path() / "template.jinja";
    {
      std::FILE* f = std::fopen(file.c_str(), "wb");
      ASSERT_NE(f, nullptr);
      std::fputs(source, f);
      std::fclose(f);
    }
    options.chat_template = file.string();
    std::unique_ptr<Engine> engine = Engine::load((dir.path() / "tiny.gguf").string(), options);
    ToolOffer o = offer(ToolChoice::required);
    // Bounded arguments, so that a random model's reply ends within max_tokens.
    o.tools[0]["function"]["parameters"]["properties"]["city"]["maxLength"] = 6;
    o.tools[0]["function"]["parameters"]["additionalProperties"] = false;
    for (uint64_t seed = 0; seed < 3; ++seed) {
      const ToolTurn turn = offer_tools(engine->chat_template(), {{"user", "weather?"}}, o);
      GenerateOptions g;
      g.sampling.temperature = seed == 0 ? 0.0f : 0.8f;
      g.sampling.seed = seed;
      g.max_tokens = 400;
      g.grammar = turn.grammar;
      g.template_variables = turn.template_variables;
      engine->new_conversation();
      const TurnStats stats = engine->send(turn.messages, g);
      ASSERT_EQ(stats.stop_reason, StopReason::eos) << stats.text;
      const ToolReply reply = parse_tool_reply(stats.text, turn.format);
      ASSERT_EQ(reply.calls.size(), 1u) << stats.text;
      const ToolCall& call = reply.calls[0];
      const Json arguments = Json::parse(call.arguments);
      if (call.name == "get_weather") {
        ASSERT_TRUE(arguments.contains("city")) << stats.text;
        EXPECT_LE(arguments.size(), 2u);
      } else {
        ASSERT_EQ(call.name, "get_time");
        EXPECT_TRUE(arguments["zone"] == "UTC" || arguments["zone"] == "CET") << stats.text;
      }
    }
  }
}

}  // namespace
}  // namespace oxi::llm::test
