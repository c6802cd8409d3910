// oxinfer serve -m MODEL [--host 127.0.0.1] [--port 8080] [--api-key KEY] [--parallel N]: an
// OpenAI-compatible HTTP server for one model, as llama.cpp's llama-server: POST
// /v1/chat/completions and /v1/completions (streamed as server-sent events with "stream": true),
// GET /v1/models and /health. The generate options (--temp, --top-k, --max-tokens, --ctx, ...)
// are the defaults a request's own fields override (lib/llm/openai_api.h). POST /tokenize and
// /detokenize are llama-server's own, as are POST /completion ({"prompt", "n_predict", ...} ->
// {"content", "stop", "stop_type", ...}) and POST /infill (fill-in-the-middle for code models,
// lib/llm/infill.h). Each connection has a thread; completions lease one of the --parallel slots
// (serve_slots.h: engines of --ctx / N positions each, whose passes are shared by continuous
// batching, lib/llm/eval_batcher.h), waiting while all are busy, while /health, /v1/models and
// the tokenizer answer at once. Each completion starts a new conversation on its slot's engine,
// whose KV cache keeps the longest start it shares with the slot's last request (a system
// prompt, earlier turns), as llama-server reuses its slot's cache; the free slot whose last
// prompt shares the most with the request's is the one it gets. GET /slots lists them.
// Chat requests may offer tools (OpenAI's tools / tool_choice / parallel_tool_calls): the model's
// template is given them and the reply comes back as tool_calls in the form the template's
// model writes them (lib/llm/tool_calls.h); streamed, content before a call goes out as it
// comes and the calls as one delta at the end. A thinking model's <think> block comes back as
// reasoning_content (llama-server's --reasoning-format deepseek; "none" leaves it in the
// content), and chat_template_kwargs / --chat-template-kwargs give the template more variables
// (enable_thinking, ...). POST /v1/embeddings embeds each input from an empty cache of its own
// (lib/llm/embeddings.h; --pooling), leaving the chat's cache as it was. llama-server's GET
// /props and POST /apply-template tell the defaults and the prompt a chat request makes.
// Anthropic's POST /v1/messages (and /v1/messages/count_tokens) answers clients written for
// Anthropic's API, as llama-server does: the request is read as the chat request it stands for,
// the reply goes back as content blocks or Anthropic's stream of events
// (lib/llm/anthropic_api.h); the API key may come as x-api-key. OpenAI's POST /v1/responses
// likewise (lib/llm/responses_api.h: input items in, output items or the Responses events out;
// nothing stored).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "backends/cpu/cpu_backend.h"
#include "lib/core/error.h"
#include "lib/formats/utf8.h"
#include "lib/hub/hub.h"
#include "lib/llm/anthropic_api.h"
#include "lib/llm/assistant_reply.h"
#include "lib/llm/embeddings.h"
#include "lib/llm/engine.h"
#include "lib/llm/eval_batcher.h"
#include "lib/llm/infill.h"
#include "lib/llm/model.h"
#include "lib/llm/openai_api.h"
#include "lib/llm/reasoning.h"
#include "lib/llm/responses_api.h"
#include "lib/llm/session.h"
#include "lib/llm/tool_calls.h"
#include "lib/tokenizer/tokenizer.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/commands.h"
#include "tools/oxinfer/http_server.h"
#include "tools/oxinfer/llm_cli_options.h"
#include "tools/oxinfer/serve_slots.h"

namespace oxi::cli {
namespace {

namespace openai = llm::openai;
namespace anthropic = llm::anthropic;
namespace responses = llm::responses;

volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_stop_signal(int) {
  g_stop = 1;
}

// What the command line sets beside the generate options.
struct ServeSettings {
  std::string model_name;                     // in responses and /v1/models
  std::string api_key;                        // empty: none asked
  std::string system;                         // a system message for chats that bring none
  std::string reasoning_format = "deepseek";  // --reasoning-format
  jinja::Json template_kwargs = jinja::Json::object();  // --chat-template-kwargs
  std::optional<llm::Pooling> pooling;                  // --pooling; none: the model's
  bool spm_infill = false;                              // --spm-infill
  std::filesystem::path slot_save_path;                 // --slot-save-path; empty: none
  bool metrics = false;                                 // --metrics: GET /metrics
  std::shared_ptr<llm::EvalBatcher> batcher;            // the slots' shared passes, if any
};

class Server {
 public:
  Server(ServeSlots& slots, llm::GenerateOptions defaults, ServeSettings settings)
      : slots_(slots),
        defaults_(std::move(defaults)),
        model_(std::move(settings.model_name)),
        api_key_(std::move(settings.api_key)),
        system_(std::move(settings.system)),
        reasoning_format_(std::move(settings.reasoning_format)),
        defaults_kwargs_(std::move(settings.template_kwargs)),
        pooling_(settings.pooling),
        spm_infill_(settings.spm_infill),
        slot_save_path_(std::move(settings.slot_save_path)),
        metrics_(settings.metrics),
        batcher_(std::move(settings.batcher)) {}

