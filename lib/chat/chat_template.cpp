#include "lib/chat/chat_template.h"

#include <array>
#include <utility>

#include "lib/core/error.h"

namespace oxi {
namespace {

// Fallback templates, written from each family's documented prompt format.
constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kNamed = {{
    {"llama2",
     "{% if messages[0]['role'] == 'system' %}{% set system = messages[0]['content'] %}"
     "{% set loop_messages = messages[1:] %}{% else %}{% set system = false %}"
     "{% set loop_messages = messages %}{% endif %}"
     "{% for message in loop_messages %}"
     "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
     "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
     "{% endif %}"
     "{% if loop.index0 == 0 and system != false %}"
     "{% set content = '<<SYS>>\\n' + system + '\\n<</SYS>>\\n\\n' + message['content'] %}"
     "{% else %}{% set content = message['content'] %}{% endif %}"
     "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
     "{% elif message['role'] == 'assistant' %}{{ ' ' + content.strip() + ' ' + eos_token }}"
     "{% endif %}{% endfor %}"},
    {"llama3",
     "{{ bos_token }}{% for message in messages %}"
     "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + "
     "message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
     "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
     "{% endif %}"},
    {"chatml",
     "{% for message in messages %}"
     "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
     "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"},
    {"gemma",
     "{{ bos_token }}{% if messages[0]['role'] == 'system' %}"
     "{% set first_user_prefix = messages[0]['content'] + '\\n\\n' %}"
     "{% set loop_messages = messages[1:] %}{% else %}{% set first_user_prefix = '' %}"
     "{% set loop_messages = messages %}{% endif %}"
     "{% for message in loop_messages %}"
     "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
     "{{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else '') + "
     "message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}"
     "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"},
    {"phi3",
     "{% for message in messages %}"
     "{{ '<|' + message['role'] + '|>\\n' + message['content'] + '<|end|>\\n' }}{% endfor %}"
     "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}{% endif %}"},
    {"zephyr",
     "{% for message in messages %}"
     "{{ '<|' + message['role'] + '|>\\n' + message['content'] + eos_token + '\\n' }}{% endfor %}"
     "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"},
    {"mistral",
     "{{ bos_token }}{% if messages[0]['role'] == 'system' %}"
     "{% set system = messages[0]['content'] + '\\n\\n' %}{% set loop_messages = messages[1:] %}"
     "{% else %}{% set system = '' %}{% set loop_messages = messages %}{% endif %}"
     "{% for message in loop_messages %}"
     "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
     "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
     "{% endif %}{% if message['role'] == 'user' %}"
     "{{ '[INST] ' + (system if loop.first else '') + message['content'] + '[/INST]' }}"
     "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token }}{% endif %}"
     "{% endfor %}"},
}};

}  // namespace

ChatTemplate::ChatTemplate(std::string_view source, std::string bos_token, std::string eos_token)
    : template_(std::make_shared<const jinja::Template>(source)),
      source_(source),
      bos_(std::move(bos_token)),
      eos_(std::move(eos_token)) {}

ChatTemplate ChatTemplate::named(std::string_view name, std::string bos_token,
                                 std::string eos_token) {
  for (const auto& [n, source] : kNamed) {
    if (n == name) return ChatTemplate(source, std::move(bos_token), std::move(eos_token));
  }
  std::string known;
  for (const auto& entry : kNamed) known += (known.empty() ? "" : ", ") + std::string(entry.first);
  throw Error("chat template",
              "unknown template name '" + std::string(name) + "' (known: " + known + ")");
}

std::vector<std::string_view> ChatTemplate::names() {
  std::vector<std::string_view> out;
  for (const auto& entry : kNamed) out.push_back(entry.first);
  return out;
}

std::string ChatTemplate::apply(const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt, const jinja::Json& extra) const {
  jinja::Json msgs = jinja::Json::array();
  for (const ChatMessage& m : messages) {
    jinja::Json msg = {{"role", m.role}, {"content", m.content}};
    if (m.fields.is_object())
      for (const auto& [key, value] : m.fields.items()) msg[key] = value;
    msgs.push_back(std::move(msg));
  }
  // What transformers' apply_chat_template passes without tools or documents: both as None,
  // so `tools is defined` holds there too (functionary's template branches on it).
  jinja::Json context = {
      {"messages", std::move(msgs)}, {"tools", nullptr},
      {"documents", nullptr},        {"add_generation_prompt", add_generation_prompt},
      {"bos_token", bos_},           {"eos_token", eos_}};
  if (extra.is_object())
    for (const auto& [key, value] : extra.items()) context[key] = value;
  return template_->render(context);
}

}  // namespace oxi
