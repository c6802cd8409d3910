// A server-sent event with a type of its own (`event: TYPE` before its `data: JSON`), as
// Anthropic's Messages stream and OpenAI's Responses stream send them (anthropic_api.h,
// responses_api.h); OpenAI's chat chunks are plain `data:` events (openai_api.h).
#pragma once

#include <string>
#include <utility>

#include "lib/llm/openai_api.h"

namespace oxi::llm {

struct ServerEvent {
  std::string type;
  openai::Json data;  // holds "type" too, as both APIs' events do
};

// The event `type` whose data is {"type": type} followed by the members of `fields`.
inline ServerEvent typed_event(const std::string& type, openai::Json fields) {
  openai::Json data = {{"type", type}};
  for (auto& [key, value] : fields.items()) data[key] = std::move(value);
  return {type, std::move(data)};
}

// "event: TYPE\ndata: JSON\n\n"
inline std::string sse(const ServerEvent& e) {
  return "event: " + e.type + "\ndata: " + openai::dump(e.data) + "\n\n";
}

}  // namespace oxi::llm
