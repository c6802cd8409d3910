#include "lib/llm/openai_api.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "lib/core/error.h"
#include "lib/llm/json_fields.h"
#include "lib/llm/json_schema_grammar.h"

namespace oxi::llm::openai {
namespace {

[[noreturn]] void bad(const std::string& what) {
  throw Error("request", what);
}

double number(const Json& body, const char* key) {
  const Json& v = body.at(key);
  if (!v.is_number()) bad(std::string(key) + " must be a number");
  return v.get<double>();
}

// A field's value when present and not null.
const Json* field(const Json& body, const char* key) {
  const auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

// A message's content: a string, or the text of a list of content parts.
std::string content_text(const Json& content, size_t index) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_null()) return "";
  if (!content.is_array())
    bad("messages[" + std::to_string(index) + "].content must be a string or a list of parts");
  std::string text;
  for (const Json& part : content) {
    if (!field_is(part, "type", "text") || !part.contains("text") || !part["text"].is_string())
      bad("messages[" + std::to_string(index) + "].content: only text parts are supported");
    text += part["text"].get<std::string>();
  }
  return text;
}

// A message's fields beyond role and content, for the template: an assistant's tool calls with
// their arguments text as the object it holds; a null content as None.
Json message_fields(const Json& m, size_t index) {
  Json fields = Json::object();
  for (const auto& [key, value] : m.items())
    if (key != "role" && (key != "content" || value.is_null())) fields[key] = value;
  if (const auto calls = fields.find("tool_calls"); calls != fields.end()) {
    if (!calls->is_array())
      bad("messages[" + std::to_string(index) + "].tool_calls must be a list");
    for (Json& call : *calls) {
      Json* arguments =
          call.is_object() && call.contains("function") && call["function"].is_object()
              ? &call["function"]["arguments"]
              : nullptr;
      if (!arguments || !arguments->is_string()) continue;
      Json parsed = Json::parse(arguments->get<std::string>(), nullptr, false);
      if (!parsed.is_discarded()) *arguments = std::move(parsed);
    }
  }
  return fields.empty() ? Json() : fields;
}

// tools, tool_choice and parallel_tool_calls: the offer, or none (no tools, or an empty list).
std::optional<ToolOffer> parse_tools(const Json& body) {
  const Json* tools = field(body, "tools");
  if (!tools) return std::nullopt;
  if (!tools->is_array()) bad("tools must be a list");
  if (tools->empty()) return std::nullopt;
  ToolOffer offer;
  offer.tools = *tools;
  for (size_t i = 0; i < tools->size(); ++i) {
    const Json& t = (*tools)[i];
    const Json* f = t.is_object() ? field(t, "function") : nullptr;
    if (!field_is(t, "type", "function") || !f || !f->is_object() || !f->contains("name") ||
        !(*f)["name"].is_string())
      bad("tools[" + std::to_string(i) +
          "] must be {\"type\": \"function\", \"function\": {\"name\", ...}}");
  }
  if (const Json* choice = field(body, "tool_choice")) {
    if (choice->is_string() && *choice == "auto") {
      offer.choice = ToolChoice::automatic;
    } else if (choice->is_string() && *choice == "none") {
      offer.choice = ToolChoice::none;
    } else if (choice->is_string() && *choice == "required") {
      offer.choice = ToolChoice::required;
    } else if (field_is(*choice, "type", "function") && choice->contains("function") &&
               (*choice)["function"].is_object() && (*choice)["function"].contains("name") &&
               (*choice)["function"]["name"].is_string()) {
      const Json name = (*choice)["function"]["name"];
      Json named = Json::array();
      for (const Json& t : *tools)
        if (t["function"]["name"] == name) named.push_back(t);
      if (named.empty()) bad("tool_choice names no tool on offer: " + name.get<std::string>());
      offer.tools = std::move(named);
      offer.choice = ToolChoice::required;
    } else {
      bad("tool_choice must be auto, none, required or {\"type\": \"function\", \"function\": "
          "{\"name\"}}");
    }
  }
  if (const Json* parallel = field(body, "parallel_tool_calls")) {
    if (!parallel->is_boolean()) bad("parallel_tool_calls must be true or false");
    offer.parallel = parallel->get<bool>();
  }
  return offer;
}

// The fields both kinds of request share.
void parse_options(const Json& body, Request& r, uint64_t random_seed, bool chat) {
  GenerateOptions& o = r.options;
  SamplerOptions& s = o.sampling;
  for (const char* key : {"max_tokens", "max_completion_tokens", "n_predict"})
    if (const Json* v = field(body, key)) {
      if (!v->is_number_integer()) bad(std::string(key) + " must be an integer");
      const int64_t n = v->get<int64_t>();
      o.max_tokens = n < 0 || n > std::numeric_limits<int>::max() ? -1 : static_cast<int>(n);
    }
  if (field(body, "temperature")) s.temperature = static_cast<float>(number(body, "temperature"));
  if (field(body, "top_p")) s.top_p = static_cast<float>(number(body, "top_p"));
  if (field(body, "top_k")) s.top_k = static_cast<int>(number(body, "top_k"));
  if (field(body, "min_p")) s.min_p = static_cast<float>(number(body, "min_p"));
  if (field(body, "presence_penalty"))
    s.presence_penalty = static_cast<float>(number(body, "presence_penalty"));
  if (field(body, "frequency_penalty"))
    s.frequency_penalty = static_cast<float>(number(body, "frequency_penalty"));
  if (field(body, "repeat_penalty"))
    s.repeat_penalty = static_cast<float>(number(body, "repeat_penalty"));
  if (field(body, "repeat_last_n"))
    s.repeat_last_n = static_cast<int>(number(body, "repeat_last_n"));
  s.seed = random_seed;
  if (const Json* seed = field(body, "seed")) {
    if (!seed->is_number_integer()) bad("seed must be an integer");
    s.seed = seed->is_number_unsigned() ? seed->get<uint64_t>()
                                        : static_cast<uint64_t>(seed->get<int64_t>());
  }
  if (const Json* stop = field(body, "stop")) {
    o.stop.clear();
    if (stop->is_string()) {
      o.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      for (const Json& s : *stop) {
        if (!s.is_string()) bad("stop must be a string or a list of strings");
        o.stop.push_back(s.get<std::string>());
      }
    } else {
      bad("stop must be a string or a list of strings");
    }
  }
  if (const Json* bias = field(body, "logit_bias")) {
    if (!bias->is_object()) bad("logit_bias must be an object of token ids and biases");
    for (const auto& [id, value] : bias->items()) {
      if (!value.is_number()) bad("logit_bias['" + id + "'] must be a number");
      int32_t token = 0;
      try {
        size_t used = 0;
        token = std::stoi(id, &used);
        if (used != id.size()) throw std::invalid_argument(id);
      } catch (const std::exception&) {
        bad("logit_bias: '" + id + "' is not a token id");
      }
      s.logit_bias.push_back({token, value.get<float>()});
    }
  }
  if (const Json* grammar = field(body, "grammar")) {
    if (!grammar->is_string()) bad("grammar must be a GBNF text");
    o.grammar = grammar->get<std::string>();
  }
  if (const Json* schema = field(body, "json_schema")) {
    if (!schema->is_object() && !schema->is_boolean()) bad("json_schema must be a JSON Schema");
    o.grammar = json_schema_to_gbnf(schema->dump());
  }
  if (const Json* format = field(body, "response_format")) {
    const std::string type = string_field(*format, "type");
    if (type == "json_object") {
      o.grammar = json_schema_to_gbnf(R"({"type": "object"})");
    } else if (type == "json_schema") {
      const Json* spec = field(*format, "json_schema");
      const Json* schema = spec && spec->is_object() ? field(*spec, "schema") : nullptr;
      if (!schema) bad("response_format json_schema needs json_schema.schema");
      o.grammar = json_schema_to_gbnf(schema->dump());
    } else if (type != "text") {
      bad("response_format.type must be text, json_object or json_schema");
    }
  }
  // logprobs: chat's true plus top_logprobs (0-20); the legacy completions' number.
  if (const Json* lp = field(body, "logprobs")) {
    if (chat) {
      if (!lp->is_boolean()) bad("logprobs must be true or false");
      if (lp->get<bool>()) o.logprobs = 0;
    } else {
      if (!lp->is_number_integer() || lp->get<int64_t>() < 0 || lp->get<int64_t>() > 20)
        bad("logprobs must be an integer 0..20");
      o.logprobs = static_cast<int>(lp->get<int64_t>());
    }
  }
  if (const Json* top = field(body, "top_logprobs")) {
    if (!top->is_number_integer() || top->get<int64_t>() < 0 || top->get<int64_t>() > 20)
      bad("top_logprobs must be an integer 0..20");
    if (o.logprobs < 0) bad("top_logprobs needs logprobs: true");
    o.logprobs = static_cast<int>(top->get<int64_t>());
  }
  if (const Json* n = field(body, "n"); n && (!n->is_number_integer() || n->get<int64_t>() != 1))
    bad("n: one choice a request is supported");
  if (const Json* stream = field(body, "stream")) {
    if (!stream->is_boolean()) bad("stream must be true or false");
    r.stream = stream->get<bool>();
  }
  if (const Json* slot = field(body, "id_slot")) {
    if (!slot->is_number_integer() || slot->get<int64_t>() < -1)
      bad("id_slot must be a slot's id, or -1 for any");
    r.id_slot = static_cast<int>(std::min<int64_t>(slot->get<int64_t>(), 1 << 20));
  }
}

Json bytes_of(const std::string& text) {
  Json b = Json::array();
  for (unsigned char c : text) b.push_back(c);
  return b;
}

// chat's choices[0].logprobs: {"content": [{token, logprob, bytes, top_logprobs}]}.
Json chat_logprobs(const TurnStats& stats, const PieceText& piece) {
  Json content = Json::array();
  for (const TokenLogprob& t : stats.logprobs) {
    Json top = Json::array();
    for (const auto& [id, lp] : t.top) {
      const std::string text = piece(id);
      top.push_back({{"token", text}, {"logprob", lp}, {"bytes", bytes_of(text)}});
    }
    const std::string text = piece(t.id);
    content.push_back({{"token", text},
                       {"logprob", t.logprob},
                       {"bytes", bytes_of(text)},
                       {"top_logprobs", top}});
  }
  return {{"content", content}};
}

// The legacy completions' logprobs: parallel lists and each token's offset in the text.
Json completion_logprobs(const TurnStats& stats, const PieceText& piece) {
  Json tokens = Json::array(), token_logprobs = Json::array(), top = Json::array(),
       offsets = Json::array();
  size_t offset = 0;
  for (const TokenLogprob& t : stats.logprobs) {
    const std::string text = piece(t.id);
    tokens.push_back(text);
    token_logprobs.push_back(t.logprob);
    Json alternatives = Json::object();
    for (const auto& [id, lp] : t.top) alternatives[piece(id)] = lp;
    top.push_back(alternatives);
    offsets.push_back(offset);
    offset += text.size();
  }
  return {{"tokens", tokens},
          {"token_logprobs", token_logprobs},
          {"top_logprobs", top},
          {"text_offset", offsets}};
}

Json usage(const TurnStats& stats) {
  const size_t prompt = stats.prompt_ids.size();
  return {{"prompt_tokens", prompt},
          {"completion_tokens", stats.generated_tokens},
          {"total_tokens", prompt + stats.generated_tokens},
          {"prompt_tokens_details", {{"cached_tokens", stats.cached_tokens}}}};
}

// Either kind of request: messages (chat) or a prompt, then the fields both share.
Request parse_request(std::string_view body, const GenerateOptions& defaults, uint64_t random_seed,
                      bool chat) {
  const Json j = parse_body(body);
  Request r;
  r.options = defaults;
  if (chat) {
    const Json* messages = field(j, "messages");
    if (!messages || !messages->is_array() || messages->empty())
      bad("messages must be a non-empty list");
    for (size_t i = 0; i < messages->size(); ++i) {
      const Json& m = (*messages)[i];
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
        bad("messages[" + std::to_string(i) + "] needs a role");
      r.messages.push_back({m["role"].get<std::string>(),
                            content_text(m.value("content", Json()), i), message_fields(m, i)});
    }
    r.tools = parse_tools(j);
    if (const Json* kwargs = field(j, "chat_template_kwargs")) {
      if (!kwargs->is_object()) bad("chat_template_kwargs must be an object");
      r.template_kwargs = *kwargs;
    }
    if (const Json* format = field(j, "reasoning_format")) {
      if (!format->is_string() || (*format != "none" && *format != "auto" && *format != "deepseek"))
        bad("reasoning_format must be none, auto or deepseek");
      r.reasoning_format = format->get<std::string>();
    }
  } else {
    const Json* prompt = field(j, "prompt");
    if (!prompt || !prompt->is_string()) bad("prompt must be a string");
    r.prompt = prompt->get<std::string>();
  }
  parse_options(j, r, random_seed, chat);
  return r;
}

}  // namespace

