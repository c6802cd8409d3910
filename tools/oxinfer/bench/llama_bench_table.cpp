#include "tools/oxinfer/bench/llama_bench_table.h"

#include <cstdint>
#include <cstdio>
#include <map>
#include <system_error>

#include "kernels/formats/dtype.h"
#include "lib/core/error.h"
#include "lib/formats/gguf.h"

namespace oxi::bench {
namespace {

// llama.cpp's llama_model_ftype_name for the file types a GGUF here can hold.
std::string file_type_name(uint64_t id) {
  static const std::map<uint64_t, const char*> kNames = {{0, "all F32"},
                                                         {1, "F16"},
                                                         {2, "Q4_0"},
                                                         {3, "Q4_1"},
                                                         {7, "Q8_0"},
                                                         {8, "Q5_0"},
                                                         {9, "Q5_1"},
                                                         {10, "Q2_K - Medium"},
                                                         {11, "Q3_K - Small"},
                                                         {12, "Q3_K - Medium"},
                                                         {13, "Q3_K - Large"},
                                                         {14, "Q4_K - Small"},
                                                         {15, "Q4_K - Medium"},
                                                         {16, "Q5_K - Small"},
                                                         {17, "Q5_K - Medium"},
                                                         {18, "Q6_K"},
                                                         {21, "Q2_K - Small"},
                                                         {25, "IQ4_NL - 4.5 bpw"},
                                                         {30, "IQ4_XS - 4.25 bpw"},
                                                         {32, "BF16"},
                                                         {36, "TQ1_0 - 1.69 bpw ternary"},
                                                         {37, "TQ2_0 - 2.06 bpw ternary"}};
  const auto it = kNames.find(id);
  return it == kNames.end() ? "?" : it->second;
}

// Without general.file_type, llama.cpp guesses it from the most common matrix type.
std::string guessed_file_type(const gguf::Reader& r) {
  std::map<kernels::DType, size_t> counts;
  for (const TensorView& t : r.tensors())
    if (t.shape.size() >= 2) ++counts[t.dtype];
  if (counts.empty()) return "?";
  kernels::DType most = counts.begin()->first;
  for (const auto& [type, n] : counts)
    if (n > counts[most]) most = type;
  using kernels::DType;
  static const std::map<DType, uint64_t> kFileType = {
      {DType::F32, 0},   {DType::F16, 1},     {DType::BF16, 32},   {DType::Q4_0, 2},
      {DType::Q4_1, 3},  {DType::Q5_0, 8},    {DType::Q5_1, 9},    {DType::Q8_0, 7},
      {DType::Q2_K, 10}, {DType::Q3_K, 12},   {DType::Q4_K, 15},   {DType::Q5_K, 17},
      {DType::Q6_K, 18}, {DType::IQ4_NL, 25}, {DType::IQ4_XS, 30}, {DType::TQ1_0, 36},
      {DType::TQ2_0, 37}};
  const auto it = kFileType.find(most);
  return it == kFileType.end() ? "?" : file_type_name(it->second) + " (guessed)";
}

}  // namespace

void print_llama_bench_table(const std::filesystem::path& model_file, const std::string& arch,
                             long long threads, const std::vector<LlamaBenchRow>& rows) {
  std::string model = arch, size = "-", params = "-";
  std::error_code ec;
  if (std::filesystem::is_regular_file(model_file, ec) && model_file.extension() == ".gguf") {
    try {
      const gguf::Reader r(model_file);
      double bytes = 0, count = 0;
      for (const TensorView& t : r.tensors()) {
        bytes += static_cast<double>(t.data.size());
        count += static_cast<double>(t.numel());
      }
      char buf[64];
      std::snprintf(buf, sizeof buf, count >= 1e10 ? "%.0fB" : "%.1fB", count / 1e9);
      model.append(" ").append(buf).append(" ").append(
          r.has("general.file_type") ? file_type_name(r.get_u64("general.file_type"))
                                     : guessed_file_type(r));
      std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / (1024.0 * 1024.0));
      size = buf;
      std::snprintf(buf, sizeof buf, "%.2f B", count / 1e9);
      params = buf;
    } catch (const Error&) {  // the model loaded; the table keeps its dashes
    }
  }
  std::printf("| %-30s | %10s | %10s | %-10s | %7s | %15s | %20s |\n", "model", "size", "params",
              "backend", "threads", "test", "t/s");
  std::printf(
      "| ------------------------------ | ---------: | ---------: | ---------- | ------: | "
      "--------------: | -------------------: |\n");
  for (const LlamaBenchRow& row : rows) {
    char tps[64];
    std::snprintf(tps, sizeof tps, "%.2f \u00b1 %.2f", row.tok_s, row.sd);
    std::printf("| %-30s | %10s | %10s | %-10s | %7lld | %15s | %20s |\n", model.c_str(),
                size.c_str(), params.c_str(), "CPU", threads, row.test.c_str(), tps);
  }
}

}  // namespace oxi::bench
