// `oxinfer serve` as a client sees it: the built binary started on a free port, requests over
// a loopback socket. The greedy chat and text replies equal the engine's for the same messages
// and options; the streamed events join into the same reply; models, health, errors (404, 400,
// 405), an API key, and a request cut short that the server survives.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/llm/embeddings.h"
#include "lib/llm/engine.h"
#include "lib/llm/infill.h"
#include "lib/llm/model.h"
#include "lib/llm/reasoning.h"
#include "lib/llm/session.h"
#include "lib/llm/tool_calls.h"
#include "lib/tokenizer/tokenizer.h"
#include "tests/common/test_data.h"
#include "tests/llm_engine/engine_fixture.h"

namespace oxi::llm::test {
namespace {

using Json = nlohmann::json;

// A running `oxinfer serve ARGS --port 0`, its port read from the line it prints; SIGTERM at
// the end.
class ServeProcess {
 public:
  explicit ServeProcess(std::vector<std::string> args) {
    int out[2];
    if (::pipe(out) != 0) return;
    const std::string binary = oxinfer_binary().string();
    args.insert(args.begin(), {binary, "serve"});
    args.insert(args.end(), {"--port", "0", "-q"});
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      ::close(out[0]);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(binary.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    std::string line;
    char c;
    while (line.find('\n') == std::string::npos && ::read(out[0], &c, 1) == 1) line += c;
    ::close(out[0]);
    const size_t colon = line.rfind(':');
    if (line.find("http://127.0.0.1:") != std::string::npos && colon != std::string::npos)
      port_ = std::stoi(line.substr(colon + 1));
  }
  ~ServeProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

struct Reply {
  int status = 0;
  std::string headers, body;
};

// A connection to the server (-1 if none).
int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The length of the first whole response at the start of `data` with a Content-Length, or 0
// (not whole yet, or a reply without one, which ends when the server closes).
size_t whole_response(const std::string& data) {
  const size_t end = data.find("\r\n\r\n");
  if (end == std::string::npos) return 0;
  const std::string head = data.substr(0, end);
  const size_t at = head.find("Content-Length: ");
  if (at == std::string::npos) return 0;
  const size_t length = std::stoul(head.substr(at + 16));
  return data.size() >= end + 4 + length ? end + 4 + length : 0;
}

// `raw` sent on a new connection, what comes back: a reply with a Content-Length once whole,
// any other once the server closes (or nothing has come for `timeout_s` seconds, when above 0).
std::string exchange(int port, const std::string& raw, int timeout_s = 0) {
  const int fd = connect_to(port);
  if (fd < 0) return "";
  if (timeout_s > 0) {
    timeval tv{timeout_s, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ::send(fd, raw.data(), raw.size(), MSG_NOSIGNAL);
  std::string all;
  char buf[4096];
  for (ssize_t n; whole_response(all) == 0 && (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
    all.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return all;
}

Reply request(int port, const std::string& raw) {
  Reply r;
  const std::string all = exchange(port, raw);
  const size_t end = all.find("\r\n\r\n");
  if (all.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos) return r;
  r.status = std::stoi(all.substr(9, 3));
  r.headers = all.substr(0, end);
  r.body = all.substr(end + 4);
  return r;
}

Reply post(int port, const std::string& path, const std::string& body,
           const std::string& extra_headers = "") {
  return request(port, "POST " + path +
                           " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
                           extra_headers + "Content-Length: " + std::to_string(body.size()) +
                           "\r\n\r\n" + body);
}
Reply get(int port, const std::string& path, const std::string& extra_headers = "") {
  return request(port, "GET " + path + " HTTP/1.1\r\nHost: x\r\n" + extra_headers + "\r\n");
}

// A reply's text as a JSON string carries it: a random model's stray bytes as U+FFFD
// (openai::dump).
std::string as_json_text(const std::string& text) {
  return Json::parse(Json(text).dump(-1, ' ', false, Json::error_handler_t::replace))
      .get<std::string>();
}

// The engine's greedy reply of at most max_tokens to `messages`.
TurnStats greedy_reply(Engine& engine, const std::vector<ChatMessage>& messages, int max_tokens) {
  GenerateOptions g;
  g.sampling.temperature = 0;
  g.max_tokens = max_tokens;
  return engine.send(messages, g);
}

// The engine a server runs, loaded in this process: `threads`, n_ctx (0: the default) and a
// chat template file (empty: the model's).
std::unique_ptr<Engine> load_engine(const std::string& model, int threads, size_t n_ctx = 0,
                                    const std::string& chat_template = "") {
  EngineOptions eo;
  eo.threads = threads;
  eo.n_ctx = n_ctx;
  eo.chat_template = chat_template;
  return Engine::load(model, eo);
}

class CliServe : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = (dir_ / "tiny.gguf").string();
    write_tiny_llama(model_);
  }
  oxi::test::TempDir dir_;
  std::string model_;
};

TEST_F(CliServe, ChatAndCompletionsAnswerAsTheEngine) {
  ServeProcess server({"-m", model_, "--threads", "2", "--alias", "tiny"});
  ASSERT_GT(server.port(), 0);
  const int port = server.port();

  EXPECT_EQ(Json::parse(get(port, "/health").body)["status"], "ok");
  const Reply preflight = request(port, "OPTIONS /v1/chat/completions HTTP/1.1\r\n\r\n");
  EXPECT_EQ(preflight.status, 200);
  EXPECT_NE(preflight.headers.find("Access-Control-Allow-Headers: *"), std::string::npos);
  const Json models = Json::parse(get(port, "/v1/models").body);
  EXPECT_EQ(models["data"][0]["id"], "tiny");

  // Greedy chat: the engine's reply to the same messages.
  const std::string messages =
      R"([{"role": "system", "content": "w270"}, {"role": "user", "content": "w264 w265"}])";
  const Reply chat =
      post(port, "/v1/chat/completions",
           R"({"messages": )" + messages + R"(, "temperature": 0, "max_tokens": 9})");
  ASSERT_EQ(chat.status, 200) << chat.body;
  EXPECT_NE(chat.headers.find("Content-Type: application/json"), std::string::npos);
  const Json c = Json::parse(chat.body);
  const auto engine = load_engine(model_, 2);
  GenerateOptions g;
  g.sampling.temperature = 0;
  g.max_tokens = 9;
  const TurnStats want = engine->send({{"system", "w270"}, {"user", "w264 w265"}}, g);
  // A random model's reply is stray bytes: JSON carries them as U+FFFD (openai::dump).
  EXPECT_EQ(c["choices"][0]["message"]["content"], as_json_text(want.text));
  EXPECT_EQ(c["choices"][0]["finish_reason"],
            want.stop_reason == StopReason::eos ? "stop" : "length");
  EXPECT_EQ(c["usage"]["prompt_tokens"], want.prompt_ids.size());
  EXPECT_EQ(c["usage"]["completion_tokens"], want.generated_tokens);
  EXPECT_EQ(c["model"], "tiny");

  // logprobs: one entry a generated token; greedy, each is its step's likeliest.
  const Json lp = Json::parse(
      post(port, "/v1/chat/completions",
           R"({"messages": )" + messages +
               R"(, "temperature": 0, "max_tokens": 9, "logprobs": true, "top_logprobs": 2})")
          .body);
  const Json& content = lp["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), want.generated_ids.size());
  for (const Json& t : content) {
    EXPECT_LE(t["logprob"].get<double>(), 0.0);
    ASSERT_EQ(t["top_logprobs"].size(), 2u);
    EXPECT_DOUBLE_EQ(t["logprob"].get<double>(), t["top_logprobs"][0]["logprob"].get<double>());
  }
  EXPECT_TRUE(c["choices"][0]["logprobs"].is_null());

  // Streamed: events whose pieces join into the same reply, then [DONE].
  const Reply streamed = post(
      port, "/v1/chat/completions",
      R"({"messages": )" + messages + R"(, "temperature": 0, "max_tokens": 9, "stream": true})");
  ASSERT_EQ(streamed.status, 200);
  EXPECT_NE(streamed.headers.find("text/event-stream"), std::string::npos);
  std::string joined, finish;
  size_t events = 0;
  bool done = false;
  for (size_t at = 0; (at = streamed.body.find("data: ", at)) != std::string::npos;) {
    const size_t end = streamed.body.find("\n\n", at);
    const std::string data = streamed.body.substr(at + 6, end - at - 6);
    at = end;
    if (data == "[DONE]") {
      done = true;
      continue;
    }
    const Json e = Json::parse(data);
    ++events;
    if (e["choices"][0]["delta"].contains("content"))
      joined += e["choices"][0]["delta"]["content"].get<std::string>();
    if (!e["choices"][0]["finish_reason"].is_null()) finish = e["choices"][0]["finish_reason"];
  }
  EXPECT_TRUE(done);
  EXPECT_GE(events, 3u);
  EXPECT_EQ(joined, as_json_text(want.text));
  EXPECT_EQ(finish, c["choices"][0]["finish_reason"]);

  // Text completion: the engine's raw continuation.
  const Reply text = post(port, "/v1/completions",
                          R"({"prompt": "w260 w261", "temperature": 0, "max_tokens": 6})");
  ASSERT_EQ(text.status, 200) << text.body;
  engine->reset();
  GenerateOptions six = g;
  six.max_tokens = 6;
  EXPECT_EQ(Json::parse(text.body)["choices"][0]["text"],
            as_json_text(engine->send_raw("w260 w261", six).text));

  // llama-server's own /completion: the same continuation; streamed, pieces then "stop".
  const Json native = Json::parse(
      post(port, "/completion", R"({"prompt": "w260 w261", "temperature": 0, "n_predict": 6})")
          .body);
  EXPECT_EQ(native["content"], Json::parse(text.body)["choices"][0]["text"]);
  EXPECT_EQ(native["stop"], true);
  EXPECT_EQ(native["stop_type"], "limit");
  EXPECT_EQ(native["stopping_word"], "");
  EXPECT_EQ(native["tokens_predicted"], 6);
  const Reply native_stream =
      post(port, "/completion",
           R"({"prompt": "w260 w261", "temperature": 0, "n_predict": 6, "stream": true})");
  std::string native_joined;
  bool stopped = false;
  for (size_t at = 0; (at = native_stream.body.find("data: ", at)) != std::string::npos;) {
    const size_t end = native_stream.body.find("\n\n", at);
    const Json e = Json::parse(native_stream.body.substr(at + 6, end - at - 6));
    at = end;
    native_joined += e["content"].get<std::string>();
    stopped = e["stop"].get<bool>();
  }
  EXPECT_TRUE(stopped);
  EXPECT_EQ(native_joined, native["content"]);
  EXPECT_EQ(native_stream.body.find("[DONE]"), std::string::npos);

  // llama-server's /tokenize and /detokenize: the model's tokenizer.
  const tokenizer::Tokenizer& tok = engine->model().tokenizer();
  const Json ids = Json::parse(
      post(port, "/tokenize", R"({"content": "w260 w261 w299", "add_special": true})").body);
  EXPECT_EQ(ids["tokens"].get<std::vector<int32_t>>(), tok.encode("w260 w261 w299", true, true));
  const Json pieces =
      Json::parse(post(port, "/tokenize", R"({"content": "w262", "with_pieces": true})").body);
  // (a byte token's piece is its bytes, as llama-server gives them)
  const std::string piece = tok.token_piece(tok.encode("w262", false)[0]);
  const Json& got = pieces["tokens"][0]["piece"];
  EXPECT_EQ(got.is_string() ? got.get<std::string>() : [&] {
    std::string b;
    for (const Json& x : got) b.push_back(static_cast<char>(x.get<int>()));
    return b;
  }(), piece);
  const std::string back = Json::parse(
      post(port, "/detokenize", R"({"tokens": )" + ids["tokens"].dump() + "}").body)["content"];
  EXPECT_EQ(back, tok.decode(ids["tokens"].get<std::vector<int32_t>>()));
  EXPECT_EQ(post(port, "/detokenize", R"({"tokens": [999999]})").status, 400);
  EXPECT_EQ(post(port, "/tokenize", R"({"text": "x"})").status, 400);

  // Errors: the endpoint, the body, the method; a request cut short; the server goes on.
  EXPECT_EQ(get(port, "/v2/nothing").status, 404);
  const Reply bad = post(port, "/v1/chat/completions", R"({"messages": "hi"})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(Json::parse(bad.body)["error"]["message"].get<std::string>().find("messages"),
            std::string::npos);
  EXPECT_EQ(get(port, "/v1/chat/completions").status, 405);
  const int cut = connect_to(port);
  const std::string partial = "POST /v1/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"pro";
  ::send(cut, partial.data(), partial.size(), MSG_NOSIGNAL);
  ::close(cut);
  EXPECT_EQ(post(port, "/v1/completions", R"({"prompt": "w260", "max_tokens": 1})").status, 200);
}

// The data of each server-sent event of a streamed reply, [DONE] included.
std::vector<std::string> events_of(const std::string& body) {
  std::vector<std::string> out;
  for (size_t at = 0; (at = body.find("data: ", at)) != std::string::npos;) {
    const size_t end = body.find("\n\n", at);
    out.push_back(body.substr(at + 6, end - at - 6));
    at = end;
  }
  return out;
}

// Tools offered to a model whose template writes Hermes' <tool_call> form: with tool_choice
// "required" the reply is a call (as the engine gives it for the same turn), streamed as one
// tool_calls delta; the next turn carries the call and its result back to the template, and
// with tool_choice "none" the reply is plain content, the engine's for the same messages.
// A chat template in Hermes' <tool_call> form, written to `file`: the calls' arguments as the
// objects they hold, a tool result's tool_call_id after its content, the names of the tools.
void write_hermes_template(const std::string& file) {
  const std::string tmpl =
      "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}{% if m.tool_calls %}"
      "{% for c in m.tool_calls %}<tool_call>\n{\"name\": \"{{ c.function.name }}\", "
      "\"arguments\": {{ c.function.arguments | tojson }}}\n</tool_call>{% endfor %}{% endif %}"
      "{% if m.tool_call_id %}[{{ m.tool_call_id }}]{% endif %}<|im_end|>\n{% endfor %}"
      "{% if tools %}{% for t in tools %}{{ t.function.name }};{% endfor %}{% endif %}"
      "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
  std::FILE* f = std::fopen(file.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fputs(tmpl.c_str(), f);
  std::fclose(f);
}

TEST_F(CliServe, ToolCallsAsOpenAiClientsReadThem) {
  const std::string tmpl_file = (dir_ / "hermes.jinja").string();
  write_hermes_template(tmpl_file);
  ServeProcess server({"-m", model_, "--threads", "1", "--template", tmpl_file, "--ctx", "1024"});
  ASSERT_GT(server.port(), 0);
  const int port = server.port();
  const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 5}},
                     "required": ["city"], "additionalProperties": false}}}])");
  const std::string user = R"([{"role": "user", "content": "weather?"}])";
  const std::string ask = R"({"messages": )" + user + R"(, "tools": )" + tools.dump() +
                          R"(, "tool_choice": "required", "temperature": 0, "max_tokens": 300)";
  const Reply called = post(port, "/v1/chat/completions", ask + "}");
  ASSERT_EQ(called.status, 200) << called.body;
  const Json c = Json::parse(called.body);
  const Json& message = c["choices"][0]["message"];
  EXPECT_TRUE(message["content"].is_null()) << called.body;
  ASSERT_EQ(message["tool_calls"].size(), 1u) << called.body;
  const Json& call = message["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(c["choices"][0]["finish_reason"], "tool_calls");

  const auto engine = load_engine(model_, 1, 1024, tmpl_file);
  ToolOffer offer;
  offer.tools = tools;
  offer.choice = ToolChoice::required;
  const ToolTurn turn = offer_tools(engine->chat_template(), {{"user", "weather?"}}, offer);
  GenerateOptions g;
  g.sampling.temperature = 0;
  g.max_tokens = 300;
  g.grammar = turn.grammar;
  g.template_variables = turn.template_variables;
  const ToolReply want = parse_tool_reply(engine->send(turn.messages, g).text, turn.format);
  ASSERT_EQ(want.calls.size(), 1u);
  EXPECT_EQ(call["function"]["name"], want.calls[0].name);
  EXPECT_EQ(call["function"]["arguments"], want.calls[0].arguments);

  // Streamed: the role, one delta with the whole call, the finish reason, [DONE]; no content.
  const Reply streamed = post(port, "/v1/chat/completions", ask + R"(, "stream": true})");
  ASSERT_EQ(streamed.status, 200);
  const std::vector<std::string> events = events_of(streamed.body);
  ASSERT_EQ(events.size(), 4u) << streamed.body;
  EXPECT_EQ(Json::parse(events[0])["choices"][0]["delta"], Json({{"role", "assistant"}}));
  const Json delta = Json::parse(events[1])["choices"][0]["delta"];
  ASSERT_EQ(delta["tool_calls"].size(), 1u);
  EXPECT_EQ(delta["tool_calls"][0]["index"], 0);
  EXPECT_EQ(delta["tool_calls"][0]["function"], call["function"]);
  EXPECT_EQ(Json::parse(events[2])["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(events[3], "[DONE]");

  // The call and its result go back: the template sees the call's arguments as an object and
  // the result's tool_call_id; "none" answers in words.
  const Json back = {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", {call}}};
  const Json result = {{"role", "tool"}, {"tool_call_id", call["id"]}, {"content", "sunny"}};
  Json followup = {{"messages", Json::parse(user)},
                   {"tools", tools},
                   {"tool_choice", "none"},
                   {"temperature", 0},
                   {"max_tokens", 6}};
  followup["messages"].push_back(back);
  followup["messages"].push_back(result);
  const Reply answered = post(port, "/v1/chat/completions", followup.dump());
  ASSERT_EQ(answered.status, 200) << answered.body;
  const Json a = Json::parse(answered.body);
  EXPECT_FALSE(a["choices"][0]["message"].contains("tool_calls"));
  Json fields_call = call;
  fields_call["function"]["arguments"] = Json::parse(want.calls[0].arguments);
  GenerateOptions plain;
  plain.sampling.temperature = 0;
  plain.max_tokens = 6;
  plain.template_variables = {{"tools", tools}};
  const std::vector<ChatMessage> history = {
      {"user", "weather?"},
      {"assistant", "", {{"content", nullptr}, {"tool_calls", {fields_call}}}},
      {"tool", "sunny", {{"tool_call_id", call["id"]}}}};
  const std::string prompt = engine->chat_template().apply(history, true, plain.template_variables);
  EXPECT_NE(prompt.find("\"arguments\": {\"city\""), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("sunny[" + call["id"].get<std::string>() + "]"), std::string::npos);
  engine->new_conversation();
  const TurnStats words = engine->send(history, plain);
  EXPECT_EQ(a["usage"]["prompt_tokens"], words.prompt_ids.size());
  EXPECT_EQ(Json(as_json_text(words.text)), a["choices"][0]["message"]["content"]);

  // A grammar of the client's own cannot be held together with the tools' one.
  const Reply both = post(port, "/v1/chat/completions", ask + R"(, "grammar": "root ::= \"x\""})");
  EXPECT_EQ(both.status, 400);
  EXPECT_NE(both.body.find("cannot be given with tools"), std::string::npos);
}

// A thinking model's template (the prompt opens <think> unless enable_thinking is false): the
// <think> block comes back as reasoning_content, whole and streamed, as the engine's reply
// splits; reasoning_format "none" leaves it in the content; chat_template_kwargs, from the
// request or the command line, reach the template.
TEST_F(CliServe, ThinkingRepliesAsReasoningContent) {
  const std::string tmpl =
      "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
      "{% if add_generation_prompt %}<|im_start|>assistant\n{% if enable_thinking is defined and "
      "not enable_thinking %}<think>\n\n</think>\n\n{% else %}<think>\n{% endif %}{% endif %}";
  const std::string tmpl_file = (dir_ / "thinking.jinja").string();
  {
    std::FILE* f = std::fopen(tmpl_file.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs(tmpl.c_str(), f);
    std::fclose(f);
  }
  ServeProcess server({"-m", model_, "--threads", "1", "--template", tmpl_file});
  ASSERT_GT(server.port(), 0);
  const int port = server.port();
  const std::string two_parts = R"(root ::= [a-z]{2,6} " </think> " [a-z]{2,6})";
  const std::string one_part = R"(root ::= [a-z]{2,6})";
  const auto ask = [&](const std::string& grammar, const std::string& extra) {
    return Json::parse(post(port, "/v1/chat/completions",
                            R"({"messages": [{"role": "user", "content": "w264"}], "grammar": )" +
                                Json(grammar).dump() + R"(, "temperature": 0, "max_tokens": 30)" +
                                extra + "}")
                           .body);
  };
  const auto engine = load_engine(model_, 1, 0, tmpl_file);
  GenerateOptions g;
  g.sampling.temperature = 0;
  g.max_tokens = 30;
  g.grammar = two_parts;
  const std::string text = engine->send({{"user", "w264"}}, g).text;
  const ReasonedReply want = split_reasoning(text, /*opened=*/true);
  ASSERT_FALSE(want.reasoning.empty());
  ASSERT_FALSE(want.content.empty());

  const Json whole = ask(two_parts, "")["choices"][0]["message"];
  EXPECT_EQ(whole["reasoning_content"], want.reasoning);
  EXPECT_EQ(whole["content"], want.content);
  const Reply streamed =
      post(port, "/v1/chat/completions",
           R"({"messages": [{"role": "user", "content": "w264"}], "grammar": )" +
               Json(two_parts).dump() + R"(, "temperature": 0, "max_tokens": 30, "stream": true})");
  std::string reasoning, content;
  for (const std::string& data : events_of(streamed.body)) {
    if (data == "[DONE]") continue;
    const Json delta = Json::parse(data)["choices"][0]["delta"];
    if (delta.contains("reasoning_content")) reasoning += delta["reasoning_content"];
    if (delta.contains("content")) content += delta["content"];
  }
  EXPECT_EQ(reasoning, want.reasoning);
  EXPECT_EQ(content, want.content);
  const Json raw = ask(two_parts, R"(, "reasoning_format": "none")")["choices"][0]["message"];
  EXPECT_EQ(raw["content"], text);
  EXPECT_FALSE(raw.contains("reasoning_content"));

  // enable_thinking false: the template closes the block, the reply is all content.
  const Json thinking = ask(one_part, "")["choices"][0]["message"];
  EXPECT_FALSE(thinking["reasoning_content"].get<std::string>().empty());
  EXPECT_EQ(thinking["content"], "");
  const Json direct_reply =
      ask(one_part, R"(, "chat_template_kwargs": {"enable_thinking": false})");
  const Json direct = direct_reply["choices"][0]["message"];
  EXPECT_FALSE(direct.contains("reasoning_content"));
  GenerateOptions closed = g;
  closed.grammar = one_part;
  closed.template_variables = {{"enable_thinking", false}};
  engine->new_conversation();
  const TurnStats closed_turn = engine->send({{"user", "w264"}}, closed);
  EXPECT_EQ(direct["content"], closed_turn.text);
  EXPECT_EQ(direct_reply["usage"]["prompt_tokens"], closed_turn.prompt_ids.size());
  ServeProcess told({"-m", model_, "--threads", "1", "--template", tmpl_file,
                     "--chat-template-kwargs", R"({"enable_thinking": false})"});
  ASSERT_GT(told.port(), 0);
  const Json by_flag =
      Json::parse(post(told.port(), "/v1/chat/completions",
                       R"({"messages": [{"role": "user", "content": "w264"}], "grammar": )" +
                           Json(one_part).dump() + R"(, "temperature": 0, "max_tokens": 30})")
                      .body)["choices"][0]["message"];
  EXPECT_EQ(by_flag["content"], direct["content"]);
  EXPECT_FALSE(by_flag.contains("reasoning_content"));
}

// POST /v1/embeddings: strings, lists of them, token ids and lists of those, each the
// embedding lib/llm/embeddings.h gives its tokens (mean pooling, euclidean); base64 holds the
// same floats; errors name the input.
// The events of a stream of typed server-sent events (Anthropic's, the Responses API's): each
// `event: TYPE` line, and its `data: JSON`, whose "type" must be the same.
void typed_events(const std::string& body, std::vector<std::string>& types,
                  std::vector<Json>& events) {
  for (size_t at = 0; (at = body.find("event: ", at)) != std::string::npos;) {
    const size_t line_end = body.find('\n', at);
    types.push_back(body.substr(at + 7, line_end - at - 7));
    ASSERT_EQ(body.compare(line_end + 1, 6, "data: "), 0) << body;
    const size_t end = body.find("\n\n", line_end);
    events.push_back(Json::parse(body.substr(line_end + 7, end - line_end - 7)));
    EXPECT_EQ(events.back()["type"], types.back());
    at = end;
  }
}

// The call the chat endpoint gives to "weather?" with get_weather (a city of at most 5
// characters) required, under the Hermes template (which lists the tools by name): what the
// Anthropic and Responses endpoints must give for the same turn.
Json required_weather_call(int port) {
  const Reply chat = post(port, "/v1/chat/completions",
                          R"({"max_tokens": 300, "temperature": 0, "tool_choice": "required",
      "messages": [{"role": "user", "content": "weather?"}],
      "tools": [{"type": "function", "function": {"name": "get_weather", "parameters":
      {"type": "object", "properties": {"city": {"type": "string", "maxLength": 5}},
       "required": ["city"], "additionalProperties": false}}}]})");
  EXPECT_EQ(chat.status, 200) << chat.body;
  return Json::parse(chat.body)["choices"][0]["message"]["tool_calls"][0];
}

// Anthropic's Messages API on /v1/messages: the reply is the engine's for the same messages
// (system apart), as a message of blocks and as Anthropic's events; count_tokens counts the
// prompt the reply followed; a tool_choice of "any" gives a tool_use block, the call the OpenAI
// endpoint gives for the same turn; errors come in Anthropic's shape.
TEST_F(CliServe, MessagesAsAnthropicClientsReadThem) {
  const std::string tmpl_file = (dir_ / "hermes.jinja").string();
  write_hermes_template(tmpl_file);
  ServeProcess server({"-m", model_, "--threads", "1", "--template", tmpl_file, "--ctx", "1024",
                       "--alias", "tiny"});
  ASSERT_GT(server.port(), 0);
  const int port = server.port();
  const std::string ask = R"({"model": "claude-x", "max_tokens": 9, "temperature": 0,
      "system": "w270", "messages": [{"role": "user", "content": "w264 w265"}])";
  const Reply said = post(port, "/v1/messages", ask + "}", "anthropic-version: 2023-06-01\r\n");
  ASSERT_EQ(said.status, 200) << said.body;
  const Json m = Json::parse(said.body);

  const auto engine = load_engine(model_, 1, 1024, tmpl_file);
  const TurnStats want = greedy_reply(*engine, {{"system", "w270"}, {"user", "w264 w265"}}, 9);
  const std::string want_text = as_json_text(want.text);
  EXPECT_EQ(m["type"], "message");
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_EQ(m["model"], "tiny");
  EXPECT_EQ(m["id"].get<std::string>().rfind("msg_", 0), 0u);
  ASSERT_EQ(m["content"].size(), 1u) << said.body;
  EXPECT_EQ(m["content"][0]["type"], "text");
  EXPECT_EQ(m["content"][0]["text"], want_text);
  EXPECT_EQ(m["stop_reason"], want.stop_reason == StopReason::eos ? "end_turn" : "max_tokens");
  EXPECT_TRUE(m["stop_sequence"].is_null());
  EXPECT_EQ(m["usage"]["input_tokens"], want.prompt_ids.size());
  EXPECT_EQ(m["usage"]["output_tokens"], want.generated_tokens);

  const Reply counted = post(port, "/v1/messages/count_tokens",
                             R"({"model": "claude-x", "system": "w270",
                                 "messages": [{"role": "user", "content": "w264 w265"}]})");
  ASSERT_EQ(counted.status, 200) << counted.body;
  EXPECT_EQ(Json::parse(counted.body), Json({{"input_tokens", want.prompt_ids.size()}}));

  // Streamed: message_start, one text block of deltas joining into the same text, its stop,
  // message_delta with the stop reason, message_stop; each event's type on its event: line.
  const Reply streamed = post(port, "/v1/messages", ask + R"(, "stream": true})");
  ASSERT_EQ(streamed.status, 200);
  EXPECT_NE(streamed.headers.find("text/event-stream"), std::string::npos);
  std::vector<std::string> types;
  std::vector<Json> events;
  typed_events(streamed.body, types, events);
  ASSERT_GE(types.size(), 6u) << streamed.body;
  EXPECT_EQ(types.front(), "message_start");
  EXPECT_EQ(events.front()["message"]["usage"]["input_tokens"], want.prompt_ids.size());
  EXPECT_EQ(types[1], "content_block_start");
  EXPECT_EQ(events[1]["content_block"]["type"], "text");
  std::string joined;
  for (size_t i = 2; i + 3 < types.size(); ++i) {
    EXPECT_EQ(types[i], "content_block_delta");
    joined += events[i]["delta"]["text"].get<std::string>();
  }
  EXPECT_EQ(joined, want_text);
  EXPECT_EQ(types[types.size() - 3], "content_block_stop");
  EXPECT_EQ(types[types.size() - 2], "message_delta");
  EXPECT_EQ(events[types.size() - 2]["delta"]["stop_reason"], m["stop_reason"]);
  EXPECT_EQ(events[types.size() - 2]["usage"]["output_tokens"], want.generated_tokens);
  EXPECT_EQ(types.back(), "message_stop");

  // tool_choice "any": a tool_use block with the call the OpenAI endpoint gives.
  const std::string tools = R"([{"name": "get_weather", "description": "the weather",
      "input_schema": {"type": "object", "properties": {"city": {"type": "string",
      "maxLength": 5}}, "required": ["city"], "additionalProperties": false}}])";
  const Reply called = post(port, "/v1/messages",
                            R"({"max_tokens": 300, "temperature": 0, "tools": )" + tools +
                                R"(, "tool_choice": {"type": "any"},
                                "messages": [{"role": "user", "content": "weather?"}]})");
  ASSERT_EQ(called.status, 200) << called.body;
  const Json c = Json::parse(called.body);
  EXPECT_EQ(c["stop_reason"], "tool_use");
  ASSERT_EQ(c["content"].back()["type"], "tool_use") << called.body;
  const Json& use = c["content"].back();
  const Json call = required_weather_call(port);
  EXPECT_EQ(use["name"], call["function"]["name"]);
  EXPECT_EQ(use["input"], Json::parse(call["function"]["arguments"].get<std::string>()));
  EXPECT_TRUE(use["input"]["city"].is_string());
  EXPECT_FALSE(use["id"].get<std::string>().empty());

  // The call and its result go back as blocks: the template sees the call's arguments and the
  // result after it, as the OpenAI form of the same turn renders.
  Json followup = {
      {"max_tokens", 4},
      {"temperature", 0},
      {"tools", Json::parse(tools)},
      {"tool_choice", {{"type", "none"}}},
      {"messages",
       {{{"role", "user"}, {"content", "weather?"}},
        {{"role", "assistant"}, {"content", {use}}},
        {{"role", "user"},
         {"content",
          {{{"type", "tool_result"}, {"tool_use_id", use["id"]}, {"content", "sunny"}}}}}}}};
  const Reply answered = post(port, "/v1/messages", followup.dump());
  ASSERT_EQ(answered.status, 200) << answered.body;
  const Json a = Json::parse(answered.body);
  EXPECT_EQ(a["content"][0]["type"], "text");
  EXPECT_NE(a["stop_reason"], "tool_use");
  followup.erase("max_tokens");
  const Json n = Json::parse(post(port, "/v1/messages/count_tokens", followup.dump()).body);
  EXPECT_EQ(a["usage"]["input_tokens"], n["input_tokens"]);

  // Errors in Anthropic's shape.
  const Reply image = post(port, "/v1/messages",
                           R"({"max_tokens": 5, "messages": [{"role": "user", "content": [
                               {"type": "image", "source": {"type": "url", "url": "x"}}]}]})");
  EXPECT_EQ(image.status, 400);
  const Json e = Json::parse(image.body);
  EXPECT_EQ(e["type"], "error");
  EXPECT_EQ(e["error"]["type"], "invalid_request_error");
  EXPECT_NE(e["error"]["message"].get<std::string>().find("image blocks are not supported"),
            std::string::npos);
  EXPECT_EQ(Json::parse(get(port, "/v1/messages").body)["type"], "error");
}

