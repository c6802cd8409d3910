// Chat templates: turn a conversation into the prompt text a chat model was trained on.
//
// A model's own Jinja template (GGUF `tokenizer.chat_template`, or `chat_template` in
// tokenizer_config.json) is rendered as transformers' apply_chat_template renders it. Models
// without one use a named fallback: llama2, llama3, chatml, gemma, phi3, zephyr, mistral.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/chat/jinja.h"

namespace oxi {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

class ChatTemplate {
 public:
  // Throws oxi::Error on template syntax errors.
  ChatTemplate(std::string_view source, std::string bos_token, std::string eos_token);
  // A named fallback; throws oxi::Error listing the names for an unknown one.
  static ChatTemplate named(std::string_view name, std::string bos_token, std::string eos_token);
  static std::vector<std::string_view> names();

  // Throws oxi::Error when the template raises (e.g. roles out of order).
  std::string apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

 private:
  std::shared_ptr<const jinja::Template> template_;
  std::string bos_, eos_;
};

}  // namespace oxi
