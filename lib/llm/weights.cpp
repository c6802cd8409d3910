#include "lib/llm/weights.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <system_error>
#include <tuple>

#include "kernels/formats/quant.h"
#include "lib/core/error.h"
#include "lib/formats/mapped_file.h"
#include "lib/formats/weight_builder.h"

namespace oxi::llm {
namespace {

// The checkpoint names of one layer's tensors (empty: the format has no such tensor).
struct LayerNames {
  std::string attn_norm, wq, wk, wv, wqkv, bq, bk, bv, q_norm, k_norm, wo, post_attn_norm;
  std::string ffn_norm, w_gate, w_up, w_gate_up, w_down, post_ffn_norm;
};

// llama.cpp's names (llama-arch.cpp): blk.N.attn_q.weight ...
LayerNames gguf_layer_names(int layer) {
  const std::string p = "blk." + std::to_string(layer) + ".";
  return {p + "attn_norm.weight",   p + "attn_q.weight",
          p + "attn_k.weight",      p + "attn_v.weight",
          p + "attn_qkv.weight",    p + "attn_q.bias",
          p + "attn_k.bias",        p + "attn_v.bias",
          p + "attn_q_norm.weight", p + "attn_k_norm.weight",
          p + "attn_output.weight", p + "post_attention_norm.weight",
          p + "ffn_norm.weight",    p + "ffn_gate.weight",
          p + "ffn_up.weight",      "",
          p + "ffn_down.weight",    p + "post_ffw_norm.weight"};
}

// transformers' names: model.layers.N.self_attn.q_proj.weight ... Gemma 3 has four norms per
// layer and calls the pre-MLP one pre_feedforward_layernorm; elsewhere post_attention_layernorm
// is the pre-MLP norm.
LayerNames hf_layer_names(const std::string& prefix, int layer, bool gemma) {
  const std::string p = prefix + "layers." + std::to_string(layer) + ".";
  const std::string a = p + "self_attn.", m = p + "mlp.";
  LayerNames n{p + "input_layernorm.weight",
               a + "q_proj.weight",
               a + "k_proj.weight",
               a + "v_proj.weight",
               a + "qkv_proj.weight",
               a + "q_proj.bias",
               a + "k_proj.bias",
               a + "v_proj.bias",
               a + "q_norm.weight",
               a + "k_norm.weight",
               a + "o_proj.weight",
               "",
               p + "post_attention_layernorm.weight",
               m + "gate_proj.weight",
               m + "up_proj.weight",
               m + "gate_up_proj.weight",
               m + "down_proj.weight",
               ""};
  if (gemma) {
    n.post_attn_norm = p + "post_attention_layernorm.weight";
    n.ffn_norm = p + "pre_feedforward_layernorm.weight";
    n.post_ffn_norm = p + "post_feedforward_layernorm.weight";
  }
  return n;
}

// The LLM's view of formats::WeightBuilder: float matrices re-encoded as `quantize_to` (HF
// --quant), norm weights shifted (Gemma's HF RMSNorm multiplies by 1 + w), optional tensors.
class WeightBuilder {
 public:
  WeightBuilder(formats::TensorFinder find, ModelWeights& out, std::string context)
      : b_(std::move(find), out.copies, std::move(context)) {}

  std::optional<kernels::DType> quantize_to;  // HF --quant: float matrices become this
  float norm_shift = 0.0f;                    // added to every *norm.weight (Gemma HF: 1 + w)

  bool has(const std::string& name) const { return b_.has(name); }

  backends::WeightMatrix matrix(const std::string& name, size_t rows, size_t cols) {
    return b_.matrix(name, rows, cols, quantize_to);
  }

  std::span<const float> vector(const std::string& name, size_t n) {
    return b_.floats(name, n, name.ends_with("norm.weight") ? norm_shift : 0.0f);
  }

  std::span<const float> optional_vector(const std::string& name, size_t n) {
    return has(name) ? vector(name, n) : std::span<const float>{};
  }