// OpenAI's Responses API on /v1/responses: the reply is the engine's for the same messages
// (instructions as the system message), as a response of output items and as the Responses
// events (their completed response the same items); tool_choice "required" gives a
// function_call item with the call the chat endpoint gives, and the call and its output go back
// as input items; a previous_response_id is refused (nothing is stored).
TEST_F(CliServe, ResponsesAsOpenAiClientsReadThem) {
  const std::string tmpl_file = (dir_ / "hermes.jinja").string();
  write_hermes_template(tmpl_file);
  ServeProcess server({"-m", model_, "--threads", "1", "--template", tmpl_file, "--ctx", "1024",
                       "--alias", "tiny"});
  ASSERT_GT(server.port(), 0);
  const int port = server.port();
  const std::string ask = R"({"model": "gpt-x", "max_output_tokens": 9, "temperature": 0,
      "instructions": "w270", "input": "w264 w265")";
  const Reply said = post(port, "/v1/responses", ask + "}");
  ASSERT_EQ(said.status, 200) << said.body;
  const Json r = Json::parse(said.body);

  const auto engine = load_engine(model_, 1, 1024, tmpl_file);
  const TurnStats want = greedy_reply(*engine, {{"system", "w270"}, {"user", "w264 w265"}}, 9);
  const std::string want_text = as_json_text(want.text);
  EXPECT_EQ(r["object"], "response");
  EXPECT_EQ(r["model"], "tiny");
  EXPECT_EQ(r["id"].get<std::string>().rfind("resp_", 0), 0u);
  EXPECT_EQ(r["status"], want.stop_reason == StopReason::eos ? "completed" : "incomplete");
  ASSERT_EQ(r["output"].size(), 1u) << said.body;
  EXPECT_EQ(r["output"][0]["type"], "message");
  EXPECT_EQ(r["output"][0]["content"][0]["type"], "output_text");
  EXPECT_EQ(r["output"][0]["content"][0]["text"], want_text);
  EXPECT_EQ(r["usage"]["input_tokens"], want.prompt_ids.size());
  EXPECT_EQ(r["usage"]["output_tokens"], want.generated_tokens);

  // Streamed: created, the message item's deltas joining into the same text, completed with
  // the same output and usage.
  const Reply streamed = post(port, "/v1/responses", ask + R"(, "stream": true})");
  ASSERT_EQ(streamed.status, 200);
  std::vector<std::string> types;
  std::vector<Json> events;
  typed_events(streamed.body, types, events);
  ASSERT_GE(types.size(), 4u) << streamed.body;
  EXPECT_EQ(types.front(), "response.created");
  EXPECT_EQ(types.back(), "response.completed");
  std::string joined;
  for (size_t i = 0; i < types.size(); ++i) {
    EXPECT_EQ(events[i]["sequence_number"], i);
    if (types[i] == "response.output_text.delta") joined += events[i]["delta"].get<std::string>();
  }
  EXPECT_EQ(joined, want_text);
  const Json& done = events.back()["response"];
  EXPECT_EQ(done["output"][0]["content"], r["output"][0]["content"]);
  EXPECT_EQ(done["status"], r["status"]);
  EXPECT_EQ(done["usage"]["output_tokens"], want.generated_tokens);

  // tool_choice "required": a function_call item with the chat endpoint's call.
  const std::string tool = R"({"type": "function", "name": "get_weather", "parameters":
      {"type": "object", "properties": {"city": {"type": "string", "maxLength": 5}},
       "required": ["city"], "additionalProperties": false}})";
  const Reply called = post(port, "/v1/responses",
                            R"({"max_output_tokens": 300, "temperature": 0, "tool_choice":
                                "required", "input": "weather?", "tools": [)" +
                                tool + "]}");
  ASSERT_EQ(called.status, 200) << called.body;
  const Json c = Json::parse(called.body);
  EXPECT_EQ(c["status"], "completed");
  ASSERT_EQ(c["output"].back()["type"], "function_call") << called.body;
  const Json& item = c["output"].back();
  const Json call = required_weather_call(port);
  EXPECT_EQ(item["name"], call["function"]["name"]);
  EXPECT_EQ(item["arguments"], call["function"]["arguments"]);
  EXPECT_FALSE(item["call_id"].get<std::string>().empty());

  // The call and its output as input items; "none" answers in a message.
  Json followup = {
      {"max_output_tokens", 4},
      {"temperature", 0},
      {"tools", Json::array({Json::parse(tool)})},
      {"tool_choice", "none"},
      {"input",
       {{{"role", "user"}, {"content", "weather?"}},
        item,
        {{"type", "function_call_output"}, {"call_id", item["call_id"]}, {"output", "sunny"}}}}};
  const Reply answered = post(port, "/v1/responses", followup.dump());
  ASSERT_EQ(answered.status, 200) << answered.body;
  EXPECT_EQ(Json::parse(answered.body)["output"][0]["type"], "message");

  const Reply stored =
      post(port, "/v1/responses", R"({"input": "x", "previous_response_id": "resp_1"})");
  EXPECT_EQ(stored.status, 400);
  EXPECT_NE(
      Json::parse(stored.body)["error"]["message"].get<std::string>().find("previous_response_id"),
      std::string::npos);
}

