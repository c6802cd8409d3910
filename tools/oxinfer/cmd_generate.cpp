// oxinfer generate -m MODEL -p TEXT [...]: one prompt, the reply streamed to stdout.
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>

#include <unistd.h>

#include "lib/core/error.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/commands.h"
#include "tools/oxinfer/llm_cli_options.h"
#include "tools/oxinfer/text_input.h"

namespace oxi::cli {
namespace {

void write_logits(const std::filesystem::path& file, std::span<const float> logits) {
  if (logits.empty())
    throw Error(file.string(), "no logits to dump (the prompt was not evaluated)");
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  // float32 little-endian, as the machines this builds for store them.
  out.write(reinterpret_cast<const char*>(logits.data()),
            static_cast<std::streamsize>(logits.size() * sizeof(float)));
  if (!out) throw Error(file.string(), "cannot write the logits");
}

}  // namespace

int run_generate(const Argv& argv) {
  ArgParser p("generate", "oxinfer generate -m MODEL (-p TEXT | -f FILE) [OPTIONS]",
              "Generate a reply to TEXT and stream it to stdout. Without --raw, TEXT is one user\n"
              "message rendered with the model's chat template; with --raw it is fed as is.");
  add_llm_options(p);
  p.option("prompt", "TEXT", "the prompt", "p");
  p.option("file", "FILE", "read the prompt from FILE, as is (- = stdin)", "f");
  p.flag("raw", "feed the prompt without a chat template (BOS as the model says)");
  p.flag("print-prompt", "print the prompt text (after the template) before the reply");
  p.flag("show-tokens", "print the prompt's and the reply's token ids on stderr");
  p.option("dump-logits", "FILE", "write the last prompt token's logits (float32 LE, n_vocab)");
  p.option("save-kv", "FILE", "save the KV cache and conversation after the reply");
  p.option("load-kv", "FILE", "continue from a state saved by --save-kv");
  const ParsedArgs args = p.parse(argv);
  if (!args.positional().empty())
    throw UsageError("unexpected argument '" + args.positional()[0] + "' (the prompt is -p TEXT)");
  if (args.has("prompt") && args.has("file")) throw UsageError("give -p TEXT or -f FILE, not both");
  std::optional<std::string> prompt = args.get("prompt");
  if (const auto file = args.get("file")) prompt = read_text_input(*file);
  if (!prompt) throw UsageError("-p TEXT or -f FILE is required");
  const bool raw = args.flag("raw");
  if (raw && args.has("system")) throw UsageError("--system needs chat mode (drop --raw)");
  const llm::GenerateOptions options = generate_options(args);

  const std::unique_ptr<llm::Engine> engine = load_engine(args);
  if (const auto state = args.get("load-kv")) engine->load_state(*state);

  std::vector<ChatMessage> messages;
  if (!raw) {
    // A system message opens a conversation; a continued one (--load-kv) already has its own.
    if (const auto system = args.get("system"); system && engine->history().empty())
      messages.push_back({"system", *system});
    messages.push_back({"user", *prompt});
  }
  if (args.flag("print-prompt")) print_prompt(raw ? *prompt : engine->render(messages));

  llm::TurnStats stats;
  {
    const CancelOnInterrupt cancel_on_ctrl_c(*engine);
    stats = raw ? engine->send_raw(*prompt, options, print_piece)
                : engine->send(messages, options, print_piece);
  }
  if (isatty(STDOUT_FILENO) && !stats.text.empty()) std::fputs("\n", stdout);
  std::fflush(stdout);

  if (args.flag("show-tokens")) print_turn_ids(stats);
  if (const auto file = args.get("dump-logits")) write_logits(*file, engine->prompt_logits());
  if (const auto file = args.get("save-kv")) engine->save_state(*file);
  print_turn_stats(stats);
  return 0;
}

}  // namespace oxi::cli
