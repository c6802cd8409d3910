// The reasoning of thinking models (Qwen3, DeepSeek R1 and its distills, ...): the text they
// write in <think>...</think> before the answer, set apart from the answer as llama-server's
// --reasoning-format deepseek does (OpenAI-style clients read it as reasoning_content).
//
// A reply thinks when it starts (after whitespace) with <think>, or when its prompt ends inside
// an open <think> (templates that open the block for the model, as DeepSeek R1's and Qwen3's
// with thinking forced do). The reasoning is the text up to </think>, whitespace stripped at
// both ends; the content is what follows, its leading whitespace stripped. A block never
// closed (a reply cut by max_tokens) is all reasoning when the prompt opened it, and all
// content when the reply did: llama.cpp's reading of a cut reply.
#pragma once

#include <string>
#include <string_view>

namespace oxi::llm {

struct ReasonedReply {
  std::string reasoning;
  std::string content;
};

// Whether a prompt ends inside an open <think> block (the model's reply starts thinking).
bool prompt_opens_thinking(std::string_view prompt);
// A reply read as above; `opened`: its prompt ended inside <think> (prompt_opens_thinking).
ReasonedReply split_reasoning(std::string_view reply, bool opened);

// What of a streamed reply can go out before it ends, as reasoning and as content: the same
// text split_reasoning gives the whole reply, piece by piece (a tail that could be a tag's
// start, or whitespace the split would strip, waits for the next piece). A reply that opened
// <think> itself and was cut before </think> streams as reasoning what the split then calls
// content; rest() sends that content whole.
class ReasoningStream {
 public:
  explicit ReasoningStream(bool opened);
  // The reasoning and the content to send now, after `piece` joins the reply.
  ReasonedReply feed(std::string_view piece);
  // The rest of `whole` (split_reasoning's of the whole reply) after what feed() gave.
  ReasonedReply rest(const ReasonedReply& whole) const;

 private:
  bool opened_;
  std::string text_;  // the reply so far
  ReasonedReply sent_;
};

}  // namespace oxi::llm
