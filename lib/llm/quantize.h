// Quantizing a GGUF model file as llama.cpp's llama-quantize does: every weight matrix
// re-encoded in the file type's block format, with llama.cpp's mix for the K-quant types (more
// bits for output.weight, for attn_v and ffn_down in the layers use_more_bits picks, ...; its
// llama_tensor_get_type rules), norms and other vectors kept, the metadata copied with
// general.file_type and general.quantization_version set. Tensors are written in llama.cpp's
// order (those outside blocks, then block by block, by name within each).
//
// Differences: the K-quant encoders search scales as ggml's reference quantizers do but are
// not bit-identical to them (kernels/formats/quant.h), so a file holds the same types and
// shapes as llama-quantize's and close but not equal blocks; an importance matrix (--imatrix,
// imatrix.h) weighs the K-quants', Q4_0 / Q4_1 / Q5_0 / Q5_1's and IQ4_NL / IQ4_XS's fits; the
// types that need one (Q2_K_S and the IQ1/IQ2/IQ3 families) are not done and refused;
// mixture-of-experts files are refused.
//
//   QuantizeResult r = quantize_model("m-f16.gguf", "m-q4_k_m.gguf", {.type = "Q4_K_M"});
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/formats/dtype.h"

namespace oxi::gguf {
class Reader;
}

namespace oxi::llm {

// One of llama.cpp's file types (llama_ftype): its name, its general.file_type id and the
// type most of its matrices get.
struct QuantizeFileType {
  std::string_view name;
  uint32_t id;
  kernels::DType default_type;
  std::string_view description;
};
// The file types quantize_model writes, in llama-quantize's list order.
std::span<const QuantizeFileType> quantize_file_types();
// A name (case-insensitive, llama-quantize's aliases Q3_K / Q4_K / Q5_K for the _M mixes) or a
// numeric id; throws oxi::Error listing the names for anything else or a type that needs what
// is not here (an importance matrix, IQ1/IQ2/IQ3 encoders).
const QuantizeFileType& find_quantize_file_type(std::string_view name_or_id);
// The same lookup without the error: nullptr for anything not a supported file type.
const QuantizeFileType* lookup_quantize_file_type(std::string_view name_or_id);

struct QuantizeOptions {
  std::string type = "Q4_K_M";    // a file type (find_quantize_file_type)
  bool pure = false;              // --pure: no mix, every matrix the default type
  bool allow_requantize = false;  // --allow-requantize: re-encode already quantized tensors
  bool leave_output = false;      // --leave-output-tensor: output.weight as it is
  std::optional<kernels::DType> output_tensor_type;    // --output-tensor-type
  std::optional<kernels::DType> token_embedding_type;  // --token-embedding-type
  // --tensor-type PATTERN=TYPE: tensors whose name the ECMAScript regex PATTERN finds a match
  // in get TYPE instead of the mix's choice (the first pattern that matches; llama.cpp's
  // manual overrides, quantized file types only).
  std::vector<std::pair<std::string, kernels::DType>> tensor_types;
  int threads = 0;  // 0: the machine's
  // --imatrix FILE: an importance matrix (imatrix.h; llama.cpp's GGUF or .dat form) whose mean
  // squares weigh each column's rounding error in the types that use one
  // (kernels::importance_row_encoder); tensors it lacks are encoded plainly. Empty: none.
  std::string imatrix_file;
};

struct QuantizedTensor {
  std::string name;
  std::vector<int64_t> shape;
  kernels::DType from, to;
  size_t bytes_in = 0, bytes_out = 0;
};

struct QuantizePlan {
  const QuantizeFileType* file_type = nullptr;
  std::vector<QuantizedTensor> tensors;  // in the output file's order
  size_t bytes_in = 0, bytes_out = 0;    // tensor data only
};

// Each tensor's type in the output file (what --dry-run prints). Throws oxi::Error naming the
// file for what cannot be quantized as asked (a quantized tensor without allow_requantize,
// a mixture-of-experts file).
QuantizePlan plan_quantization(const gguf::Reader& in, const QuantizeOptions& options);

// Writes `out` (through OUT.part, renamed when whole; nothing left on an error). With an
// importance matrix, the file records it as llama-quantize does (quantize.imatrix.file,
// .dataset, .entries_count, .chunks_count). Throws oxi::Error naming the imatrix file for one
// that does not load or whose rows do not fit a tensor's.
// on_tensor(tensor, index, count) sees each tensor as it is written (index from 0).
QuantizePlan quantize_model(
    const std::filesystem::path& in, const std::filesystem::path& out,
    const QuantizeOptions& options,
    const std::function<void(const QuantizedTensor&, size_t, size_t)>& on_tensor = {});

}  // namespace oxi::llm