TEST_F(CliServe, EmbeddingsAsOpenAiClientsReadThem) {
  ServeProcess server({"-m", model_, "--threads", "2"});
  ASSERT_GT(server.port(), 0);
  const int port = server.port();
  const auto engine = load_engine(model_, 2);
  const tokenizer::Tokenizer& tok = engine->model().tokenizer();
  const auto want = [&](const std::vector<int32_t>& ids) {
    Session session(engine->model_ptr(), engine->backend(), ids.size());
    return embed(session, ids, Pooling::mean, 2);
  };
  const auto text_ids = [&](const std::string& text) {
    return tok.encode(text, tok.add_bos(), true);
  };
  const auto expect_close = [](const Json& got, const std::vector<float>& expected) {
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_NEAR(got[i].get<double>(), expected[i], 1e-6) << i;
  };
  const Reply one = post(port, "/v1/embeddings", R"({"input": "w264 w265", "model": "x"})");
  ASSERT_EQ(one.status, 200) << one.body;
  const Json j = Json::parse(one.body);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][0]["object"], "embedding");
  expect_close(j["data"][0]["embedding"], want(text_ids("w264 w265")));
  EXPECT_EQ(j["usage"]["prompt_tokens"], text_ids("w264 w265").size());

  const Json many =
      Json::parse(post(port, "/v1/embeddings", R"({"input": ["w264", "w270 w271"]})").body);
  ASSERT_EQ(many["data"].size(), 2u);
  EXPECT_EQ(many["data"][1]["index"], 1);
  expect_close(many["data"][1]["embedding"], want(text_ids("w270 w271")));
  const Json ids = Json::parse(post(port, "/v1/embeddings", R"({"input": [1, 264, 265]})").body);
  expect_close(ids["data"][0]["embedding"], want({1, 264, 265}));
  const Json lists =
      Json::parse(post(port, "/v1/embeddings", R"({"input": [[1, 264], [270]]})").body);
  expect_close(lists["data"][1]["embedding"], want({270}));

  // base64: the same floats' little-endian bytes.
  const Json b64 = Json::parse(
      post(port, "/v1/embeddings", R"({"input": "w264 w265", "encoding_format": "base64"})").body);
  const std::string text = b64["data"][0]["embedding"];
  std::string bytes;
  uint32_t bits = 0;
  int have = 0;
  for (char c : text) {
    if (c == '=') break;
    const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    bits = (bits << 6) | static_cast<uint32_t>(alphabet.find(c));
    if ((have += 6) >= 8) bytes += static_cast<char>((bits >> (have -= 8)) & 0xFF);
  }
  const Json& floats = j["data"][0]["embedding"];
  ASSERT_EQ(bytes.size(), floats.size() * 4);
  for (size_t i = 0; i < floats.size(); ++i) {
    float f;
    std::memcpy(&f, bytes.data() + 4 * i, 4);
    EXPECT_EQ(f, floats[i].get<float>()) << i;
  }

  EXPECT_EQ(post(port, "/v1/embeddings", R"({"input": 3})").status, 400);
  const Reply outside = post(port, "/v1/embeddings", R"({"input": [99999]})");
  EXPECT_EQ(outside.status, 400);
  EXPECT_NE(outside.body.find("99999 is not a token id"), std::string::npos);
  EXPECT_EQ(post(port, "/v1/embeddings", R"({"input": []})").status, 400);
  EXPECT_EQ(get(port, "/v1/embeddings").status, 405);
  EXPECT_EQ(post(port, "/v1/completions", R"({"prompt": "w260", "max_tokens": 2})").status, 200);
}