  void handle(const HttpRequest& req, HttpResponse& res) {
    if (req.method == "OPTIONS") return res.send(200, "text/plain", "");  // CORS preflight
    if (req.path == "/health") return send_json(res, 200, {{"status", "ok"}});
    // The key as OpenAI's clients send it, or as Anthropic's (x-api-key).
    if (!api_key_.empty() && req.header("authorization") != "Bearer " + api_key_ &&
        req.header("x-api-key") != api_key_)
      return send_error(res, 401, "invalid or missing API key");
    if (req.path == "/v1/models" || req.path == "/models") {
      if (req.method != "GET") return send_error(res, 405, "use GET");
      return send_json(res, 200,
                       {{"object", "list"},
                        {"data", openai::Json::array({{{"id", model_},
                                                       {"object", "model"},
                                                       {"created", created_},
                                                       {"owned_by", "oxinfer"}}})}});
    }
    if (req.path == "/props") {
      if (req.method != "GET") return send_error(res, 405, "use GET");
      return send_json(res, 200, props());
    }
    if (req.path == "/metrics") {
      if (!metrics_) return send_error(res, 501, "metrics need --metrics");
      if (req.method != "GET") return send_error(res, 405, "use GET");
      return res.send(200, "text/plain; version=0.0.4", metrics());
    }
    if (req.path == "/slots") {
      if (req.method != "GET") return send_error(res, 405, "use GET");
      return send_json(res, 200, slots());
    }
    if (req.path.starts_with("/slots/")) {
      if (req.method != "POST") return send_error(res, 405, "use POST");
      const std::string id = req.path.substr(7), action = req.query_value("action");
      if (id.empty() || id.size() > 6 ||
          !std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return send_error(res, 400, "no such slot: " + id);
      if (action != "save" && action != "restore" && action != "erase")
        return send_error(res, 400, "action must be save, restore or erase");
      if (action != "erase" && slot_save_path_.empty())
        return send_error(res, 501, "slot save and restore need --slot-save-path");
      try {
        return send_json(res, 200, slot_action(req.body, std::stoul(id), action));
      } catch (const Error& e) {
        return send_error(res, 400, e.what());
      }
    }
    if (req.path == "/apply-template") {
      if (req.method != "POST") return send_error(res, 405, "use POST");
      try {
        return send_json(res, 200, apply_template(req.body));
      } catch (const Error& e) {
        return send_error(res, 400, e.what());
      }
    }
    if (req.path == "/v1/embeddings" || req.path == "/embeddings") {
      if (req.method != "POST") return send_error(res, 405, "use POST");
      try {
        return send_json(res, 200, embeddings(req.body));
      } catch (const Error& e) {
        return send_error(res, 400, e.what());
      }
    }
    if (req.path == "/v1/messages/count_tokens") {
      if (req.method != "POST") return send_error(res, 405, "use POST", Kind::messages);
      try {
        return send_json(res, 200, count_tokens(req.body));
      } catch (const Error& e) {
        return send_error(res, 400, e.what(), Kind::messages);
      }
    }
    if (req.path == "/tokenize" || req.path == "/detokenize") {
      if (req.method != "POST") return send_error(res, 405, "use POST");
      try {
        return send_json(res, 200,
                         req.path == "/tokenize" ? tokenize(req.body) : detokenize(req.body));
      } catch (const Error& e) {
        return send_error(res, 400, e.what());
      }
    }
    Kind kind;
    if (req.path == "/v1/chat/completions" || req.path == "/chat/completions")
      kind = Kind::chat;
    else if (req.path == "/v1/completions" || req.path == "/completions")
      kind = Kind::text;
    else if (req.path == "/completion")
      kind = Kind::native;
    else if (req.path == "/infill")
      kind = Kind::infill;
    else if (req.path == "/v1/messages")
      kind = Kind::messages;
    else if (req.path == "/v1/responses" || req.path == "/responses")
      kind = Kind::responses;
    else
      return send_error(res, 404, "no such endpoint: " + req.path);
    if (req.method != "POST") return send_error(res, 405, "use POST", kind);
    if (stopping_) return send_error(res, 503, "the server is stopping", kind);
    if (kind == Kind::infill) {
      const tokenizer::TokenizerSpec::Fim& fim = slots_.first().model().tokenizer().fim();
      if (!fim.pre || !fim.suf || !fim.mid)
        return send_error(res, 501, "infill needs a model with fill-in-the-middle tokens");
    }
    try {
      answer(req, res, kind);
    } catch (const Error& e) {
      if (!res.started()) return send_error(res, 400, e.what(), kind);
      spdlog::warn("serve: {}", e.what());
    } catch (const std::exception& e) {
      if (!res.started()) return send_error(res, 500, e.what(), kind);
      spdlog::error("serve: {}", e.what());
    }
  }

 private:
  // OpenAI's chat and text completions, llama-server's own /completion and /infill (answered
  // as /completion is), Anthropic's messages (lib/llm/anthropic_api.h), OpenAI's responses
  // (lib/llm/responses_api.h).
  enum class Kind { chat, text, native, infill, messages, responses };

  // Parses, generates (on a slot's engine) and answers (or streams) one completion.
  void answer(const HttpRequest& req, HttpResponse& res, Kind kind) {
    const bool chat = kind == Kind::chat || kind == Kind::messages || kind == Kind::responses;
    const uint64_t seed = (uint64_t{random()} << 32) | random();
    std::vector<int32_t> infill;  // Kind::infill: the prompt's tokens
    openai::Request r;
    if (kind == Kind::infill) {
      const tokenizer::Tokenizer& tok = slots_.first().model().tokenizer();
      openai::InfillRequest f = openai::parse_infill_request(req.body, defaults_, seed, tok);
      r = std::move(f.request);
      llm::InfillBudget budget;
      budget.n_ctx = slots_.first().session().n_ctx();
      budget.n_batch = std::min<size_t>(budget.n_batch, budget.n_ctx);
      budget.n_predict = r.options.max_tokens;
      budget.spm = spm_infill_;
      infill = llm::infill_tokens(tok, f.input, budget);
      r.prompt = tok.decode(infill);  // what picks the slot
    } else {
      r = kind == Kind::messages    ? anthropic::parse_messages_request(req.body, defaults_, seed)
          : kind == Kind::responses ? responses::parse_responses_request(req.body, defaults_, seed)
          : chat                    ? openai::parse_chat_request(req.body, defaults_, seed)
                                    : openai::parse_completion_request(req.body, defaults_, seed);
    }
    if (chat) add_system(r);
    const char* id_prefix = kind == Kind::messages    ? "msg_"
                            : kind == Kind::responses ? "resp_"
                            : chat                    ? "chatcmpl-"
                                                      : "cmpl-";
    const openai::Identity who{id_prefix + std::to_string(++count_),
                               static_cast<int64_t>(std::time(nullptr)), model_};
    // Each streamed piece, and the closing event, as the endpoint writes them.
    const auto piece_event = [&](std::string_view piece) {
      return kind == Kind::chat   ? openai::chat_chunk(who, {{"content", piece}}, nullptr)
             : kind == Kind::text ? openai::completion_chunk(who, piece, nullptr)
                                  : openai::native_completion(model_, piece, nullptr);
    };
    const auto final_event = [&](const llm::TurnStats& stats, bool called_tools,
                                 const openai::PieceText* logprobs) {
      return kind == Kind::chat
                 ? openai::chat_chunk(who, openai::Json::object(), &stats, called_tools, logprobs)
             : kind == Kind::text ? openai::completion_chunk(who, "", &stats, logprobs)
                                  : openai::native_completion(model_, "", &stats);
    };
    const std::optional<llm::ToolCallFormat> tool_format = chat ? prepare_chat(r) : std::nullopt;
    // The prompt (as the template renders it) picks the slot whose cache holds most of it.
    std::string prompt =
        chat ? slots_.first().chat_template().apply(r.messages, true, r.options.template_variables)
             : r.prompt;
    const ServeSlots::Lease lease =
        r.id_slot >= 0 ? slots_.lease_slot(static_cast<size_t>(r.id_slot)) : slots_.lease(prompt);
    if (stopping_) throw Error("serve", "the server is stopping");
    llm::Engine& engine = lease.engine();
    engine.new_conversation();
    // A thinking model's <think> block set apart (lib/llm/reasoning.h), unless asked not to.
    std::optional<bool> thinking;
    const std::string& format = r.reasoning_format.empty() ? reasoning_format_ : r.reasoning_format;
    if (chat && format != "none" &&
        engine.chat_template().source().find("<think>") != std::string::npos)
      thinking =
          llm::prompt_opens_thinking(engine.render(r.messages, r.options.template_variables));
    llm::AssistantReplyReader reader(tool_format, thinking);
    // Anthropic's and the Responses API's replies are blocks or items of reasoning, text and
    // calls, streamed as typed events: always read.
    const bool typed_events = kind == Kind::messages || kind == Kind::responses;
    const bool read_reply = tool_format || thinking || typed_events;
    anthropic::MessageStream message_stream(who);
    responses::ResponseStream response_stream(who);
    const auto send_events = [&](const std::vector<llm::ServerEvent>& events) {
      return std::all_of(events.begin(), events.end(),
                         [&](const llm::ServerEvent& e) { return res.write(llm::sse(e)); });
    };
    // What a streamed chat reply sends as it comes: reasoning and content deltas.
    const auto send_delta = [&](const llm::ReplyDelta& d) {
      if (kind == Kind::messages) return send_events(message_stream.add(d));
      if (kind == Kind::responses) return send_events(response_stream.add(d));
      return (d.reasoning.empty() ||
              event(res, openai::chat_chunk(who, {{"reasoning_content", d.reasoning}}, nullptr))) &&
             (d.content.empty() || event(res, piece_event(d.content)));
    };
    llm::PieceCallback on_piece;
    if (r.stream) {
      res.begin_stream(200, "text/event-stream");
      if (kind == Kind::messages)
        send_events({message_stream.start(engine.tokenize_prompt(prompt).size())});
      else if (kind == Kind::responses)
        send_events({response_stream.start()});
      else if (chat)
        event(res, openai::chat_chunk(who, {{"role", "assistant"}}, nullptr));
      on_piece = [&](std::string_view piece) {  // a client gone cancels the turn
        return read_reply ? send_delta(reader.feed(piece)) : event(res, piece_event(piece));
      };
    }
    const llm::TurnStats stats = chat ? engine.send(r.messages, r.options, on_piece)
                                 : kind == Kind::infill
                                     ? engine.send_tokens(std::move(infill), r.options, on_piece)
                                     : engine.send_raw(r.prompt, r.options, on_piece);
    {
      std::lock_guard lock(totals_mutex_);
      totals_.prompt_tokens += stats.prompt_tokens;
      totals_.prompt_ms += stats.prompt_ms;
      totals_.predicted_tokens += stats.generated_tokens;
      totals_.predicted_ms += stats.generation_ms;
    }
    spdlog::info("serve: {} prompt tokens ({} cached), {} generated, {}", stats.prompt_ids.size(),
                 stats.cached_tokens, stats.generated_tokens, llm::to_string(stats.stop_reason));
    llm::ReplyDelta rest;
    llm::AssistantReply reply = reader.finish(stats.text, &rest);
    lease.set_prompt(std::move(prompt));
    openai::name_tool_calls(reply.calls, [this] { return random(); });
    const openai::PieceText piece = [&engine](int32_t id) {
      return engine.model().tokenizer().token_piece(id);
    };
    const openai::PieceText* logprobs = r.options.logprobs >= 0 ? &piece : nullptr;
    if (!r.stream)
      return send_json(
          res, 200,
          kind == Kind::messages    ? anthropic::message_response(who, stats, reply)
          : kind == Kind::responses ? responses::response_object(who, stats, reply)
          : kind == Kind::chat
              ? openai::chat_response(who, stats, logprobs, read_reply ? &reply : nullptr)
          : kind == Kind::text ? openai::completion_response(who, stats, logprobs)
                               : openai::native_completion(model_, stats.text, &stats));
    if (typed_events) {
      send_delta(rest);
      send_events(kind == Kind::messages ? message_stream.finish(stats, reply.calls)
                                         : response_stream.finish(stats, reply));
      return;
    }
    if (read_reply) {
      send_delta(rest);
      if (!reply.calls.empty())
        event(res, openai::chat_chunk(who, openai::tool_calls_delta(reply.calls), nullptr));
    }
    event(res, final_event(stats, !reply.calls.empty(), logprobs));
    if (kind == Kind::chat || kind == Kind::text)
      res.write("data: [DONE]\n\n");  // OpenAI's end of stream
  }

  // --system: the system message of chats that bring none.
  void add_system(openai::Request& r) const {
    if (!system_.empty() && std::none_of(r.messages.begin(), r.messages.end(),
                                         [](const ChatMessage& m) { return m.role == "system"; }))
      r.messages.insert(r.messages.begin(), {"system", system_});
  }

  // A chat request's turn as the template gets it: tools on offer (the template is given them,
  // perhaps a grammar holds the reply to calls, which are read back from it: lib/llm/
  // tool_calls.h), then the command line's and the request's chat_template_kwargs, in
  // r.messages and r.options. The form calls come in when the reply is to be read for them.
  std::optional<llm::ToolCallFormat> prepare_chat(openai::Request& r) const {
    std::optional<llm::ToolCallFormat> tool_format;
    jinja::Json variables = jinja::Json::object();
    if (r.tools) {
      llm::ToolTurn turn =
          llm::offer_tools(slots_.first().chat_template(), std::move(r.messages), *r.tools);
      r.messages = std::move(turn.messages);
      variables = turn.template_variables;
      if (!turn.grammar.empty()) {
        if (!r.options.grammar.empty())
          throw Error("request",
                      "grammar, json_schema or response_format cannot be given with "
                      "tools that constrain the reply");
        r.options.grammar = turn.grammar;
        r.options.grammar_triggers = turn.grammar_triggers;
        r.options.grammar_triggers_at_start = turn.grammar_triggers_at_start;
      }
      r.options.stop.insert(r.options.stop.end(), turn.stop.begin(), turn.stop.end());
      if (r.tools->choice != llm::ToolChoice::none) tool_format = turn.format;
    }
    for (const auto& [key, value] : defaults_kwargs_.items()) variables[key] = value;
    if (r.template_kwargs.is_object())
      for (const auto& [key, value] : r.template_kwargs.items()) variables[key] = value;
    r.options.template_variables = variables;
    return tool_format;
  }

  // llama-server's /apply-template: a chat request's prompt as the model would get it.
  // Anthropic's /v1/messages/count_tokens: the prompt's tokens as /v1/messages would render it.
  openai::Json count_tokens(const std::string& body) {
    openai::Request r = anthropic::parse_messages_request(body, defaults_, 0);
    add_system(r);
    prepare_chat(r);
    const ServeSlots::Lease lease = slots_.lease("");
    llm::Engine& engine = lease.engine();
    engine.new_conversation();
    return {
        {"input_tokens",
         engine.tokenize_prompt(engine.render(r.messages, r.options.template_variables)).size()}};
  }

  openai::Json apply_template(const std::string& body) {
    openai::Request r = openai::parse_chat_request(body, defaults_, 0);
    add_system(r);
    prepare_chat(r);
    const ServeSlots::Lease lease = slots_.lease("");
    lease.engine().new_conversation();
    return {{"prompt", lease.engine().render(r.messages, r.options.template_variables)}};
  }

  // llama-server's /props: the defaults a request starts from and the model's template.
  openai::Json props() const {
    const llm::SamplerOptions& s = defaults_.sampling;
    const llm::Engine& engine = slots_.first();
    const tokenizer::Tokenizer& tok = engine.model().tokenizer();
    const auto token_text = [&](std::optional<int32_t> id) {
      return id ? tok.token_piece(*id) : std::string();
    };
    return {{"default_generation_settings",
             {{"n_ctx", engine.session().n_ctx()},
              {"params",
               {{"temperature", s.temperature},
                {"top_k", s.top_k},
                {"top_p", s.top_p},
                {"min_p", s.min_p},
                {"repeat_penalty", s.repeat_penalty},
                {"n_predict", defaults_.max_tokens}}}}},
            {"total_slots", slots_.size()},
            {"endpoint_slots", true},
            {"endpoint_metrics", metrics_},
            {"model_path", model_},
            {"chat_template", engine.chat_template().source()},
            {"bos_token", token_text(tok.bos())},
            {"eos_token", token_text(tok.eos())}};
  }

  // OpenAI's /v1/embeddings (lib/llm/embeddings.h): each input from an empty cache of its own
  // (the chat's cache stays), pooled as --pooling says, euclidean-normalized.
  openai::Json embeddings(const std::string& body) {
    const openai::EmbeddingRequest r = openai::parse_embedding_request(body);
    const ServeSlots::Lease lease = slots_.lease("");  // its backend, one job at a time
    llm::Engine& engine = lease.engine();
    const tokenizer::Tokenizer& tok = engine.model().tokenizer();
    std::vector<std::vector<int32_t>> inputs;
    size_t total = 0;
    for (const openai::EmbeddingInput& in : r.inputs) {
      inputs.push_back(in.given_as_ids ? in.ids : llm::embedding_tokens(engine.model(), in.text));
      if (inputs.back().empty()) throw Error("request", "an input has no tokens");
      for (int32_t id : inputs.back())
        if (static_cast<size_t>(id) >= tok.vocab_size())
          throw Error("request",
                      "input: " + std::to_string(id) + " is not a token id of this model");
      total += inputs.back().size();
    }
    const llm::Pooling pooling = pooling_ ? *pooling_ : llm::default_pooling(engine.model());
    const std::vector<std::vector<float>> vectors =
        llm::embed_all(engine.model_ptr(), engine.backend(), inputs, pooling);
    return openai::embeddings_response(model_, vectors, total, r.base64);
  }

  // llama-server's /tokenize: {"content", "add_special" (false), "with_pieces" (false)}.
  openai::Json tokenize(const std::string& body) const {
    const openai::Json j = openai::Json::parse(body, nullptr, false);
    if (!j.is_object() || !j.contains("content") || !j["content"].is_string())
      throw Error("request", "content must be a string");
    const tokenizer::Tokenizer& tok = slots_.first().model().tokenizer();
    const bool special = j.value("add_special", false) == true;
    const std::vector<int32_t> ids =
        tok.encode(j["content"].get<std::string>(), special, /*parse_special=*/true);
    openai::Json tokens = openai::Json::array();
    for (int32_t id : ids) {
      if (j.value("with_pieces", false) == true) {
        // As llama-server: a piece that is not whole UTF-8 (a byte token) as its bytes.
        const std::string piece = tok.token_piece(id);
        openai::Json bytes = openai::Json::array();
        for (unsigned char b : piece) bytes.push_back(b);
        tokens.push_back(
            {{"id", id}, {"piece", formats::is_valid_utf8(piece) ? openai::Json(piece) : bytes}});
      } else {
        tokens.push_back(id);
      }
    }
    return {{"tokens", tokens}};
  }
  // llama-server's /detokenize: {"tokens": [ids]} -> {"content"}.
  openai::Json detokenize(const std::string& body) const {
    const openai::Json j = openai::Json::parse(body, nullptr, false);
    if (!j.is_object() || !j.contains("tokens") || !j["tokens"].is_array())
      throw Error("request", "tokens must be a list of token ids");
    const tokenizer::Tokenizer& tok = slots_.first().model().tokenizer();
    std::vector<int32_t> ids;
    for (const openai::Json& t : j["tokens"]) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
          t.get<int64_t>() >= static_cast<int64_t>(tok.vocab_size()))
        throw Error("request", "tokens: " + t.dump() + " is not a token id of this model");
      ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
    return {{"content", tok.decode(ids)}};
  }

