#include "lib/llm/quantize.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <regex>

#include "backends/cpu/cpu_backend.h"
#include "kernels/formats/quant.h"
#include "lib/core/error.h"
#include "lib/formats/gguf.h"
#include "lib/llm/imatrix.h"

namespace oxi::llm {
namespace {

using kernels::DType;

// llama.cpp's llama_ftype ids for the file types below.
enum FileTypeId : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ8_0 = 7,
  kQ5_0 = 8,
  kQ5_1 = 9,
  kQ2_K = 10,
  kQ3_K_S = 11,
  kQ3_K_M = 12,
  kQ3_K_L = 13,
  kQ4_K_S = 14,
  kQ4_K_M = 15,
  kQ5_K_S = 16,
  kQ5_K_M = 17,
  kQ6_K = 18,
  kIQ4_NL = 25,
  kIQ4_XS = 30,
  kBF16 = 32,
  kTQ1_0 = 36,
  kTQ2_0 = 37,
};

constexpr QuantizeFileType kFileTypes[] = {
    {"Q4_0", kQ4_0, DType::Q4_0, "4.5 bits a weight: blocks of 32, one scale"},
    {"Q4_1", kQ4_1, DType::Q4_1, "5 bits a weight: blocks of 32, a scale and a minimum"},
    {"Q5_0", kQ5_0, DType::Q5_0, "5.5 bits a weight: blocks of 32, one scale"},
    {"Q5_1", kQ5_1, DType::Q5_1, "6 bits a weight: blocks of 32, a scale and a minimum"},
    {"Q2_K", kQ2_K, DType::Q2_K, "Q2_K, attn_v / ffn_down / attn_output Q3_K or Q4_K"},
    {"TQ1_0", kTQ1_0, DType::TQ1_0, "ternary, 1.69 bits a weight (for ternary-trained models)"},
    {"TQ2_0", kTQ2_0, DType::TQ2_0, "ternary, 2.06 bits a weight (for ternary-trained models)"},
    {"Q3_K_S", kQ3_K_S, DType::Q3_K, "Q3_K throughout"},
    {"Q3_K_M", kQ3_K_M, DType::Q3_K, "Q3_K, attn_v / ffn_down / attn_output Q4_K or Q5_K"},
    {"Q3_K_L", kQ3_K_L, DType::Q3_K, "Q3_K, attn_v / ffn_down / attn_output Q5_K"},
    {"IQ4_NL", kIQ4_NL, DType::IQ4_NL, "4.5 bits a weight, a non-linear grid, blocks of 32"},
    {"IQ4_XS", kIQ4_XS, DType::IQ4_XS, "4.25 bits a weight, a non-linear grid, blocks of 256"},
    {"Q4_K_S", kQ4_K_S, DType::Q4_K, "Q4_K, the first attn_v / ffn_down Q5_K"},
    {"Q4_K_M", kQ4_K_M, DType::Q4_K, "Q4_K, half the attn_v / ffn_down Q6_K"},
    {"Q5_K_S", kQ5_K_S, DType::Q5_K, "Q5_K throughout"},
    {"Q5_K_M", kQ5_K_M, DType::Q5_K, "Q5_K, half the attn_v / ffn_down Q6_K"},
    {"Q6_K", kQ6_K, DType::Q6_K, "6.56 bits a weight"},
    {"Q8_0", kQ8_0, DType::Q8_0, "8.5 bits a weight"},
    {"F16", kF16, DType::F16, "16-bit float"},
    {"BF16", kBF16, DType::BF16, "16-bit bfloat"},
    {"F32", kF32, DType::F32, "32-bit float"},
};

std::string upper(std::string_view s) {
  std::string u(s);
  for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

// The broad kinds of tensor llama.cpp's rules tell apart, by name.
enum class Category {
  kTokenEmbd,
  kAttnQ,
  kAttnV,  // attn_v, and fused attn_qkv / attn_kv_b (as sensitive)
  kAttnK,
  kAttnOutput,
  kFfnUp,
  kFfnGate,
  kFfnDown,
  kOutput,
  kOther,
};

Category category_of(const std::string& name) {
  const auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
  if (name == "output.weight") return Category::kOutput;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight")
    return Category::kTokenEmbd;
  if (has("attn_qkv.weight") || has("attn_kv_b.weight") || has("attn_v.weight"))
    return Category::kAttnV;
  if (has("attn_k.weight")) return Category::kAttnK;
  if (has("attn_q.weight")) return Category::kAttnQ;
  if (has("attn_output.weight")) return Category::kAttnOutput;
  if (has("ffn_up")) return Category::kFfnUp;
  if (has("ffn_gate")) return Category::kFfnGate;
  if (has("ffn_down")) return Category::kFfnDown;
  return Category::kOther;
}

// llama.cpp's tensor_allows_quantization: matrices named *weight but norms, small tables and
// the kinds it keeps as they are.
bool may_quantize(const TensorView& t, const QuantizeOptions& options) {
  const std::string& name = t.name;
  if (t.shape.size() < 2 || t.numel() == 0) return false;
  if (name.size() < 6 || name.compare(name.size() - 6, 6, "weight") != 0) return false;
  if (options.leave_output && name == "output.weight") return false;
  for (const char* kept :
       {"_norm.weight", "ffn_gate_inp.weight", "altup", "laurel", "per_layer_model_proj",
        "ssm_conv1d", "shortconv.conv.weight", "attn_rel_b.weight", "time_mix_", ".position_embd",
        ".rel_pos", ".patch_embd", ".patch_merger"})
    if (name.find(kept) != std::string::npos) return false;
  return name != "position_embd.weight" && name != "token_types.weight";
}

size_t block_elems(DType t) {
  return kernels::info(t).block_elems;
}

// The type a row length that is not a whole number of `t`'s blocks gets instead (llama.cpp's
// tensor_type_fallback), F16 where that does not divide it either.
DType fallback(DType t, int64_t ncols) {
  if (ncols % static_cast<int64_t>(block_elems(t)) == 0) return t;
  DType other = DType::F16;
  switch (t) {
    case DType::IQ4_XS:
      other = DType::IQ4_NL;
      break;
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::TQ1_0:
    case DType::TQ2_0:
      other = DType::Q4_0;
      break;
    case DType::Q4_K:
      other = DType::Q5_0;
      break;
    case DType::Q5_K:
      other = DType::Q5_1;
      break;
    case DType::Q6_K:
      other = DType::Q8_0;
      break;
    default:
      break;
  }
  return ncols % static_cast<int64_t>(block_elems(other)) == 0 ? other : DType::F16;
}

// What llama.cpp's llama_tensor_get_type_impl decides for one tensor, for the file types here
// (its importance-matrix, IQ1-IQ3 and expert branches have no file type here).
struct Mix {
  uint32_t ftype = 0;
  bool falcon = false, is_70b = false, tied = true;
  int64_t n_gqa = 1;
  int n_attention_wv = 0, i_attention_wv = 0, n_layer = 0, i_ffn_down = 0;
  std::optional<DType> output_type;

  static bool use_more_bits(int i, int n) {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
  }

  DType choose(DType t, Category c, int64_t ncols) {
    const uint32_t f = ftype;
    if (c == Category::kOutput || (tied && c == Category::kTokenEmbd)) {
      if (output_type) return *output_type;
      if (falcon || ncols % static_cast<int64_t>(block_elems(t)) != 0) return DType::Q8_0;
      return t != DType::Q8_0 ? DType::Q6_K : t;
    }
    if (c == Category::kTokenEmbd) return f == kTQ1_0 || f == kTQ2_0 ? DType::Q4_K : t;
    if (c == Category::kAttnV) {
      if (f == kQ2_K)
        t = n_gqa >= 4 ? DType::Q4_K : DType::Q3_K;
      else if (f == kQ3_K_M)
        t = i_attention_wv < 2 ? DType::Q5_K : DType::Q4_K;
      else if (f == kQ3_K_L)
        t = DType::Q5_K;
      else if ((f == kIQ4_NL || f == kIQ4_XS) && n_gqa >= 4)
        t = DType::Q5_K;
      else if ((f == kQ4_K_M || f == kQ5_K_M) && use_more_bits(i_attention_wv, n_attention_wv))
        t = DType::Q6_K;
      else if (f == kQ4_K_S && i_attention_wv < 4)
        t = DType::Q5_K;
      // 70B: 8 heads share each attn_v, 8x smaller than attn_q; more bits cost little there.
      if (is_70b && (t == DType::Q3_K || t == DType::Q4_K)) t = DType::Q5_K;
      ++i_attention_wv;
      return t;
    }
    if (c == Category::kFfnDown) {
      const int i = i_ffn_down++, n = n_layer;
      if (f == kQ2_K) return DType::Q3_K;
      if (f == kQ3_K_M)
        return i < n / 16                       ? DType::Q5_K
               : !falcon || use_more_bits(i, n) ? DType::Q4_K
                                                : DType::Q3_K;
      if (f == kQ3_K_L) return falcon ? DType::Q4_K : DType::Q5_K;
      if (f == kQ4_K_M) {
        if (falcon)
          return i < n / 16 ? DType::Q6_K : use_more_bits(i, n) ? DType::Q5_K : DType::Q4_K;
        return use_more_bits(i, n) ? DType::Q6_K : t;
      }
      if (i < n / 8 && (f == kIQ4_NL || f == kIQ4_XS)) return DType::Q5_K;
      if (f == kQ5_K_M && use_more_bits(i, n)) return DType::Q6_K;
      if (f == kQ4_K_S && !falcon && i < n / 8) return DType::Q5_K;
      return t;
    }
    if (c == Category::kAttnOutput) {
      if (falcon) return f == kQ3_K_L ? DType::Q4_K : t;
      if (f == kQ2_K) return DType::Q3_K;
      if (f == kQ3_K_M) return DType::Q4_K;
      if (f == kQ3_K_L) return DType::Q5_K;
    }
    return t;
  }
};

// Tensors in llama.cpp's order: outside the blocks first, then blk.0, blk.1, ..., by name within.
int block_of(const std::string& name) {
  int layer = -1;
  if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1) return -1;
  return layer;
}

}  // namespace