// llama-server's GET /props (the defaults, the context, the template) and POST /apply-template
// (a chat request's prompt as the engine renders it, --system and chat_template_kwargs in).
TEST_F(CliServe, PropsAndApplyTemplate) {
  ServeProcess server(
      {"-m", model_, "--threads", "1", "--temp", "0.5", "--ctx", "256", "--system", "w270"});
  ASSERT_GT(server.port(), 0);
  const int port = server.port();
  const auto engine = load_engine(model_, 1);
  const Json props = Json::parse(get(port, "/props").body);
  EXPECT_EQ(props["chat_template"], engine->chat_template().source());
  EXPECT_EQ(props["default_generation_settings"]["n_ctx"], 256);
  EXPECT_FLOAT_EQ(props["default_generation_settings"]["params"]["temperature"].get<float>(), 0.5f);
  EXPECT_EQ(props["total_slots"], 1);
  EXPECT_EQ(props["bos_token"], "<s>");
  const Reply applied =
      post(port, "/apply-template", R"({"messages": [{"role": "user", "content": "w264 w265"}]})");
  ASSERT_EQ(applied.status, 200) << applied.body;
  EXPECT_EQ(Json::parse(applied.body)["prompt"],
            engine->render({{"system", "w270"}, {"user", "w264 w265"}}));
  EXPECT_EQ(post(port, "/apply-template", R"({"messages": []})").status, 400);
  EXPECT_EQ(post(port, "/props", "{}").status, 405);
}

