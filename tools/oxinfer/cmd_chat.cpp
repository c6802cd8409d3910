// oxinfer chat -m MODEL [--system TEXT] [--prompt TEXT]: a conversation on the terminal (lines
// from stdin; /reset, /exit, Ctrl-D), or one turn with --prompt.
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include <unistd.h>

#include "tools/oxinfer/args.h"
#include "tools/oxinfer/commands.h"
#include "tools/oxinfer/llm_cli_options.h"

namespace oxi::cli {
namespace {

struct TurnOutput {
  bool print_prompt = false;  // the rendered conversation before the reply (stdout)
  bool show_tokens = false;   // the context's and the reply's token ids (stderr)
};

// One turn: the reply streamed to stdout, then a newline; Ctrl-C cuts the reply short.
void chat_turn(llm::Engine& engine, std::vector<ChatMessage> messages,
               const llm::GenerateOptions& options, const TurnOutput& output) {
  if (output.print_prompt) print_prompt(engine.render(messages));
  llm::TurnStats stats;
  {
    const CancelOnInterrupt cancel_on_ctrl_c(engine);
    stats = engine.send(messages, options, print_piece);
  }
  std::fputs("\n", stdout);
  std::fflush(stdout);
  if (stats.dropped_messages > 0)
    std::fprintf(stderr, "(context: the %zu oldest messages of the conversation left it)\n",
                 stats.dropped_messages);
  if (output.show_tokens) print_turn_ids(stats);
  print_turn_stats(stats);
}

// One message from stdin: a line, or several when each but the last ends with a backslash
// (removed; the line break stays), as llama.cpp's interactive mode reads them. nullopt at the
// end of the input.
std::optional<std::string> read_message(bool interactive) {
  std::string message, line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.back() != '\\') return message + line;
    line.pop_back();
    message += line + "\n";
    if (interactive) std::fputs(". ", stderr);
  }
  if (message.empty()) return std::nullopt;
  return message;  // the input ended after a continued line
}

}  // namespace

int run_chat(const Argv& argv) {
  ArgParser p("chat", "oxinfer chat -m MODEL [--system TEXT] [--prompt TEXT] [OPTIONS]",
              "Chat with a model: each line of stdin is a user message, the reply is streamed.\n"
              "A line ending in \\ continues the message on the next line. /reset starts over,\n"
              "/exit or Ctrl-D ends, Ctrl-C stops a reply. --prompt: one turn, then exit. When\n"
              "the conversation nears the context size (--ctx), its oldest exchanges are dropped\n"
              "(the system message stays) until it fills half of it.");
  add_llm_options(p);
  p.option("prompt", "TEXT", "answer this one message and exit", "p");
  p.flag("print-prompt", "print each turn's prompt text (the conversation after the template)");
  p.flag("show-tokens", "print each turn's context and reply token ids on stderr");
  const ParsedArgs args = p.parse(argv);
  const TurnOutput output{args.flag("print-prompt"), args.flag("show-tokens")};
  if (!args.positional().empty())
    throw UsageError("unexpected argument '" + args.positional()[0] + "'");
  const llm::GenerateOptions options = generate_options(args);
  const std::unique_ptr<llm::Engine> engine = load_engine(args);
  const auto system = args.get("system");

  // The system message goes with the first user message of each conversation.
  auto first_messages = [&](const std::string& text) {
    std::vector<ChatMessage> messages;
    if (system && engine->history().empty()) messages.push_back({"system", *system});
    messages.push_back({"user", text});
    return messages;
  };

  if (const auto prompt = args.get("prompt")) {
    chat_turn(*engine, first_messages(*prompt), options, output);
    return 0;
  }
  const bool interactive = isatty(STDIN_FILENO);
  if (interactive)
    std::fprintf(stderr, "chatting with %s (template %s); /reset, /exit or Ctrl-D\n",
                 args.get_or("model", "").c_str(), engine->template_name().c_str());
  while (true) {
    if (interactive) std::fputs("> ", stderr);
    const std::optional<std::string> message = read_message(interactive);
    if (!message) break;
    const std::string& line = *message;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      engine->new_conversation();  // the system message's tokens stay cached
      if (interactive) std::fputs("(conversation reset)\n", stderr);
      continue;
    }
    if (line.empty()) continue;
    chat_turn(*engine, first_messages(line), options, output);
  }
  if (interactive) std::fputs("\n", stderr);
  return 0;
}

}  // namespace oxi::cli