std::span<const QuantizeFileType> quantize_file_types() {
  return kFileTypes;
}

const QuantizeFileType* lookup_quantize_file_type(std::string_view name_or_id) {
  std::string wanted = upper(name_or_id);
  for (const auto& [alias, full] :
       {std::pair{"Q3_K", "Q3_K_M"}, {"Q4_K", "Q4_K_M"}, {"Q5_K", "Q5_K_M"}})
    if (wanted == alias) wanted = full;
  for (const QuantizeFileType& t : kFileTypes)
    if (wanted == t.name || wanted == std::to_string(t.id)) return &t;
  return nullptr;
}

const QuantizeFileType& find_quantize_file_type(std::string_view name_or_id) {
  if (const QuantizeFileType* t = lookup_quantize_file_type(name_or_id)) return *t;
  const std::string wanted = upper(name_or_id);
  std::string names;
  for (const QuantizeFileType& t : kFileTypes)
    names.append(names.empty() ? "" : ", ").append(t.name);
  for (const char* needs_imatrix : {"Q2_K_S", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ1_S",
                                    "IQ1_M", "IQ3_XXS", "IQ3_XS", "IQ3_S", "IQ3_M"})
    if (wanted == needs_imatrix)
      throw Error("quantize", "type " + wanted +
                                  " is not supported (it needs an importance matrix or IQ1 / "
                                  "IQ2 / IQ3 encoders); supported: " +
                                  names);
  throw Error("quantize", "unknown type '" + std::string(name_or_id) + "'; supported: " + names);
}

