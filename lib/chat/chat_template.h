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
  std::string role;  // "system", "user", "assistant", "tool"
  std::string content;
  // The message's other fields as a client gave them (an assistant's tool_calls, a tool
  // result's tool_call_id and name, ...), passed to the template beside role and content as
  // transformers passes a message dict; a "content" here (null for an assistant message that
  // only calls tools) replaces the one above. null: none.
  jinja::Json fields = nullptr;
};

class ChatTemplate {
 public:
  // Throws oxi::Error on template syntax errors.
  ChatTemplate(std::string_view source, std::string bos_token, std::string eos_token);
  // A named fallback; throws oxi::Error listing the names for an unknown one.
  static ChatTemplate named(std::string_view name, std::string bos_token, std::string eos_token);
  static std::vector<std::string_view> names();

  // Throws oxi::Error when the template raises (e.g. roles out of order). `extra`: more
  // variables for the template (an object: tools, documents, ... as apply_chat_template's
  // keyword arguments), over the defaults (tools and documents None).
  std::string apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                    const jinja::Json& extra = nullptr) const;
  // The template's Jinja text (a fallback's for a named one).
  const std::string& source() const { return source_; }

 private:
  std::shared_ptr<const jinja::Template> template_;
  std::string source_, bos_, eos_;
};

}  // namespace oxi
