// oxinfer: every job of the toolkit from the command line, without writing a pipeline.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "lib/core/error.h"
#include "lib/core/version.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/commands.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const oxi::cli::Argv&);
};

constexpr Command kCommands[] = {
    {"devices", "list compute devices: CPU features, cores, memory, GPUs", oxi::cli::run_devices},
    {"inspect", "print metadata and tensors of a GGUF, safetensors, torch file or HF directory",
     oxi::cli::run_inspect},
    {"pull", "download a Hugging Face repo (org/name[:QUANT]) into the cache", oxi::cli::run_pull},
    {"bench", "benchmarks: kernels, llm, whisper", oxi::cli::run_bench},
    {"tokenize", "print the token ids of a text with a model's tokenizer", oxi::cli::run_tokenize},
    {"generate", "generate text from a prompt with an LLM (streamed to stdout)",
     oxi::cli::run_generate},
    {"chat", "chat with an LLM on the terminal (or one turn with --prompt)", oxi::cli::run_chat},
    {"embed", "text embeddings from an LLM's hidden states (as llama-embedding)",
     oxi::cli::run_embed},
    {"perplexity", "a model's perplexity over a text, as llama.cpp's perplexity tool",
     oxi::cli::run_perplexity},
    {"imatrix", "an importance matrix for quantize --imatrix (as llama-imatrix)",
     oxi::cli::run_imatrix},
    {"quantize", "re-encode a GGUF model in a llama.cpp file type (Q4_K_M, Q8_0, ...)",
     oxi::cli::run_quantize},
    {"serve", "an OpenAI-compatible HTTP server for an LLM (as llama-server)", oxi::cli::run_serve},
    {"transcribe", "speech to text or subtitles with a Whisper model (any audio/video file)",
     oxi::cli::run_transcribe},
    {"run", "run a ready GStreamer pipeline from pipelines/ (key=value parameters, --list)",
     oxi::cli::run_run},
    {"vad", "speech segments of an audio file with Silero VAD (text or --json)", oxi::cli::run_vad},
    {"demo",
     "speak a sentence with espeak-ng and transcribe it with oxiwhisper (the quick-start job)",
     oxi::cli::run_demo},
};

void print_usage(std::FILE* out) {
  std::fprintf(out,
               "usage: oxinfer [-v|-q] [--version] COMMAND [ARGS...]\n\n"
               "Runs AI models locally: oxinfer COMMAND --help for each command's options.\n\n"
               "commands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
  std::fprintf(out,
               "\nglobal options:\n"
               "  -v, --verbose   more log output (repeat for trace)\n"
               "  -q, --quiet     errors only\n"
               "  --version       print the version\n");
}

}  // namespace

int main(int argc, char** argv) {
  // Logs go to stderr: stdout carries each command's output (ids, paths, generated text).
  spdlog::set_default_logger(spdlog::stderr_color_mt("oxinfer"));
  spdlog::set_pattern("[%l] %v");
  spdlog::set_level(spdlog::level::info);
  std::vector<std::string> args(argv + 1, argv + argc);

  // Global options come before the command, or anywhere as -v/-q.
  std::vector<std::string> rest;
  int verbosity = 0;
  for (const std::string& a : args) {
    if (a == "-v" || a == "--verbose")
      ++verbosity;
    else if (a == "-vv")
      verbosity += 2;
    else if (a == "-q" || a == "--quiet")
      verbosity = -1;
    else
      rest.push_back(a);
  }
  if (verbosity < 0)
    spdlog::set_level(spdlog::level::err);
  else if (verbosity == 1)
    spdlog::set_level(spdlog::level::debug);
  else if (verbosity >= 2)
    spdlog::set_level(spdlog::level::trace);

  if (rest.empty()) {
    print_usage(stderr);
    return 2;
  }
  if (rest[0] == "--version") {
    std::printf("oxinfer %s\n", oxi::version());
    return 0;
  }
  if (rest[0] == "--help" || rest[0] == "-h" || rest[0] == "help") {
    print_usage(stdout);
    return 0;
  }
  for (const Command& c : kCommands) {
    if (rest[0] != c.name) continue;
    const oxi::cli::Argv sub(rest.begin() + 1, rest.end());
    try {
      return c.run(sub);
    } catch (const oxi::cli::HelpShown&) {
      return 0;
    } catch (const oxi::cli::UsageError& e) {
      std::fprintf(stderr, "oxinfer %s: %s\n", c.name, e.what());
      return 2;
    } catch (const oxi::Error& e) {
      std::fprintf(stderr, "oxinfer %s: error: %s\n", c.name, e.what());
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "oxinfer %s: internal error: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "oxinfer: unknown command '%s' (oxinfer --help lists them)\n",
               rest[0].c_str());
  return 2;
}