QuantizePlan plan_quantization(const gguf::Reader& in, const QuantizeOptions& options) {
  const std::string file = in.path().string();
  QuantizePlan plan;
  plan.file_type = &find_quantize_file_type(options.type);
  const DType default_type = plan.file_type->default_type;
  const bool mixes = kernels::info(default_type).quantized && !options.pure;

  const std::string arch = in.get_string_or("general.architecture", "");
  if (in.get_u64_or(arch + ".expert_count", 0) > 1)
    throw Error(file, "quantize: mixture-of-experts models are not supported");
  Mix mix;
  mix.ftype = plan.file_type->id;
  mix.falcon = arch == "falcon";
  mix.n_layer = static_cast<int>(in.get_u64_or(arch + ".block_count", 0));
  mix.output_type = options.output_tensor_type;
  // Per-layer head counts (arrays) leave n_gqa at 1, as the scalar rules have no per-layer form.
  const gguf::Value* heads = in.find(arch + ".attention.head_count");
  const gguf::Value* kv_heads = in.find(arch + ".attention.head_count_kv");
  if (heads && heads->type != gguf::ValueType::ARRAY) {
    const uint64_t n_head = in.get_u64(arch + ".attention.head_count");
    const uint64_t n_kv = kv_heads && kv_heads->type != gguf::ValueType::ARRAY
                              ? in.get_u64(arch + ".attention.head_count_kv")
                              : n_head;
    if (n_kv > 0) mix.n_gqa = static_cast<int64_t>(n_head / n_kv);
    // llama.cpp's LLM_TYPE_70B: llama with grouped-query attention, qwen2, at 80 layers.
    mix.is_70b = mix.n_layer == 80 && ((arch == "llama" && n_head != n_kv) || arch == "qwen2");
  }

  std::vector<const TensorView*> order;
  for (const TensorView& t : in.tensors()) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](const TensorView* a, const TensorView* b) {
    const int la = block_of(a->name), lb = block_of(b->name);
    return la != lb ? la < lb : a->name < b->name;
  });
  for (const TensorView* t : order) {
    if (t->name == "output.weight") mix.tied = false;
    mix.n_attention_wv += category_of(t->name) == Category::kAttnV;
  }

  std::vector<std::pair<std::regex, DType>> overrides;
  for (const auto& [pattern, type] : options.tensor_types) {
    try {
      overrides.emplace_back(std::regex(pattern), type);
    } catch (const std::regex_error& e) {
      throw Error("quantize", "--tensor-type pattern '" + pattern + "': " + e.what());
    }
  }
  const auto override_for = [&](const std::string& name) -> std::optional<DType> {
    for (const auto& [pattern, type] : overrides)
      if (std::regex_search(name, pattern)) return type;
    return std::nullopt;
  };

  for (const TensorView* t : order) {
    QuantizedTensor q{t->name, t->shape, t->dtype, t->dtype, t->data.size(), t->data.size()};
    if (may_quantize(*t, options)) {
      const Category c = category_of(t->name);
      const int64_t ncols = t->shape.back();
      if (options.token_embedding_type && c == Category::kTokenEmbd) {
        q.to = *options.token_embedding_type;
      } else if (options.output_tensor_type && c == Category::kOutput) {
        q.to = *options.output_tensor_type;
      } else {
        q.to = default_type;
        if (kernels::info(default_type).quantized) {
          // As llama.cpp: an overridden tensor skips the mix, its layer counters too.
          if (const std::optional<DType> manual = override_for(t->name))
            q.to = *manual;
          else if (mixes)
            q.to = mix.choose(q.to, c, ncols);
          q.to = fallback(q.to, ncols);
        }
      }
      if (ncols % static_cast<int64_t>(block_elems(q.to)) != 0)
        throw Error(file, "quantize: tensor '" + t->name + "' has rows of " +
                              std::to_string(ncols) + ", not whole " +
                              std::string(kernels::name(q.to)) + " blocks");
      if (q.to != q.from && kernels::info(q.from).quantized && !options.allow_requantize)
        throw Error(file, "quantize: tensor '" + t->name + "' is already " +
                              std::string(kernels::name(q.from)) +
                              "; requantizing loses precision (allow it with --allow-requantize)");
      if (q.to != q.from && (!kernels::row_decoder(q.from) || !kernels::row_encoder(q.to)))
        throw Error(file, "quantize: tensor '" + t->name +
                              "': " + std::string(kernels::name(q.from)) + " to " +
                              std::string(kernels::name(q.to)) + " is not supported");
      q.bytes_out = static_cast<size_t>(t->numel() / ncols) *
                    kernels::row_bytes(q.to, static_cast<size_t>(ncols));
    }
    plan.bytes_in += q.bytes_in;
    plan.bytes_out += q.bytes_out;
    plan.tensors.push_back(std::move(q));
  }
  return plan;
}

