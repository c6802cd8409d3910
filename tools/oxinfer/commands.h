// The oxinfer subcommands. Each takes the arguments after its name and returns the exit code;
// errors are thrown (oxi::Error, cli::UsageError) and reported by main().
#pragma once

#include <string>
#include <vector>

namespace oxi::cli {

using Argv = std::vector<std::string>;

int run_devices(const Argv& argv);     // cmd_devices.cpp
int run_inspect(const Argv& argv);     // cmd_inspect.cpp
int run_pull(const Argv& argv);        // cmd_pull.cpp
int run_bench(const Argv& argv);       // cmd_bench.cpp
int run_demo(const Argv& argv);        // cmd_demo.cpp
int run_tokenize(const Argv& argv);    // cmd_tokenize.cpp
int run_generate(const Argv& argv);    // cmd_generate.cpp
int run_chat(const Argv& argv);        // cmd_chat.cpp
int run_embed(const Argv& argv);       // cmd_embed.cpp
int run_imatrix(const Argv& argv);     // cmd_imatrix.cpp
int run_perplexity(const Argv& argv);  // cmd_perplexity.cpp
int run_quantize(const Argv& argv);    // cmd_quantize.cpp
int run_serve(const Argv& argv);       // cmd_serve.cpp
int run_transcribe(const Argv& argv);  // cmd_transcribe.cpp
int run_run(const Argv& argv);         // cmd_run.cpp
int run_vad(const Argv& argv);         // cmd_vad.cpp

}  // namespace oxi::cli
