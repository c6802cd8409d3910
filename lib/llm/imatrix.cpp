#include "lib/llm/imatrix.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>

#include "lib/core/error.h"
#include "lib/formats/gguf.h"

namespace oxi::llm {
namespace {

constexpr size_t kMinRows = 16;  // llama-imatrix leaves out smaller batches
constexpr char kInSum2[] = ".in_sum2", kCounts[] = ".counts";

// ---- the .dat form ----

class DatReader {
 public:
  DatReader(const std::filesystem::path& file, std::string bytes)
      : file_(file.string()), bytes_(std::move(bytes)) {}
  int32_t i32(const char* what) {
    int32_t v;
    take(&v, 4, what);
    return v;
  }
  std::string text(size_t n, const char* what) {
    std::string s(n, '\0');
    take(s.data(), n, what);
    return s;
  }
  std::vector<float> floats(size_t n, const char* what) {
    if (n > (bytes_.size() - pos_) / 4) fail(std::string(what) + " run past the end");
    std::vector<float> v(n);
    take(v.data(), 4 * n, what);
    return v;
  }
  bool at_end() const { return pos_ == bytes_.size(); }
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(file_, "not an imatrix .dat file: " + why);
  }

 private:
  void take(void* dst, size_t n, const char* what) {
    if (n > bytes_.size() - pos_) fail(std::string(what) + " cut short");
    std::memcpy(dst, bytes_.data() + pos_, n);
    pos_ += n;
  }
  std::string file_, bytes_;
  size_t pos_ = 0;
};

ImportanceMatrix load_dat(const std::filesystem::path& file, std::string bytes) {
  DatReader in(file, std::move(bytes));
  ImportanceMatrix im;
  const int32_t n = in.i32("the entry count");
  if (n < 1 || n > 1'000'000) in.fail("entry count " + std::to_string(n));
  for (int32_t e = 0; e < n; ++e) {
    const int32_t len = in.i32("a name length");
    if (len < 1 || len > 4096) in.fail("name length " + std::to_string(len));
    const std::string name = in.text(static_cast<size_t>(len), "a name");
    const int32_t calls = in.i32("a call count");
    const int32_t nval = in.i32("a value count");
    if (nval < 1) in.fail("'" + name + "' has " + std::to_string(nval) + " values");
    const std::vector<float> values = in.floats(static_cast<size_t>(nval), "values");
    // The values are mean squares times the calls: the calls stand for the count.
    ImportanceMatrix::Entry entry;
    entry.count = calls > 0 ? calls : 1;
    for (float v : values) entry.in_sum2.push_back(static_cast<double>(v));
    im.entries[name] = std::move(entry);
  }
  if (!in.at_end()) {  // optional trailer: the chunk count, then the dataset's name
    im.chunk_count = static_cast<uint32_t>(std::max(0, in.i32("the chunk count")));
    if (!in.at_end()) {
      const int32_t len = in.i32("the dataset name's length");
      if (len < 0 || len > 1 << 20) in.fail("dataset name length " + std::to_string(len));
      im.datasets.push_back(in.text(static_cast<size_t>(len), "the dataset name"));
    }
  }
  return im;
}

void save_dat(const ImportanceMatrix& im, const std::filesystem::path& file) {
  std::string out;
  const auto put_i32 = [&](int32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); };
  put_i32(static_cast<int32_t>(im.entries.size()));
  const double chunk = std::max<uint32_t>(im.chunk_size, 1);
  for (const auto& [name, e] : im.entries) {
    put_i32(static_cast<int32_t>(name.size()));
    out += name;
    const auto calls = static_cast<int32_t>(std::max(1.0, std::ceil(e.count / chunk)));
    put_i32(calls);
    put_i32(static_cast<int32_t>(e.in_sum2.size()));
    for (double s : e.in_sum2) {
      const float v = e.count > 0 ? static_cast<float>(s / e.count * calls) : 1.0f;
      out.append(reinterpret_cast<const char*>(&v), 4);
    }
  }
  put_i32(static_cast<int32_t>(im.chunk_count));
  const std::string dataset = im.datasets.empty() ? "" : im.datasets.back();
  put_i32(static_cast<int32_t>(dataset.size()));
  out += dataset;
  const std::filesystem::path part = file.string() + ".part";
  {
    std::ofstream f(part, std::ios::binary);
    f.write(out.data(), static_cast<std::streamsize>(out.size()));
    if (!f) throw Error(file.string(), "cannot write the imatrix");
  }
  std::filesystem::rename(part, file);
}

// ---- the GGUF form ----

ImportanceMatrix load_gguf(const std::filesystem::path& file) {
  const gguf::Reader reader(file);
  if (reader.get_string_or("general.type", "") != "imatrix")
    throw Error(file.string(), "a GGUF file, but not an imatrix (general.type)");
  ImportanceMatrix im;
  if (reader.find("imatrix.datasets")) im.datasets = reader.get_string_array("imatrix.datasets");
  im.chunk_count = static_cast<uint32_t>(reader.get_u64_or("imatrix.chunk_count", 0));
  im.chunk_size = static_cast<uint32_t>(reader.get_u64_or("imatrix.chunk_size", 0));
  const auto floats = [&](const TensorView& t) {
    if (t.dtype != kernels::DType::F32)
      throw Error(file.string(), "tensor " + t.name + " is not f32");
    std::vector<float> v(static_cast<size_t>(t.numel()));
    std::memcpy(v.data(), t.data.data(), v.size() * sizeof(float));
    return v;
  };
  for (const TensorView& t : reader.tensors()) {
    if (!t.name.ends_with(kInSum2)) continue;
    const std::string name = t.name.substr(0, t.name.size() - std::strlen(kInSum2));
    const TensorView* counts = reader.find_tensor(name + kCounts);
    if (!counts) throw Error(file.string(), "tensor " + t.name + " has no " + name + kCounts);
    if (t.shape.size() > 2 || (t.shape.size() == 2 && t.shape[0] != 1) || counts->numel() != 1)
      throw Error(file.string(), name + ": stacked (expert) matrices are not supported");
    ImportanceMatrix::Entry entry;
    for (float v : floats(t)) entry.in_sum2.push_back(v);
    entry.count = floats(*counts)[0];
    im.entries[name] = std::move(entry);
  }
  return im;
}