 private:
  formats::WeightBuilder b_;
};

// Rows [first, first + count) of w, as a view of the same bytes (fused qkv / gate_up).
backends::WeightMatrix row_slice(const backends::WeightMatrix& w, size_t first, size_t count) {
  backends::WeightMatrix s = w;
  s.data = static_cast<const std::byte*>(w.data) + first * w.row_bytes;
  s.rows = count;
  return s;
}

LayerWeights load_layer(WeightBuilder& b, const LayerNames& n, const ModelConfig& c) {
  const size_t embd = c.n_embd, q_dim = c.q_dim(), kv_dim = c.kv_dim(), ff = c.n_ff;
  LayerWeights l;
  l.attn_norm = b.vector(n.attn_norm, embd);
  if (!n.wq.empty() && b.has(n.wq)) {
    l.wq = b.matrix(n.wq, q_dim, embd);
    l.wk = b.matrix(n.wk, kv_dim, embd);
    l.wv = b.matrix(n.wv, kv_dim, embd);
  } else {  // phi3: one fused [q; k; v] projection
    const backends::WeightMatrix qkv = b.matrix(n.wqkv, q_dim + 2 * kv_dim, embd);
    l.wq = row_slice(qkv, 0, q_dim);
    l.wk = row_slice(qkv, q_dim, kv_dim);
    l.wv = row_slice(qkv, q_dim + kv_dim, kv_dim);
  }
  l.bq = b.optional_vector(n.bq, q_dim);
  l.bk = b.optional_vector(n.bk, kv_dim);
  l.bv = b.optional_vector(n.bv, kv_dim);
  const bool qk_norm = c.arch == "qwen3" || c.arch == "gemma3";
  if (qk_norm) {
    l.q_norm = b.vector(n.q_norm, c.head_dim);
    l.k_norm = b.vector(n.k_norm, c.head_dim);
  }
  l.wo = b.matrix(n.wo, embd, q_dim);
  if (c.arch == "gemma3") l.post_attn_norm = b.vector(n.post_attn_norm, embd);
  l.ffn_norm = b.vector(n.ffn_norm, embd);
  // phi3 fuses [gate; up] (HF gate_up_proj, GGUF ffn_up with 2 * n_ff rows and no ffn_gate).
  if (b.has(n.w_gate)) {
    l.w_gate = b.matrix(n.w_gate, ff, embd);
    l.w_up = b.matrix(n.w_up, ff, embd);
  } else {
    const std::string& fused = b.has(n.w_gate_up) ? n.w_gate_up : n.w_up;
    const backends::WeightMatrix gate_up = b.matrix(fused, 2 * ff, embd);
    l.w_gate = row_slice(gate_up, 0, ff);
    l.w_up = row_slice(gate_up, ff, ff);
  }
  l.w_down = b.matrix(n.w_down, embd, ff);
  if (c.arch == "gemma3") l.post_ffn_norm = b.vector(n.post_ffn_norm, embd);
  return l;
}

void load_top(WeightBuilder& b, ModelConfig& c, ModelWeights& w, const std::string& embd_name,
              const std::string& norm_name, const std::string& output_name) {
  w.token_embd = b.matrix(embd_name, c.n_vocab, c.n_embd);
  w.output_norm = b.vector(norm_name, c.n_embd);
  c.tied_embeddings = !b.has(output_name);
  w.output = c.tied_embeddings ? w.token_embd : b.matrix(output_name, c.n_vocab, c.n_embd);
}

// Whether [p, p + n) lies in one file-backed mapping (/proc/self/maps: a non-zero inode). Only
// then is MADV_DONTNEED harmless: it unmaps page-cache pages, where on an anonymous buffer (an
// in-memory MappedFile) it would zero memory.
bool in_file_mapping(const void* p, size_t n) {
  std::ifstream maps("/proc/self/maps");
  const auto b = reinterpret_cast<uintptr_t>(p);
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long start = 0, end = 0, inode = 0;
    char perms[8] = {}, dev[16] = {};
    unsigned long long offset = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx %7s %llx %15s %lu", &start, &end, perms, &offset, dev,
                    &inode) != 6)
      continue;
    if (b >= start && b < end) return inode != 0 && b + n <= end;
  }
  return false;
}

// Reads a mapped file's bytes from the file itself, then lets go of the mapped pages. A repack
// reads every byte of a matrix once; read through the mapping, those pages would stay resident
// beside the repacked copy (twice the matrices' size in RSS), while a read() only passes through
// the page cache. Pages can be mapped anyway by the kernel's fault-around (a whole large folio
// of the neighbouring matrix when a norm vector is read: 70 MB of a 620 MB TinyLlama-shaped
// Q4_0 file), so release() unmaps a repacked matrix's pages. A mapping of bytes in memory
// (tests) has no such file and is read in place.
class FileReader {
 public:
  explicit FileReader(const MappedFile* mapping) : mapping_(mapping) {
    std::error_code ec;
    if (mapping && mapping->size() > 0 && std::filesystem::is_regular_file(mapping->path(), ec) &&
        std::filesystem::file_size(mapping->path(), ec) == mapping->size() && !ec &&
        in_file_mapping(mapping->bytes().data(), mapping->size())) {
      file_.open(mapping->path(), std::ios::binary);
    }
  }

