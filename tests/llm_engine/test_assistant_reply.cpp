// lib/llm/reasoning.h and assistant_reply.h: a thinking model's <think> block set apart from
// its answer (opened by the reply or by the prompt, closed or cut), and a reply read as it
// streams: in every split into pieces the deltas join into what the whole reply is read as,
// reasoning, content and tool calls together.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "lib/llm/assistant_reply.h"
#include "lib/llm/reasoning.h"

namespace oxi::llm::test {
namespace {

void expect_split(std::string_view reply, bool opened, const std::string& reasoning,
                  const std::string& content) {
  const ReasonedReply r = split_reasoning(reply, opened);
  EXPECT_EQ(r.reasoning, reasoning) << reply;
  EXPECT_EQ(r.content, content) << reply;
}

TEST(Reasoning, ThinkBlocksSetApart) {
  expect_split("<think>\nplan it\n</think>\n\nThe answer.", false, "plan it", "The answer.");
  expect_split("\n <think>a\n\nb</think>c\n", false, "a\n\nb", "c\n");
  expect_split("plan</think>\nAnswer", true, "plan", "Answer");  // the prompt opened it
  expect_split("<think></think>A", false, "", "A");
  expect_split("  Just an answer", false, "", "Just an answer");
  expect_split("an answer with </think> inside", false, "", "an answer with </think> inside");
  // Cut before </think>: reasoning when the prompt opened the block, content when the reply did.
  expect_split("still thinking ", true, "still thinking", "");
  expect_split("<think>still", false, "", "<think>still");
  EXPECT_TRUE(prompt_opens_thinking("<|im_start|>assistant\n<think>\n"));
  EXPECT_FALSE(prompt_opens_thinking("<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_opens_thinking("<|im_start|>assistant\n"));
  EXPECT_TRUE(prompt_opens_thinking("<think>old</think> ... <think>"));
}

struct Case {
  std::string reply;
  std::optional<ToolCallFormat> tools;
  bool opened;
};

// Deltas of random splits, then finish()'s rest: they join into the whole reply's reading.
TEST(AssistantReply, StreamedDeltasJoinIntoTheWholeReading) {
  const std::vector<Case> cases = {
      {"<think>\nfirst, the plan\n\nthen more</think>\n\nThe answer is 4.", std::nullopt, false},
      {"why not</think>  4", std::nullopt, true},
      {"no thinking at all, < think > either", std::nullopt, false},
      {"<think>I should call</think>\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": "
       "1}}\n</tool_call>",
       ToolCallFormat::hermes, false},
      {"call it</think>Sure. <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>",
       ToolCallFormat::hermes, true},
      {"Text <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>", ToolCallFormat::hermes,
       false},
      {"{\"tool_call\": {\"name\": \"f\", \"arguments\": {}}}", ToolCallFormat::generic, false},
      {"cut short while thinking", std::nullopt, true},
  };
  std::mt19937 rng(11);
  for (const Case& c : cases) {
    for (const bool reasoning : {true, false}) {
      const std::optional<bool> thinking = reasoning ? std::optional<bool>(c.opened) : std::nullopt;
      AssistantReply expected;
      {
        const AssistantReplyReader whole(c.tools, thinking);
        expected = whole.finish(c.reply);
      }
      for (int round = 0; round < 40; ++round) {
        AssistantReplyReader reader(c.tools, thinking);
        ReplyDelta joined;
        for (size_t pos = 0; pos < c.reply.size();) {
          const size_t n = std::min<size_t>(1 + rng() % 5, c.reply.size() - pos);
          const ReplyDelta d = reader.feed(std::string_view(c.reply).substr(pos, n));
          joined.reasoning += d.reasoning;
          joined.content += d.content;
          pos += n;
        }
        ReplyDelta rest;
        const AssistantReply reply = reader.finish(c.reply, &rest);
        EXPECT_EQ(reply.reasoning, expected.reasoning);
        EXPECT_EQ(reply.content, expected.content);
        EXPECT_EQ(joined.reasoning + rest.reasoning, expected.reasoning) << c.reply;
        EXPECT_EQ(joined.content + rest.content, expected.content) << c.reply;
        if (!expected.calls.empty()) {
          EXPECT_EQ(joined.content.find('{'), std::string::npos) << c.reply;  // no call text
        }
      }
    }
  }
  // What the readings are.
  const AssistantReply r =
      AssistantReplyReader(ToolCallFormat::hermes, false).finish(cases[3].reply);
  EXPECT_EQ(r.reasoning, "I should call");
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "f");
  const AssistantReply plain =
      AssistantReplyReader(std::nullopt, std::nullopt).finish(cases[0].reply);
  EXPECT_EQ(plain.content, cases[0].reply);  // no reasoning asked: the block stays content
  EXPECT_EQ(plain.reasoning, "");
}

// A reply that opened <think> itself and was cut: its text streamed as reasoning; the reading
// calls it content, which rest() then sends whole.
TEST(AssistantReply, ACutReplyThatOpenedItsBlock) {
  AssistantReplyReader reader(std::nullopt, false);
  const ReplyDelta d = reader.feed("<think>still going");
  EXPECT_EQ(d.reasoning, "still going");
  ReplyDelta rest;
  const AssistantReply reply = reader.finish("<think>still going", &rest);
  EXPECT_EQ(reply.content, "<think>still going");
  EXPECT_EQ(rest.content, "<think>still going");
  EXPECT_EQ(rest.reasoning, "");
}

}  // namespace
}  // namespace oxi::llm::test