void save_gguf(const ImportanceMatrix& im, const std::filesystem::path& file) {
  gguf::Writer w;
  w.set_string("general.type", "imatrix");
  w.set_string_array("imatrix.datasets", im.datasets);
  w.set_u32("imatrix.chunk_count", im.chunk_count);
  w.set_u32("imatrix.chunk_size", im.chunk_size);
  const auto f32_bytes = [](const std::vector<float>& v) {
    std::vector<std::byte> b(v.size() * sizeof(float));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  };
  for (const auto& [name, e] : im.entries) {  // in name order, as llama.cpp writes them
    const std::vector<float> sums(e.in_sum2.begin(), e.in_sum2.end());
    w.add_tensor(name + kInSum2, kernels::DType::F32, {1, static_cast<int64_t>(sums.size())},
                 f32_bytes(sums));
    w.add_tensor(name + kCounts, kernels::DType::F32, {1, 1},
                 f32_bytes({static_cast<float>(e.count)}));
  }
  w.write(file);
}

}  // namespace

std::optional<std::vector<float>> ImportanceMatrix::importance(const std::string& name) const {
  const auto it = entries.find(name);
  if (it == entries.end() || it->second.count <= 0) return std::nullopt;
  std::vector<float> mean(it->second.in_sum2.size());
  for (size_t j = 0; j < mean.size(); ++j)
    mean[j] = static_cast<float>(it->second.in_sum2[j] / it->second.count);
  return mean;
}

void ImportanceMatrix::save(const std::filesystem::path& file, std::optional<bool> dat) const {
  if (dat.value_or(file.extension() == ".dat"))
    save_dat(*this, file);
  else
    save_gguf(*this, file);
}

ImportanceMatrix ImportanceMatrix::load(const std::filesystem::path& file) {
  std::ifstream f(file, std::ios::binary);
  if (!f) throw Error(file.string(), "cannot open the imatrix");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.compare(0, 4, "GGUF") == 0) return load_gguf(file);
  return load_dat(file, std::move(bytes));
}

ImatrixCollector::ImatrixCollector(const Model& model, backends::Backend& inner,
                                   ImportanceMatrix& out, bool output_too)
    : inner_(inner), out_(out) {
  const ModelWeights& w = model.weights();
  const bool fused = model.config().arch == "phi3";  // one attn_qkv, one ffn_up (gate and up)
  for (size_t il = 0; il < w.layers.size(); ++il) {
    const LayerWeights& l = w.layers[il];
    const std::string blk = "blk." + std::to_string(il) + ".";
    const auto add = [&](const backends::WeightMatrix& m, const std::string& name) {
      if (m.data) names_.emplace(m.data, blk + name + ".weight");
    };
    add(l.wq, fused ? "attn_qkv" : "attn_q");
    add(l.wk, fused ? "attn_qkv" : "attn_k");
    add(l.wv, fused ? "attn_qkv" : "attn_v");
    add(l.wo, "attn_output");
    add(l.w_gate, fused ? "ffn_up" : "ffn_gate");
    add(l.w_up, "ffn_up");
    add(l.w_down, "ffn_down");
  }
  if (output_too && w.output.data && w.output.data != w.token_embd.data)
    names_.emplace(w.output.data, "output.weight");
}

void ImatrixCollector::collect(const void* data, std::span<const float> x, size_t m, size_t cols) {
  const auto it = names_.find(data);
  if (it == names_.end() || m < kMinRows) return;
  ImportanceMatrix::Entry& e = out_.entries[it->second];
  if (e.in_sum2.empty()) e.in_sum2.assign(cols, 0.0);
  if (e.in_sum2.size() != cols)
    throw Error("imatrix", it->second + ": " + std::to_string(cols) + " columns, " +
                               std::to_string(e.in_sum2.size()) + " before");
  for (size_t r = 0; r < m; ++r)
    for (size_t j = 0; j < cols; ++j) {
      const double v = x[r * cols + j];
      e.in_sum2[j] += v * v;
    }
  e.count += static_cast<double>(m);
}

void ImatrixCollector::matmul(const backends::WeightMatrix& w, std::span<const float> x, size_t m,
                              std::span<float> y, const float* bias) {
  collect(w.data, x, m, w.cols);
  inner_.matmul(w, x, m, y, bias);
}

void ImatrixCollector::matmul_shared_input(std::span<const float> x, size_t m,
                                           std::span<const SharedInputProduct> products) {
  // A fused matrix seen through several products takes the input once.
  std::set<std::string> seen;
  for (const SharedInputProduct& p : products) {
    const auto it = names_.find(p.w->data);
    if (it != names_.end() && seen.insert(it->second).second) collect(p.w->data, x, m, p.w->cols);
  }
  inner_.matmul_shared_input(x, m, products);
}

}  // namespace oxi::llm
