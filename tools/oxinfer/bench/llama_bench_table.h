// llama-bench's markdown table (`-o md`), so that `oxinfer bench llm` results sit beside
// llama.cpp's: | model | size | params | backend | threads | test | t/s |. The model column is
// "arch size type" with the size the parameter count rounded (llama.cpp names it from the
// layer count) and the type llama.cpp's name of general.file_type ("Q4_K - Medium").
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace oxi::bench {

struct LlamaBenchRow {
  std::string test;  // "pp512", "tg128 @ d4096"
  double tok_s = 0, sd = 0;
};

// Size and parameters are a GGUF's tensors' ("-" for other model files).
void print_llama_bench_table(const std::filesystem::path& model_file, const std::string& arch,
                             long long threads, const std::vector<LlamaBenchRow>& rows);

}  // namespace oxi::bench