  static bool event(HttpResponse& res, const openai::Json& j) {
    return res.write("data: " + openai::dump(j) + "\n\n");
  }
  static void send_json(HttpResponse& res, int status, const openai::Json& j) {
    res.send(status, "application/json", openai::dump(j));
  }
  // The error as the endpoint's clients read it: Anthropic's shape for /v1/messages, else
  // OpenAI's.
  static void send_error(HttpResponse& res, int status, const std::string& message,
                         Kind kind = Kind::chat) {
    send_json(res, status,
              kind == Kind::messages ? anthropic::error_body(status, message)
                                     : openai::error_body(status, message));
  }

 public:
  // Stops the running completion and refuses those waiting (the server is shutting down).
  void stop() {
    stopping_ = true;
    slots_.stop();
  }

 private:
  // llama-server's POST /slots/{id}?action=...: save writes the slot's cache (and conversation)
  // to {"filename"} in --slot-save-path, restore reads one back (its cache then serves the
  // requests that start as it does), erase empties the slot. Each waits for the slot to be free.
  openai::Json slot_action(const std::string& body, size_t id, const std::string& action) {
    std::filesystem::path file;
    if (action != "erase") {
      const openai::Json j = openai::Json::parse(body, nullptr, false);
      const std::string name = j.is_object() && j.contains("filename") && j["filename"].is_string()
                                   ? j["filename"].get<std::string>()
                                   : std::string();
      if (name.empty() || name == "." || name == ".." ||
          name.find_first_of(std::string("/\\\0", 3)) != std::string::npos)
        throw Error("request", "filename must be a plain file name");
      file = slot_save_path_ / name;
    }
    const ServeSlots::Lease lease = slots_.lease_slot(id);
    llm::Engine& engine = lease.engine();
    const auto start = std::chrono::steady_clock::now();
    const auto ms = [&] {
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
          .count();
    };
    if (action == "erase") {
      const size_t n = engine.session().n_past();
      engine.reset();
      lease.set_prompt("");
      return {{"id_slot", id}, {"n_erased", n}};
    }
    if (action == "save") {
      engine.save_state(file);
      return {{"id_slot", id},
              {"filename", file.filename().string()},
              {"n_saved", engine.session().n_past()},
              {"n_written", std::filesystem::file_size(file)},
              {"timings", {{"save_ms", ms()}}}};
    }
    engine.load_state(file);
    const tokenizer::Tokenizer& tok = engine.model().tokenizer();
    lease.set_prompt(tok.decode(engine.session().tokens()));
    return {{"id_slot", id},
            {"filename", file.filename().string()},
            {"n_restored", engine.session().n_past()},
            {"n_read", std::filesystem::file_size(file)},
            {"timings", {{"restore_ms", ms()}}}};
  }