  // Copies [view, view + bytes) to dst: from the file when the view lies in its mapping.
  void read(const void* view, size_t bytes, std::byte* dst) {
    if (in_file(view, bytes)) {
      const auto* p = static_cast<const std::byte*>(view);
      file_.seekg(static_cast<std::streamoff>(p - mapping_->bytes().data()));
      file_.read(reinterpret_cast<char*>(dst), static_cast<std::streamsize>(bytes));
      if (file_) return;
      file_.clear();  // fall back to the mapping
    }
    std::memcpy(dst, view, bytes);
  }

  // Unmaps the whole pages of [view, view + bytes) when they belong to the file's mapping (a
  // later access, if any, maps them again from the page cache).
  void release(const void* view, size_t bytes) {
    if (!in_file(view, bytes)) return;
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const auto b = reinterpret_cast<uintptr_t>(view);
    const uintptr_t first = (b + page - 1) / page * page, last = (b + bytes) / page * page;
    if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  }

 private:
  bool in_file(const void* view, size_t bytes) const {
    if (!file_.is_open()) return false;
    const std::span<const std::byte> all = mapping_->bytes();
    const auto* p = static_cast<const std::byte*>(view);
    return p >= all.data() && p + bytes <= all.data() + all.size();
  }

  const MappedFile* mapping_;
  std::ifstream file_;
};

// The heap copy (WeightCopies::bytes) holding [p, p + bytes), for repacking in place.
std::byte* owned_copy(formats::WeightCopies& copies, const void* p, size_t bytes) {
  const auto* b = static_cast<const std::byte*>(p);
  for (std::vector<std::byte>& v : copies.bytes) {
    if (b >= v.data() && b + bytes <= v.data() + v.size()) return v.data() + (b - v.data());
  }
  return nullptr;
}

// Rewrites m's rows as `to` in place (m is one of w's own copies).
void repack_in_place(std::byte* own, const backends::WeightMatrix& m, kernels::DType to) {
  std::vector<std::byte> row(m.row_bytes);
  for (size_t r = 0; r < m.rows; ++r) {
    std::byte* at = own + r * m.row_bytes;
    std::memcpy(row.data(), at, m.row_bytes);
    kernels::repack_row(m.dtype, to, row.data(), at, m.cols);
  }
}

// Writes m's rows as `to` at dst, dense (row_bytes(to, cols) apart).
void repack_into(const backends::WeightMatrix& m, kernels::DType to, std::byte* dst,
                 FileReader& reader) {
  const size_t dense = kernels::row_bytes(to, m.cols);
  std::vector<std::byte> row(m.row_bytes);
  const auto* src = static_cast<const std::byte*>(m.data);
  if (m.row_bytes == dense) {
    reader.read(src, m.rows * dense, dst);  // one read; then each row through `row`
    for (size_t r = 0; r < m.rows; ++r) {
      std::memcpy(row.data(), dst + r * dense, dense);
      kernels::repack_row(m.dtype, to, row.data(), dst + r * dense, m.cols);
    }
  } else {
    for (size_t r = 0; r < m.rows; ++r) {
      reader.read(src + r * m.row_bytes, m.row_bytes, row.data());
      kernels::repack_row(m.dtype, to, row.data(), dst + r * dense, m.cols);
    }
  }
  reader.release(src, m.rows * m.row_bytes);
}