TEST_F(CliServe, ApiKeyGuardsAllButHealth) {
  ServeProcess server({"-m", model_, "--threads", "2", "--api-key", "s3cret"});
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(get(server.port(), "/health").status, 200);
  EXPECT_EQ(get(server.port(), "/v1/models").status, 401);
  EXPECT_EQ(get(server.port(), "/v1/models", "Authorization: Bearer nope\r\n").status, 401);
  EXPECT_EQ(get(server.port(), "/v1/models", "Authorization: Bearer s3cret\r\n").status, 200);
  EXPECT_EQ(post(server.port(), "/v1/completions", R"({"prompt": "w260", "max_tokens": 1})",
                 "Authorization: Bearer s3cret\r\n")
                .status,
            200);
  // Anthropic's clients send the key as x-api-key.
  EXPECT_EQ(get(server.port(), "/v1/models", "x-api-key: s3cret\r\n").status, 200);
  EXPECT_EQ(get(server.port(), "/v1/models", "x-api-key: nope\r\n").status, 401);
}

// Requests the server refuses before they reach the model (a request line without a path,
// headers over 64 KB, a body over 16 MB, a chunked body, a bad Content-Length, random bytes),
// each answered or dropped, and the server answering after all of them.
TEST_F(CliServe, MalformedRequestsAreRefusedAndTheServerGoesOn) {
  ServeProcess server({"-m", model_, "--threads", "2"});
  ASSERT_GT(server.port(), 0);
  const int port = server.port();
  EXPECT_EQ(request(port, "NONSENSE\r\n\r\n").status, 400);
  EXPECT_EQ(
      request(port, "GET /health HTTP/1.1\r\nX: " + std::string(70000, 'a') + "\r\n\r\n").status,
      431);
  EXPECT_EQ(
      request(port, "POST /v1/completions HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n").status,
      413);
  EXPECT_EQ(
      request(port, "POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").status,
      400);
  EXPECT_EQ(request(port, "POST /v1/completions HTTP/1.1\r\nContent-Length: -4\r\n\r\n").status,
            400);
  std::mt19937 rng(3);
  for (int i = 0; i < 20; ++i) {
    std::string junk(1 + rng() % 300, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    const int fd = connect_to(port);
    ::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
    ::close(fd);
  }
  EXPECT_EQ(get(port, "/health").status, 200);
  EXPECT_EQ(post(port, "/v1/completions", R"({"prompt": "w260", "max_tokens": 2})").status, 200);
}

// Kept-alive connections (HTTP/1.1's default): requests one after another and two sent at
// once are answered in turn on one connection; "Connection: close", HTTP/1.0 and a streamed
// reply close it.
TEST_F(CliServe, KeptAliveConnectionsCarryRequestsInTurn) {
  ServeProcess server({"-m", model_, "--threads", "1"});
  ASSERT_GT(server.port(), 0);
  const int fd = connect_to(server.port());
  ASSERT_GE(fd, 0);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string pending;
  // The next whole response on fd ("" when the connection closes first).
  const auto next_response = [&] {
    char buf[4096];
    for (ssize_t n; whole_response(pending) == 0 && (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
      pending.append(buf, static_cast<size_t>(n));
    const size_t length = whole_response(pending);
    const std::string response = pending.substr(0, length);
    pending.erase(0, length);
    return response;
  };
  const auto send_text = [&](const std::string& raw) {
    ::send(fd, raw.data(), raw.size(), MSG_NOSIGNAL);
  };
  send_text("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string health = next_response();
  EXPECT_EQ(health.rfind("HTTP/1.1 200", 0), 0u) << health;
  EXPECT_NE(health.find("Connection: keep-alive"), std::string::npos);
  const std::string body = R"({"prompt": "w260", "max_tokens": 2, "temperature": 0})";
  send_text("POST /v1/completions HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) +
            "\r\n\r\n" + body);
  const std::string completion = next_response();
  ASSERT_EQ(completion.rfind("HTTP/1.1 200", 0), 0u) << completion;
  EXPECT_EQ(Json::parse(completion.substr(completion.find("\r\n\r\n") + 4))["object"],
            "text_completion");
  send_text("GET /v1/models HTTP/1.1\r\n\r\nGET /health HTTP/1.1\r\nConnection: close\r\n\r\n");
  const std::string models = next_response(), last = next_response();
  EXPECT_NE(models.find("\"object\":\"list\""), std::string::npos) << models;
  EXPECT_NE(last.find("Connection: close"), std::string::npos) << last;
  char c;
  EXPECT_EQ(::recv(fd, &c, 1, 0), 0);  // closed after the reply that asked for it
  ::close(fd);

  EXPECT_NE(exchange(server.port(), "GET /health HTTP/1.0\r\n\r\n").find("Connection: close"),
            std::string::npos);
  const std::string stream_body = body.substr(0, body.size() - 1) + R"(, "stream": true})";
  const std::string streamed =
      exchange(server.port(), "POST /v1/completions HTTP/1.1\r\nContent-Length: " +
                                  std::to_string(stream_body.size()) + "\r\n\r\n" + stream_body);
  EXPECT_NE(streamed.find("data: [DONE]"), std::string::npos) << streamed;  // read to the close
}

// A connection that has not finished its request (the server waits up to 10 s for the rest)
// does not hold up others: /health and a completion are answered meanwhile (each connection
// has its thread; the client gives up after 5 s).
TEST_F(CliServe, ASlowClientDoesNotHoldUpOthers) {
  ServeProcess server({"-m", model_, "--threads", "2"});
  ASSERT_GT(server.port(), 0);
  const int slow = connect_to(server.port());
  const std::string partial = "POST /v1/completions HTTP/1.1\r\nContent-Le";
  ::send(slow, partial.data(), partial.size(), MSG_NOSIGNAL);
  const auto with_timeout = [&](const std::string& raw) { return exchange(server.port(), raw, 5); };
  EXPECT_EQ(with_timeout("GET /health HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 200", 0), 0u);
  const std::string body = R"({"prompt": "w260", "max_tokens": 2})";
  EXPECT_EQ(with_timeout("POST /v1/completions HTTP/1.1\r\nContent-Length: " +
                         std::to_string(body.size()) + "\r\n\r\n" + body)
                .rfind("HTTP/1.1 200", 0),
            0u);
  ::close(slow);
}

// --parallel N: N slots of --ctx / N positions each, answering at once (their passes shared):
// requests sent together, more than the slots, each get the engine's greedy reply.
TEST_F(CliServe, ParallelSlotsAnswerTogetherAsTheEngineAlone) {
  ServeProcess server({"-m", model_, "--threads", "2", "--ctx", "256", "--parallel", "2"});
  ASSERT_GT(server.port(), 0);
  const int port = server.port();
  const Json props = Json::parse(get(port, "/props").body);
  EXPECT_EQ(props["total_slots"], 2);
  EXPECT_EQ(props["default_generation_settings"]["n_ctx"], 128);
  const Json slots = Json::parse(get(port, "/slots").body);
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[1]["id"], 1);
  EXPECT_EQ(slots[1]["n_ctx"], 128);
  EXPECT_EQ(slots[0]["is_processing"], false);

  const std::vector<std::string> users = {"w264 w265", "w280", "w290 w291 w292", "w270 w271"};
  const std::vector<int> lengths = {14, 9, 11, 6};
  std::vector<Reply> replies(users.size());
  std::vector<std::thread> clients;
  for (size_t i = 0; i < users.size(); ++i)
    clients.emplace_back([&, i] {
      replies[i] =
          post(port, "/v1/chat/completions",
               R"({"messages": [{"role": "user", "content": ")" + users[i] +
                   R"("}], "temperature": 0, "max_tokens": )" + std::to_string(lengths[i]) + "}");
    });
  for (std::thread& t : clients) t.join();

  const auto engine = load_engine(model_, 2, 128);
  for (size_t i = 0; i < users.size(); ++i) {
    ASSERT_EQ(replies[i].status, 200) << replies[i].body;
    GenerateOptions g;
    g.sampling.temperature = 0;
    g.max_tokens = lengths[i];
    engine->new_conversation();
    const TurnStats want = engine->send({{"user", users[i]}}, g);
    const Json got = Json::parse(replies[i].body);
    EXPECT_EQ(got["usage"]["completion_tokens"], want.generated_tokens) << i;
    EXPECT_EQ(got["choices"][0]["message"]["content"], as_json_text(want.text)) << i;
  }
  // The same with a draft model (the model itself: every proposal kept; proposals at any
  // probability) shared by the slots.
  ServeProcess drafted({"-m", model_, "--threads", "2", "--ctx", "256", "--parallel", "2",
                        "--model-draft", model_, "--draft-p-min", "0"});
  ASSERT_GT(drafted.port(), 0);
  std::vector<Reply> drafted_replies(users.size());
  clients.clear();
  for (size_t i = 0; i < users.size(); ++i)
    clients.emplace_back([&, i] {
      drafted_replies[i] =
          post(drafted.port(), "/v1/chat/completions",
               R"({"messages": [{"role": "user", "content": ")" + users[i] +
                   R"("}], "temperature": 0, "max_tokens": )" + std::to_string(lengths[i]) + "}");
    });
  for (std::thread& t : clients) t.join();
  for (size_t i = 0; i < users.size(); ++i) {
    ASSERT_EQ(drafted_replies[i].status, 200) << drafted_replies[i].body;
    EXPECT_EQ(Json::parse(drafted_replies[i].body)["choices"][0]["message"]["content"],
              Json::parse(replies[i].body)["choices"][0]["message"]["content"])
        << i;
  }
  const Json timings = Json::parse(
      post(drafted.port(), "/completion", R"({"prompt": "w260", "n_predict": 8, "temperature": 0})")
          .body)["timings"];
  ASSERT_TRUE(timings.contains("draft_n")) << timings.dump();
  EXPECT_GT(timings["draft_n"].get<int>(), 0);
  EXPECT_EQ(timings["draft_n_accepted"], timings["draft_n"]);
  const CommandResult bad = run_oxinfer({"serve", "-m", model_, "--parallel", "0"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--parallel"), std::string::npos) << bad.err;
}

// llama-server's /infill: the fill-in-the-middle prompt (lib/llm/infill.h) of the request's
// parts continued greedily as the engine continues those tokens; streamed, the same text;
// input_extra malformed is 400, a model without the markers 501.
TEST_F(CliServe, InfillContinuesTheFillInTheMiddlePrompt) {
  const std::string fim_model = (dir_ / "fim.gguf").string();
  rewrite_gguf(model_, fim_model, {}, [](gguf::Writer& w) {
    w.set_u32("tokenizer.ggml.fim_pre_token_id", 291);
    w.set_u32("tokenizer.ggml.fim_suf_token_id", 292);
    w.set_u32("tokenizer.ggml.fim_mid_token_id", 293);
  });
  ServeProcess server({"-m", fim_model, "--threads", "2", "--ctx", "256"});
  ASSERT_GT(server.port(), 0);
  const std::string body =
      R"({"input_prefix": "w260 w261", "input_suffix": "w270", "prompt": "w262",
          "input_extra": [{"filename": "a.txt", "text": "w280 w281"}],
          "temperature": 0, "n_predict": 7)";
  const Reply reply = post(server.port(), "/infill", body + "}");
  ASSERT_EQ(reply.status, 200) << reply.body;

  const auto engine = load_engine(fim_model, 2, 256);
  const tokenizer::Tokenizer& tok = engine->model().tokenizer();
  InfillInput in;
  in.prefix = tok.encode("w260 w261", false, false);
  in.suffix = tok.encode("w270", false, false);
  in.prompt = tok.encode("w262", false, true);
  in.extra = {{"a.txt", "w280 w281"}};
  InfillBudget budget;
  budget.n_ctx = 256;
  budget.n_batch = 256;
  budget.n_predict = 7;
  GenerateOptions g;
  g.sampling.temperature = 0;
  g.max_tokens = 7;
  const TurnStats want = engine->send_tokens(infill_tokens(tok, in, budget), g);
  const Json got = Json::parse(reply.body);
  const std::string want_text = as_json_text(want.text);
  EXPECT_EQ(got["content"], want_text);
  EXPECT_EQ(got["tokens_predicted"], want.generated_tokens);
  EXPECT_EQ(got["tokens_evaluated"], want.prompt_ids.size());

  const Reply streamed = post(server.port(), "/infill", body + R"(, "stream": true})");
  ASSERT_EQ(streamed.status, 200);
  std::string joined;
  for (size_t at = 0; (at = streamed.body.find("data: ", at)) != std::string::npos;) {
    const size_t end = streamed.body.find("\n\n", at);
    joined += Json::parse(streamed.body.substr(at + 6, end - at - 6))["content"].get<std::string>();
    at = end;
  }
  EXPECT_EQ(joined, want_text);
  EXPECT_EQ(streamed.body.find("[DONE]"), std::string::npos);

  EXPECT_EQ(
      post(server.port(), "/infill", R"({"input_prefix": "a", "input_extra": [{"x": 1}]})").status,
      400);
  ServeProcess plain({"-m", model_, "--threads", "1"});
  ASSERT_GT(plain.port(), 0);
  EXPECT_EQ(post(plain.port(), "/infill", R"({"input_prefix": "a"})").status, 501);
}

