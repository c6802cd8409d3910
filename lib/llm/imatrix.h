// Importance matrices, as llama.cpp's llama-imatrix makes them and llama-quantize --imatrix
// uses them: for each layer matrix (by its GGUF tensor name), the sum over the evaluated tokens
// of each input column's square, and how many tokens; quantizing then weighs each column's
// rounding error by its mean square (kernels::importance_row_encoder, quantize.h).
//
// Files: llama.cpp's GGUF form, written and read (general.type "imatrix"; per matrix
// NAME.in_sum2, f32 of its columns, and NAME.counts, f32 of one; imatrix.datasets,
// imatrix.chunk_count, imatrix.chunk_size), and its older .dat form (int32 entry count; per
// entry int32 name length, the name, int32 calls, int32 value count, float values = mean square
// x calls; int32 chunk count, int32 dataset length, the dataset name), read and written.
//
//   ImportanceMatrix im;
//   ImatrixCollector collector(model, *backend, im);
//   Session session(model_ptr, collector, 512);   // evaluate text: the sums fill in
//   im.save("imatrix.gguf");
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/backend.h"
#include "lib/llm/model.h"

namespace oxi::llm {

struct ImportanceMatrix {
  struct Entry {
    std::vector<double> in_sum2;  // per input column: the sum of its squares
    double count = 0;             // tokens summed
  };
  std::map<std::string, Entry> entries;  // by tensor name, in name order
  std::vector<std::string> datasets;     // the texts it was computed from
  uint32_t chunk_count = 0, chunk_size = 0;

  // The mean squares of `name`'s columns (what quantizing weighs by), or none.
  std::optional<std::vector<float>> importance(const std::string& name) const;

  // GGUF unless the name ends in ".dat" (or `dat`). Throws oxi::Error naming the file.
  void save(const std::filesystem::path& file, std::optional<bool> dat = std::nullopt) const;
  // Either form, told by the file's first bytes. Throws oxi::Error naming the file and what is
  // wrong with it.
  static ImportanceMatrix load(const std::filesystem::path& file);
};

// A Backend that hands every call to `inner` and, for each product of at least 16 rows (as
// llama-imatrix, which leaves out small batches) over the model's layer matrices (and the
// output matrix when `output_too`, but not an output tied to the embedding), adds each input
// column's square and the rows to the matrix's entry. Matrices a file holds fused (phi3's
// attn_qkv, ffn_up) count once per product.
class ImatrixCollector : public backends::Backend {
 public:
  ImatrixCollector(const Model& model, backends::Backend& inner, ImportanceMatrix& out,
                   bool output_too = false);

  std::string_view name() const override { return inner_.name(); }
  int threads() const override { return inner_.threads(); }
  void matmul(const backends::WeightMatrix& w, std::span<const float> x, size_t m,
              std::span<float> y, const float* bias = nullptr) override;
  void matmul_shared_input(std::span<const float> x, size_t m,
                           std::span<const SharedInputProduct> products) override;
  void attention(const backends::AttentionArgs& args) override { inner_.attention(args); }
  void release_scratch() override { inner_.release_scratch(); }
  void parallel_for(size_t n, size_t grain,
                    const std::function<void(size_t, size_t)>& fn) override {
    inner_.parallel_for(n, grain, fn);
  }

 private:
  // Adds x's rows to the entry of the matrix at `data`, if it is one collected.
  void collect(const void* data, std::span<const float> x, size_t m, size_t cols);

  backends::Backend& inner_;
  ImportanceMatrix& out_;
  std::unordered_map<const void*, std::string> names_;  // matrix data -> tensor name
};

}  // namespace oxi::llm