  // llama-server's GET /metrics (--metrics): its Prometheus counters and gauges.
  std::string metrics() const {
    Totals t;
    {
      std::lock_guard lock(totals_mutex_);
      t = totals_;
    }
    const std::vector<ServeSlots::SlotInfo> slots = slots_.info();
    size_t busy = 0;
    uint64_t passes = 0, slot_passes = 0;
    for (const ServeSlots::SlotInfo& s : slots) {
      busy += s.busy ? 1 : 0;
      slot_passes += s.passes;
    }
    // With shared passes a pass serves several slots; alone, each slot's pass is its own.
    passes = batcher_ ? batcher_->stats().passes : slot_passes;
    const auto rate = [](double n, double ms) { return ms > 0 ? 1e3 * n / ms : 0.0; };
    std::string out;
    const auto metric = [&](const char* type, const char* name, const char* help, double value) {
      out += fmt::format("# HELP llamacpp:{} {}\n# TYPE llamacpp:{} {}\nllamacpp:{} {}\n", name,
                         help, name, type, name, value);
    };
    metric("counter", "prompt_tokens_total", "Number of prompt tokens processed.",
           static_cast<double>(t.prompt_tokens));
    metric("counter", "prompt_seconds_total", "Prompt process time", t.prompt_ms / 1e3);
    metric("counter", "tokens_predicted_total", "Number of generation tokens processed.",
           static_cast<double>(t.predicted_tokens));
    metric("counter", "tokens_predicted_seconds_total", "Predict process time",
           t.predicted_ms / 1e3);
    metric("counter", "n_decode_total", "Total number of llama_decode() calls",
           static_cast<double>(passes));
    metric("gauge", "n_busy_slots_per_decode",
           "Average number of busy slots per llama_decode() call",
           passes > 0 ? static_cast<double>(slot_passes) / static_cast<double>(passes) : 0.0);
    metric("gauge", "prompt_tokens_seconds", "Average prompt throughput in tokens/s.",
           rate(static_cast<double>(t.prompt_tokens), t.prompt_ms));
    metric("gauge", "predicted_tokens_seconds", "Average generation throughput in tokens/s.",
           rate(static_cast<double>(t.predicted_tokens), t.predicted_ms));
    metric("gauge", "requests_processing", "Number of requests processing.",
           static_cast<double>(busy));
    metric("gauge", "requests_deferred", "Number of requests deferred.",
           static_cast<double>(slots_.waiting()));
    return out;
  }