Json parse_body(std::string_view body) {
  Json j;
  try {
    j = Json::parse(body);
  } catch (const Json::exception& e) {
    bad(std::string("the body is not JSON: ") + e.what());
  }
  if (!j.is_object()) bad("the body must be a JSON object");
  return j;
}

Request parse_chat_request(std::string_view body, const GenerateOptions& defaults,
                           uint64_t random_seed) {
  return parse_request(body, defaults, random_seed, /*chat=*/true);
}

Request parse_completion_request(std::string_view body, const GenerateOptions& defaults,
                                 uint64_t random_seed) {
  return parse_request(body, defaults, random_seed, /*chat=*/false);
}

namespace {

// input_prefix / input_suffix: text, or a list of token ids and texts (llama.cpp's
// tokenize_mixed), without BOS and special tokens as text.
std::vector<int32_t> mixed_tokens(const Json& value, const char* key,
                                  const tokenizer::Tokenizer& tok) {
  const auto text = [&](const Json& v) {
    return tok.encode(v.get<std::string>(), /*add_bos=*/false, /*parse_special=*/false);
  };
  if (value.is_string()) return text(value);
  if (!value.is_array()) bad(std::string(key) + " must be a string or a list of tokens and texts");
  std::vector<int32_t> ids;
  for (const Json& item : value) {
    if (item.is_string()) {
      const std::vector<int32_t> more = text(item);
      ids.insert(ids.end(), more.begin(), more.end());
    } else if (item.is_number_integer() && item.get<int64_t>() >= 0 &&
               item.get<int64_t>() < static_cast<int64_t>(tok.vocab_size())) {
      ids.push_back(static_cast<int32_t>(item.get<int64_t>()));
    } else {
      bad(std::string(key) + ": " + item.dump() + " is neither text nor a token id of this model");
    }
  }
  return ids;
}

}  // namespace