// Repacks every matrix the forward pass multiplies (the token embedding only when it is the
// tied output matrix: lookups decode single rows, for which the file layout is as good). Copies
// of matrices in the file share one buffer, 2 MiB aligned and advised for transparent huge
// pages: on the development VM, first-touching 582 MB of 4 KiB pages took 1.8-2.4 s and reading
// the file into them 1.0 s more, against 0.07 s each with huge pages (and decode's matvec
// streams the weights with fewer TLB misses).
void repack_for_cpu(ModelWeights& w, const MappedFile* mapping) {
  if (!repack_enabled()) return;
  const kernels::FormatKernels& kernels = kernels::format_kernels();
  std::vector<backends::WeightMatrix*> all;
  for (LayerWeights& l : w.layers) {
    for (backends::WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
      all.push_back(m);
  }
  all.push_back(&w.output);
  all.push_back(&w.token_embd);  // only when tied: it then has the output's key
  // Views of the same rows (tied embeddings) share one repacked copy: the first view of each key
  // is repacked, at `offset` in the shared buffer (or in place: npos).
  using Key = std::tuple<const void*, size_t, size_t>;
  struct Job {
    backends::WeightMatrix* first;
    kernels::DType to;
    size_t offset;
  };
  constexpr size_t npos = ~size_t{0};
  std::map<Key, Job> jobs;
  size_t total = 0;
  for (backends::WeightMatrix* m : all) {
    const kernels::DType to = kernels.preferred_layout(m->dtype);
    const Key key{m->data, m->rows, m->row_bytes};
    if (to == m->dtype || m->data == nullptr || jobs.contains(key)) continue;
    if (m == &w.token_embd) continue;  // not tied to a repacked output: lookups only
    const bool own = owned_copy(w.copies, m->data, m->rows * m->row_bytes) != nullptr;
    jobs.emplace(key, Job{m, to, own ? npos : total});
    if (!own) total += (m->rows * kernels::row_bytes(to, m->cols) + 63) / 64 * 64;
  }
  if (jobs.empty()) return;
  if (total > 0) {
    w.repacked.reset(static_cast<std::byte*>(
        ::operator new[](total, std::align_val_t{ModelWeights::kRepackedAlignment})));
    ::madvise(w.repacked.get(), total, MADV_HUGEPAGE);  // a hint: ignored where unsupported
  }
  FileReader reader(mapping);
  std::map<Key, backends::WeightMatrix> done;
  for (auto& [key, job] : jobs) {
    backends::WeightMatrix r = *job.first;
    r.dtype = job.to;
    if (job.offset == npos) {
      repack_in_place(owned_copy(w.copies, r.data, r.rows * r.row_bytes), *job.first, job.to);
    } else {
      repack_into(*job.first, job.to, w.repacked.get() + job.offset, reader);
      r.data = w.repacked.get() + job.offset;
      r.row_bytes = kernels::row_bytes(job.to, r.cols);
    }
    done.emplace(key, r);
  }
  for (backends::WeightMatrix* m : all) {
    if (auto it = done.find(Key{m->data, m->rows, m->row_bytes}); it != done.end()) *m = it->second;
  }
}

}  // namespace

bool repack_enabled() {
  const char* v = std::getenv("OXI_REPACK");
  return v == nullptr || std::string_view(v) != "0";
}

ModelWeights load_gguf_weights(const gguf::Reader& reader, ModelConfig& config) {
  ModelWeights w;
  w.files.push_back(reader.file());
  WeightBuilder b(
      [&](const std::string& name) -> std::optional<TensorView> {
        const TensorView* t = reader.find_tensor(name);
        return t ? std::optional<TensorView>(*t) : std::nullopt;
      },
      w, reader.path().string());
  load_top(b, config, w, "token_embd.weight", "output_norm.weight", "output.weight");
  for (int il = 0; il < config.n_layer; ++il)
    w.layers.push_back(load_layer(b, gguf_layer_names(il), config));
  // Llama 3.1+ GGUFs carry the llama3 frequency scaling as per-dimension divisors.
  if (b.has("rope_freqs.weight")) {
    const auto f = b.vector("rope_freqs.weight", config.rope_dims / 2);
    w.rope_freq_factors.assign(f.begin(), f.end());
  }
  repack_for_cpu(w, reader.file().get());
  return w;
}

ModelWeights load_hf_weights(const hf::Directory& dir, ModelConfig& config,
                             std::optional<kernels::DType> quant) {
  ModelWeights w;
  w.files = dir.owners;
  WeightBuilder b(
      [&](const std::string& name) -> std::optional<TensorView> {
        const formats::TensorEntry* e = dir.find_tensor(name);
        return e ? std::optional<TensorView>(e->view(dir.dir.string())) : std::nullopt;
      },
      w, dir.dir.string());
  b.quantize_to = quant;
  if (config.arch == "gemma3") b.norm_shift = 1.0f;  // Gemma3RMSNorm: x * (1 + weight)
  // Multimodal Gemma 3 checkpoints nest the text model.
  std::string prefix = "model.";
  for (const char* p : {"model.", "language_model.model.", "model.language_model."})
    if (b.has(std::string(p) + "embed_tokens.weight")) {
      prefix = p;
      break;
    }
  const std::string lm_head =
      prefix == "language_model.model." ? "language_model.lm_head.weight" : "lm_head.weight";
  load_top(b, config, w, prefix + "embed_tokens.weight", prefix + "norm.weight", lm_head);
  for (int il = 0; il < config.n_layer; ++il)
    w.layers.push_back(load_layer(b, hf_layer_names(prefix, il, config.arch == "gemma3"), config));
  repack_for_cpu(w, nullptr);
  return w;
}

}  // namespace oxi::llm