// llama-server's slot actions and id_slot: a slot's cache saved to --slot-save-path, erased,
// restored into another slot, whose next request with the same start finds it cached; bad
// names, slots and actions refused; without --slot-save-path save is 501.
TEST_F(CliServe, SlotsSavedErasedAndRestored) {
  oxi::test::TempDir saves;
  ServeProcess server({"-m", model_, "--threads", "2", "--ctx", "256", "--parallel", "2",
                       "--slot-save-path", saves.path().string()});
  ASSERT_GT(server.port(), 0);
  const int port = server.port();
  const std::string chat =
      R"({"messages": [{"role": "user", "content": "w264 w265 w266"}], "temperature": 0,
          "max_tokens": 5, "id_slot": )";
  const Json first = Json::parse(post(port, "/v1/chat/completions", chat + "1}").body);
  const size_t prompt_tokens = first["usage"]["prompt_tokens"];
  EXPECT_EQ(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0);

  const Reply saved = post(port, "/slots/1?action=save", R"({"filename": "one.bin"})");
  ASSERT_EQ(saved.status, 200) << saved.body;
  const Json s = Json::parse(saved.body);
  EXPECT_EQ(s["id_slot"], 1);
  EXPECT_EQ(s["filename"], "one.bin");
  const size_t n_saved = s["n_saved"];
  EXPECT_GE(n_saved, prompt_tokens);  // the prompt and the reply's tokens but its last
  EXPECT_EQ(s["n_written"], std::filesystem::file_size(saves.path() / "one.bin"));

  const Json erased = Json::parse(post(port, "/slots/1?action=erase", "").body);
  EXPECT_EQ(erased["n_erased"], n_saved);
  const Json restored =
      Json::parse(post(port, "/slots/0?action=restore", R"({"filename": "one.bin"})").body);
  EXPECT_EQ(restored["id_slot"], 0);
  EXPECT_EQ(restored["n_restored"], n_saved);
  // Slot 0 now holds the conversation: the same request there reuses its prompt but the last
  // 5 tokens (the engine evaluates at least that many: the same kernels as a whole prompt), and
  // replies as before.
  const Json again = Json::parse(post(port, "/v1/chat/completions", chat + "0}").body);
  ASSERT_GT(prompt_tokens, 10u);
  EXPECT_EQ(again["usage"]["prompt_tokens_details"]["cached_tokens"], prompt_tokens - 5);
  EXPECT_EQ(again["choices"][0]["message"]["content"], first["choices"][0]["message"]["content"]);
  // Slot 1 was erased: nothing cached there.
  const Json fresh = Json::parse(post(port, "/v1/chat/completions", chat + "1}").body);
  EXPECT_EQ(fresh["usage"]["prompt_tokens_details"]["cached_tokens"], 0);

  EXPECT_EQ(post(port, "/slots/0?action=save", R"({"filename": "../x.bin"})").status, 400);
  EXPECT_EQ(post(port, "/slots/0?action=save", "{}").status, 400);
  EXPECT_EQ(post(port, "/slots/2?action=erase", "").status, 400);
  EXPECT_EQ(post(port, "/slots/0?action=melt", "").status, 400);
  EXPECT_EQ(post(port, "/slots/0?action=restore", R"({"filename": "none.bin"})").status, 400);
  EXPECT_EQ(get(port, "/slots/0?action=erase").status, 405);
  EXPECT_EQ(post(port, "/v1/chat/completions", chat + "7}").status, 400);
  ServeProcess plain({"-m", model_, "--threads", "1"});
  ASSERT_GT(plain.port(), 0);
  EXPECT_EQ(post(plain.port(), "/slots/0?action=save", R"({"filename": "a.bin"})").status, 501);
  EXPECT_EQ(post(plain.port(), "/slots/0?action=erase", "").status, 200);
}