  // llama-server's /slots: each slot's id, context and whether it is answering a request.
  openai::Json slots() const {
    openai::Json list = openai::Json::array();
    for (const ServeSlots::SlotInfo& s : slots_.info())
      list.push_back({{"id", s.id}, {"n_ctx", s.n_ctx}, {"is_processing", s.busy}});
    return list;
  }
  // std::random_device is not safe to call from several threads at once.
  uint32_t random() {
    std::lock_guard lock(random_mutex_);
    return random_();
  }

  ServeSlots& slots_;
  std::atomic<bool> stopping_{false};
  llm::GenerateOptions defaults_;
  std::string model_, api_key_, system_, reasoning_format_;
  jinja::Json defaults_kwargs_;
  std::optional<llm::Pooling> pooling_;
  bool spm_infill_;
  std::filesystem::path slot_save_path_;
  bool metrics_;
  std::shared_ptr<llm::EvalBatcher> batcher_;
  // What the completions have done, for /metrics.
  struct Totals {
    uint64_t prompt_tokens = 0, predicted_tokens = 0;
    double prompt_ms = 0, predicted_ms = 0;
  };
  mutable std::mutex totals_mutex_;
  Totals totals_;
  int64_t created_ = static_cast<int64_t>(std::time(nullptr));
  std::atomic<size_t> count_{0};
  std::mutex random_mutex_;
  std::random_device random_;
};

// The slots' engines: one model, each engine a context of its own (--ctx split between them, as
// llama-server does), their passes shared through one batcher when there are several.
struct ServeEngines {
  std::unique_ptr<backends::Backend> batch_backend;  // the shared passes' (outlives the batcher)
  std::shared_ptr<llm::EvalBatcher> batcher;         // none with one slot
  std::vector<std::unique_ptr<llm::Engine>> engines;
};

ServeEngines load_serve_engines(const ParsedArgs& args, size_t parallel) {
  ServeEngines out;
  std::unique_ptr<llm::Engine> first = load_engine(args);
  if (parallel == 1) {
    out.engines.push_back(std::move(first));
    return out;
  }
  llm::EngineOptions options = engine_options(args);
  const size_t total = first->session().n_ctx();
  if (total / parallel < 8)
    throw UsageError("--ctx " + std::to_string(total) + " leaves too few positions for " +
                     std::to_string(parallel) + " slots");
  options.n_ctx = total / parallel;
  out.batch_backend = backends::make_cpu_backend(options.threads);
  out.batcher = std::make_shared<llm::EvalBatcher>(first->model_ptr(), *out.batch_backend);
  options.batcher = out.batcher;
  const std::shared_ptr<const llm::Model> model = first->model_ptr();
  first.reset();  // its context was the whole --ctx
  // One draft model (--model-draft) for every slot, each with a draft session of its own.
  if (!options.draft_model.empty()) {
    llm::LoadOptions load;
    load.quant = options.quant;
    options.loaded_draft = llm::Model::load(
        hub::resolve_model(options.draft_model,
                           options.hub.value_or(hub::HubOptions::from_environment())),
        load);
  }
  for (size_t i = 0; i < parallel; ++i)
    out.engines.push_back(std::make_unique<llm::Engine>(model, options));
  return out;
}

}  // namespace

int run_serve(const Argv& argv) {
  ArgParser p("serve", "oxinfer serve -m MODEL [--host H] [--port N] [--api-key KEY]",
              "An OpenAI-compatible HTTP server for MODEL (as llama-server): POST\n"
              "/v1/chat/completions and /v1/completions (\"stream\": true for server-sent\n"
              "events; \"tools\" for tool calls), /v1/embeddings, /completion, /infill, GET\n"
              "/v1/models, /health, /props and /slots.\n"
              "The sampling options below are the defaults requests override; --parallel N\n"
              "answers N requests at once.");
  add_llm_options(p);
  p.option("parallel", "N",
           "slots: requests answered at once, their decoding batched (default 1); each has "
           "--ctx / N positions",
           "np");
  p.option("host", "HOST", "address to listen on (default 127.0.0.1: this machine only)");
  p.option("port", "N", "port to listen on (default 8080; 0 = any free one)");
  p.option("api-key", "KEY", "require 'Authorization: Bearer KEY' (but on /health)");
  p.option("alias", "NAME", "the model's name in responses (default: the file's name)");
  p.option("reasoning-format", "FORMAT",
           "a thinking model's <think> block: deepseek / auto (default) as reasoning_content, "
           "none (left in the content)");
  p.option("pooling", "P",
           "/v1/embeddings: mean, cls or last (default: the model's pooling_type, else mean)");
  p.option("slot-save-path", "DIR",
           "POST /slots/{id}?action=save|restore {\"filename\"} keeps slots' caches here");
  p.flag("metrics", "GET /metrics: llama-server's Prometheus counters");
  p.flag("spm-infill",
         "/infill: the suffix before the prefix (the SPM order some code models were trained on)");
  p.option("chat-template-kwargs", "JSON",
           "more variables for the chat template, e.g. '{\"enable_thinking\": false}'");
  const ParsedArgs args = p.parse(argv);
  if (!args.positional().empty())
    throw UsageError("unexpected argument '" + args.positional()[0] + "'");
  if (args.has("choices")) throw UsageError("--choices is not a server option");
  const long long port = args.get_int("port", 8080);
  if (port < 0 || port > 65535) throw UsageError("--port must be 0..65535");
  llm::GenerateOptions defaults = generate_options(args);
  if (!args.has("max-tokens")) defaults.max_tokens = -1;  // llama-server: until the end
  const long long parallel = args.get_int("parallel", 1);
  if (parallel < 1 || parallel > 256) throw UsageError("--parallel must be 1..256");
  ServeEngines engines = load_serve_engines(args, static_cast<size_t>(parallel));
  ServeSlots slots(std::move(engines.engines));
  const std::string model =
      args.get_or("alias", std::filesystem::path(*args.get("model")).filename().string());
  HttpServer http(args.get_or("host", "127.0.0.1"), static_cast<uint16_t>(port));
  ServeSettings settings;
  settings.model_name = model;
  settings.api_key = args.get_or("api-key", "");
  settings.system = args.get_or("system", "");
  settings.reasoning_format = args.get_or("reasoning-format", "deepseek");
  if (settings.reasoning_format != "none" && settings.reasoning_format != "deepseek" &&
      settings.reasoning_format != "auto")
    throw UsageError("--reasoning-format must be none, deepseek or auto");
  if (const auto kwargs = args.get("chat-template-kwargs")) {
    settings.template_kwargs = jinja::Json::parse(*kwargs, nullptr, false);
    if (!settings.template_kwargs.is_object())
      throw UsageError("--chat-template-kwargs must be a JSON object");
  }
  settings.spm_infill = args.has("spm-infill");
  settings.metrics = args.has("metrics");
  settings.batcher = engines.batcher;
  if (const auto dir = args.get("slot-save-path")) {
    if (!std::filesystem::is_directory(*dir))
      throw UsageError("--slot-save-path: " + *dir + " is not a directory");
    settings.slot_save_path = *dir;
  }
  if (const auto name = args.get("pooling")) {
    settings.pooling = llm::parse_pooling(*name);
    if (!settings.pooling) throw UsageError("--pooling must be mean, cls or last");
  }
  Server server(slots, defaults, std::move(settings));
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  std::printf("oxinfer serve: %s on http://%s:%u\n", model.c_str(),
              args.get_or("host", "127.0.0.1").c_str(), http.port());
  std::fflush(stdout);
  http.serve([&](const HttpRequest& req, HttpResponse& res) { server.handle(req, res); },
             [&] {
               if (g_stop == 0) return false;
               server.stop();
               return true;
             });
  if (engines.batcher) {
    const llm::EvalBatcher::Stats b = engines.batcher->stats();
    spdlog::info("serve: {} evaluations ({} tokens) in {} shared passes, at most {} a pass",
                 b.requests, b.rows, b.passes, b.most_shared);
  }
  spdlog::info("serve: stopped");
  return 0;
}

}  // namespace oxi::cli