InfillRequest parse_infill_request(std::string_view body, const GenerateOptions& defaults,
                                   uint64_t random_seed, const tokenizer::Tokenizer& tok) {
  Json j = parse_body(body);
  if (!field(j, "prompt")) j["prompt"] = "";
  InfillRequest out{parse_request(j.dump(), defaults, random_seed, /*chat=*/false), {}};
  if (const Json* prefix = field(j, "input_prefix"))
    out.input.prefix = mixed_tokens(*prefix, "input_prefix", tok);
  if (const Json* suffix = field(j, "input_suffix"))
    out.input.suffix = mixed_tokens(*suffix, "input_suffix", tok);
  if (const Json* extra = field(j, "input_extra")) {
    if (!extra->is_array()) bad("input_extra must be a list of {\"filename\", \"text\"}");
    for (const Json& chunk : *extra) {
      if (!chunk.is_object() || !chunk.contains("text") || !chunk["text"].is_string())
        bad("input_extra: each chunk must be an object with a \"text\" string");
      InfillChunk c;
      c.text = chunk["text"].get<std::string>();
      if (const Json* name = field(chunk, "filename")) {
        if (!name->is_string()) bad("input_extra: a chunk's filename must be a string");
        c.filename = name->get<std::string>();
      }
      out.input.extra.push_back(std::move(c));
    }
  }
  out.input.prompt = tok.encode(out.request.prompt, /*add_bos=*/false, /*parse_special=*/true);
  return out;
}