QuantizePlan quantize_model(
    const std::filesystem::path& in, const std::filesystem::path& out,
    const QuantizeOptions& options,
    const std::function<void(const QuantizedTensor&, size_t, size_t)>& on_tensor) {
  const gguf::Reader reader(in);
  QuantizePlan plan = plan_quantization(reader, options);
  std::error_code ec;
  if (std::filesystem::equivalent(in, out, ec))
    throw Error(out.string(), "quantize: the output would overwrite the input");

  gguf::Writer writer;
  for (const auto& [key, value] : reader.metadata())
    if (!key.starts_with("split.")) writer.set(key, value);
  if (reader.alignment() != 32) writer.set_alignment(reader.alignment());
  writer.set_u32("general.quantization_version", 2);  // ggml's GGML_QNT_VERSION
  writer.set_u32("general.file_type", plan.file_type->id);
  // Each tensor's importance (where the imatrix has it), checked before any tensor is written.
  std::vector<std::optional<std::vector<float>>> importances(plan.tensors.size());
  if (!options.imatrix_file.empty()) {
    const ImportanceMatrix imatrix = ImportanceMatrix::load(options.imatrix_file);
    writer.set_string("quantize.imatrix.file", options.imatrix_file);
    if (!imatrix.datasets.empty())
      writer.set_string("quantize.imatrix.dataset", imatrix.datasets.front());
    writer.set_i32("quantize.imatrix.entries_count", static_cast<int32_t>(imatrix.entries.size()));
    writer.set_i32("quantize.imatrix.chunks_count", static_cast<int32_t>(imatrix.chunk_count));
    for (size_t index = 0; index < plan.tensors.size(); ++index) {
      const QuantizedTensor& q = plan.tensors[index];
      std::optional<std::vector<float>>& importance = importances[index];
      importance = imatrix.importance(q.name);
      if (importance && importance->size() != static_cast<size_t>(q.shape.back()))
        throw Error(options.imatrix_file, "'" + q.name + "' has " +
                                              std::to_string(importance->size()) +
                                              " columns in the imatrix, " +
                                              std::to_string(q.shape.back()) + " in the model");
      if (importance && std::any_of(importance->begin(), importance->end(),
                                    [](float v) { return !std::isfinite(v) || v < 0; }))
        throw Error(options.imatrix_file, "'" + q.name + "' has a negative or non-finite value");
    }
  }

  const std::unique_ptr<backends::Backend> backend = backends::make_cpu_backend(options.threads);
  for (size_t index = 0; index < plan.tensors.size(); ++index) {
    const QuantizedTensor& q = plan.tensors[index];
    const TensorView& view = reader.tensor(q.name);
    // The columns' importance where the imatrix has this tensor and its type weighs by one.
    std::optional<std::vector<float>> importance;
    if (q.to != q.from && kernels::importance_row_encoder(q.to))
      importance = std::move(importances[index]);
    writer.add_tensor(
        q.name, q.to, q.shape,
        [&view, &q, &backend, &on_tensor, &plan, index, importance = std::move(importance)] {
          std::vector<std::byte> bytes;
          if (q.to == q.from) {
            bytes.assign(view.data.begin(), view.data.end());
          } else {
            const auto ncols = static_cast<size_t>(q.shape.back());
            const size_t rows = static_cast<size_t>(view.numel()) / ncols;
            const size_t in_row = kernels::row_bytes(q.from, ncols);
            const size_t out_row = kernels::row_bytes(q.to, ncols);
            bytes.resize(rows * out_row);
            const kernels::RowDecoder decode = kernels::row_decoder(q.from);
            const kernels::RowEncoder encode = kernels::row_encoder(q.to);
            const kernels::ImportanceRowEncoder weighted = kernels::importance_row_encoder(q.to);
            backend->parallel_for(rows, 16, [&](size_t begin, size_t end) {
              std::vector<float> row(ncols);
              for (size_t r = begin; r < end; ++r) {
                decode(view.data.data() + r * in_row, row.data(), ncols);
                if (importance)
                  weighted(row.data(), importance->data(), bytes.data() + r * out_row, ncols);
                else
                  encode(row.data(), bytes.data() + r * out_row, ncols);
              }
            });
          }
          if (on_tensor) on_tensor(q, index, plan.tensors.size());
          return bytes;
        });
  }
  writer.write(out);
  return plan;
}

}  // namespace oxi::llm
