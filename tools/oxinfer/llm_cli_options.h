// The options `oxinfer generate` and `oxinfer chat` share: the model, loading, sampling and
// generation limits, and turning them into EngineOptions / GenerateOptions.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "kernels/formats/dtype.h"
#include "lib/llm/engine.h"
#include "tools/oxinfer/args.h"

namespace oxi::cli {

// Adds -m, --ctx, --threads, --quant, --template, --system, the sampling options, --max-tokens,
// --stop, --choices and --grammar / --grammar-file / --json-schema / --json-schema-file.
void add_llm_options(ArgParser& parser);

// --cache-type f16|f32 (also `bench llm`'s): declared, and read (nullopt when absent; throws
// UsageError for anything else).
void add_cache_type_option(ArgParser& parser);
std::optional<kernels::DType> cache_type_option(const ParsedArgs& args);

llm::EngineOptions engine_options(const ParsedArgs& args);
// Throws UsageError for out-of-range values. Without --seed, a random seed.
llm::GenerateOptions generate_options(const ParsedArgs& args);
// The model named by -m (required), loaded with engine_options().
std::unique_ptr<llm::Engine> load_engine(const ParsedArgs& args);

// While alive, Ctrl-C cancels the engine's running turn (a second Ctrl-C exits).
class CancelOnInterrupt {
 public:
  explicit CancelOnInterrupt(llm::Engine& engine);
  ~CancelOnInterrupt();
  CancelOnInterrupt(const CancelOnInterrupt&) = delete;
  CancelOnInterrupt& operator=(const CancelOnInterrupt&) = delete;
};

// Writes a piece of reply text to stdout at once (streaming).
bool print_piece(std::string_view piece);
// --print-prompt: the prompt text and a newline on stdout, before the reply.
void print_prompt(const std::string& text);
// --show-tokens: "prompt tokens: 1 2 3" and "generated tokens: ..." (the turn's context and
// reply ids) on stderr.
void print_turn_ids(const llm::TurnStats& stats);
// "prompt: 12 tokens (3 cached) in 40.1 ms, 299.3 tok/s | generation: ..." on stderr, unless -q.
void print_turn_stats(const llm::TurnStats& stats);

}  // namespace oxi::cli