const char* finish_reason(StopReason reason, bool called_tools) {
  if (called_tools) return "tool_calls";
  return reason == StopReason::max_tokens || reason == StopReason::context_full ? "length" : "stop";
}

Json chat_response(const Identity& who, const TurnStats& stats, const PieceText* piece,
                   const AssistantReply* said) {
  Json message = {{"role", "assistant"}, {"content", stats.text}};
  const bool called = said && !said->calls.empty();
  if (said) {
    message["content"] = said->content.empty() && called ? Json() : Json(said->content);
    if (!said->reasoning.empty()) message["reasoning_content"] = said->reasoning;
    if (called) {
      message["tool_calls"] = tool_calls_delta(said->calls)["tool_calls"];
      for (Json& call : message["tool_calls"]) call.erase("index");
    }
  }
  return {{"id", who.id},
          {"object", "chat.completion"},
          {"created", who.created},
          {"model", who.model},
          {"choices", Json::array({{{"index", 0},
                                    {"message", message},
                                    {"logprobs", piece ? chat_logprobs(stats, *piece) : Json()},
                                    {"finish_reason", finish_reason(stats.stop_reason, called)}}})},
          {"usage", usage(stats)}};
}

Json tool_calls_delta(const std::vector<ToolCall>& calls_made) {
  Json calls = Json::array();
  for (size_t i = 0; i < calls_made.size(); ++i) {
    const ToolCall& c = calls_made[i];
    calls.push_back({{"index", i},
                     {"id", c.id},
                     {"type", "function"},
                     {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  }
  return {{"tool_calls", calls}};
}

void name_tool_calls(std::vector<ToolCall>& calls, const std::function<uint32_t()>& random) {
  static constexpr std::string_view kChars =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  for (ToolCall& c : calls) {
    if (!c.id.empty()) continue;
    c.id = "call_";
    for (int i = 0; i < 24; ++i) c.id += kChars[random() % kChars.size()];
  }
}

Json chat_chunk(const Identity& who, const Json& delta, const TurnStats* final_stats,
                bool called_tools, const PieceText* piece) {
  Json choice = {
      {"index", 0},
      {"delta", delta},
      {"finish_reason",
       final_stats ? Json(finish_reason(final_stats->stop_reason, called_tools)) : Json()}};
  Json chunk = {{"id", who.id},
                {"object", "chat.completion.chunk"},
                {"created", who.created},
                {"model", who.model},
                {"choices", Json::array({choice})}};
  if (final_stats) chunk["usage"] = usage(*final_stats);
  if (final_stats && piece) chunk["choices"][0]["logprobs"] = chat_logprobs(*final_stats, *piece);
  return chunk;
}

Json completion_response(const Identity& who, const TurnStats& stats, const PieceText* piece) {
  return {
      {"id", who.id},
      {"object", "text_completion"},
      {"created", who.created},
      {"model", who.model},
      {"choices", Json::array({{{"index", 0},
                                {"text", stats.text},
                                {"logprobs", piece ? completion_logprobs(stats, *piece) : Json()},
                                {"finish_reason", finish_reason(stats.stop_reason)}}})},
      {"usage", usage(stats)}};
}

Json completion_chunk(const Identity& who, std::string_view text, const TurnStats* final_stats,
                      const PieceText* piece) {
  Json chunk = {
      {"id", who.id},
      {"object", "text_completion"},
      {"created", who.created},
      {"model", who.model},
      {"choices",
       Json::array({{{"index", 0},
                     {"text", text},
                     {"finish_reason",
                      final_stats ? Json(finish_reason(final_stats->stop_reason)) : Json()}}})}};
  if (final_stats) chunk["usage"] = usage(*final_stats);
  if (final_stats && piece)
    chunk["choices"][0]["logprobs"] = completion_logprobs(*final_stats, *piece);
  return chunk;
}

Json native_completion(std::string_view model, std::string_view content,
                       const TurnStats* final_stats) {
  Json j = {{"content", content}, {"stop", final_stats != nullptr}};
  if (final_stats) {
    const StopReason r = final_stats->stop_reason;
    j["stop_type"] = r == StopReason::stop_string                                   ? "word"
                     : r == StopReason::max_tokens || r == StopReason::context_full ? "limit"
                                                                                    : "eos";
    j["stopping_word"] = final_stats->stop_string;
    j["model"] = model;
    j["tokens_predicted"] = final_stats->generated_tokens;
    j["tokens_evaluated"] = final_stats->prompt_ids.size();
    j["tokens_cached"] = final_stats->cached_tokens;
    const TurnStats& st = *final_stats;
    const auto per_token_ms = [](double ms, size_t n) {
      return n > 0 ? ms / static_cast<double>(n) : 0.0;
    };
    j["timings"] = {{"prompt_n", st.prompt_tokens},
                    {"prompt_ms", st.prompt_ms},
                    {"prompt_per_token_ms", per_token_ms(st.prompt_ms, st.prompt_tokens)},
                    {"prompt_per_second", st.prompt_tok_s()},
                    {"predicted_n", st.generated_tokens},
                    {"predicted_ms", st.generation_ms},
                    {"predicted_per_token_ms", per_token_ms(st.generation_ms, st.generated_tokens)},
                    {"predicted_per_second", st.generation_tok_s()}};
    if (final_stats->draft_tokens > 0) {  // speculative decoding: llama-server's draft counts
      j["timings"]["draft_n"] = final_stats->draft_tokens;
      j["timings"]["draft_n_accepted"] = final_stats->draft_accepted;
    }
  }
  return j;
}

EmbeddingRequest parse_embedding_request(std::string_view body) {
  const Json j = parse_body(body);
  const Json* input = field(j, "input");
  if (!input) bad("input must be a string or a list");
  EmbeddingRequest r;
  const auto ids_of = [](const Json& list, const std::string& where) {
    std::vector<int32_t> ids;
    for (const Json& id : list) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
          id.get<int64_t>() > std::numeric_limits<int32_t>::max())
        bad(where + " must hold token ids");
      ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
    if (ids.empty()) bad(where + " is empty");
    return ids;
  };
  if (input->is_string()) {
    r.inputs.push_back({input->get<std::string>(), {}, false});
  } else if (input->is_array() && !input->empty() && (*input)[0].is_number()) {
    r.inputs.push_back({"", ids_of(*input, "input"), true});
  } else if (input->is_array() && !input->empty()) {
    for (size_t i = 0; i < input->size(); ++i) {
      const Json& item = (*input)[i];
      const std::string where = "input[" + std::to_string(i) + "]";
      if (item.is_string())
        r.inputs.push_back({item.get<std::string>(), {}, false});
      else if (item.is_array())
        r.inputs.push_back({"", ids_of(item, where), true});
      else
        bad(where + " must be a string or a list of token ids");
    }
  } else {
    bad("input must be a string or a non-empty list");
  }
  if (const Json* format = field(j, "encoding_format")) {
    if (*format != "float" && *format != "base64") bad("encoding_format must be float or base64");
    r.base64 = *format == "base64";
  }
  return r;
}

namespace {

std::string base64_of(const std::vector<float>& v) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * 4, '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &v[i], 4);
    for (int b = 0; b < 4; ++b) bytes[4 * i + b] = static_cast<char>((u >> (8 * b)) & 0xFF);
  }
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t chunk = 0;
    for (size_t k = 0; k < 3; ++k)
      chunk = (chunk << 8) | (k < n ? static_cast<uint8_t>(bytes[i + k]) : 0);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(chunk >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

}  // namespace

Json embeddings_response(std::string_view model, const std::vector<std::vector<float>>& vectors,
                         size_t prompt_tokens, bool base64) {
  Json data = Json::array();
  for (size_t i = 0; i < vectors.size(); ++i)
    data.push_back({{"object", "embedding"},
                    {"index", i},
                    {"embedding", base64 ? Json(base64_of(vectors[i])) : Json(vectors[i])}});
  return {{"object", "list"},
          {"data", data},
          {"model", model},
          {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
}

Json error_body(int status, std::string_view message) {
  const char* type = status == 401   ? "authentication_error"
                     : status == 404 ? "not_found_error"
                     : status == 501 ? "not_supported_error"
                     : status >= 500 ? "server_error"
                                     : "invalid_request_error";
  return {{"error", {{"message", message}, {"type", type}, {"code", status}}}};
}

std::string dump(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace oxi::llm::openai