// llama-server's GET /metrics (--metrics): Prometheus text whose counters add up what the
// completions did.
TEST_F(CliServe, MetricsCountWhatCompletionsDid) {
  ServeProcess server({"-m", model_, "--threads", "1", "--metrics"});
  ASSERT_GT(server.port(), 0);
  const int port = server.port();
  const Json a = Json::parse(
      post(port, "/completion", R"({"prompt": "w260 w261 w262", "n_predict": 4})").body);
  const Json b =
      Json::parse(post(port, "/completion", R"({"prompt": "w270 w271", "n_predict": 3})").body);
  // A slot is free once its response is written: the client may ask before that.
  Reply m;
  for (int attempt = 0; attempt < 200; ++attempt) {
    m = get(port, "/metrics");
    if (m.body.find("\nllamacpp:requests_processing 0\n") != std::string::npos) break;
    ::usleep(10000);
  }
  ASSERT_EQ(m.status, 200) << m.body;
  EXPECT_NE(m.headers.find("Content-Type: text/plain"), std::string::npos);
  const auto value = [&](const std::string& name) {
    const std::string line = "\nllamacpp:" + name + " ";
    const size_t at = m.body.find(line);
    EXPECT_NE(at, std::string::npos) << name;
    EXPECT_NE(m.body.find("# TYPE llamacpp:" + name + " "), std::string::npos) << name;
    return at == std::string::npos ? -1.0 : std::stod(m.body.substr(at + line.size()));
  };
  EXPECT_EQ(value("tokens_predicted_total"),
            a["tokens_predicted"].get<double>() + b["tokens_predicted"].get<double>());
  EXPECT_EQ(value("prompt_tokens_total"),
            a["timings"]["prompt_n"].get<double>() + b["timings"]["prompt_n"].get<double>());
  EXPECT_GE(value("n_decode_total"),
            a["tokens_predicted"].get<double>() + b["tokens_predicted"].get<double>());
  EXPECT_EQ(value("n_busy_slots_per_decode"), 1.0);
  EXPECT_EQ(value("requests_processing"), 0.0);
  EXPECT_EQ(value("requests_deferred"), 0.0);
  EXPECT_GT(value("predicted_tokens_seconds"), 0.0);
  EXPECT_EQ(Json::parse(get(port, "/props").body)["endpoint_metrics"], true);
  ServeProcess plain({"-m", model_, "--threads", "1"});
  ASSERT_GT(plain.port(), 0);
  EXPECT_EQ(get(plain.port(), "/metrics").status, 501);
}

}  // namespace
}  // namespace oxi::llm::test
