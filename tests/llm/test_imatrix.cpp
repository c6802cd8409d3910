// lib/llm/imatrix.h: the importance matrix an evaluation collects (layer 0's q / k / v input
// restated in double from the embedding and the norm; names of every layer matrix; phi3's
// fused matrices once per product; batches under 16 tokens left out), and its files: GGUF and
// .dat written and read back, the .dat layout as llama.cpp writes it (built byte by byte here),
// and malformed files refused with oxi::Error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "lib/core/error.h"
#include "lib/formats/gguf.h"
#include "lib/llm/imatrix.h"
#include "lib/llm/model.h"
#include "lib/llm/session.h"
#include "tests/common/test_data.h"
#include "tests/llm/tiny_model.h"

namespace oxi::llm::test {
namespace {

std::vector<int32_t> some_tokens(size_t n, int n_vocab) {
  std::vector<int32_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>((7 * i + 3) % n_vocab);
  return t;
}

// A tiny f32 model of `arch` through its GGUF file, and a collector over a CPU backend.
struct Collecting {
  Collecting(const std::string& arch, uint32_t seed)
      : tiny(make_tiny_model(tiny_spec(arch, false), kernels::DType::F32, kernels::DType::F32,
                             seed)) {
    write_gguf(tiny, dir / "m.gguf");
    model = Model::load(dir / "m.gguf");
  }
  TinyModel tiny;
  oxi::test::TempDir dir;
  std::shared_ptr<const Model> model;
  std::unique_ptr<backends::Backend> cpu = backends::make_cpu_backend(2);
  ImportanceMatrix im;
};

TEST(Imatrix, CollectsEachLayerMatrixsInputSquares) {
  Collecting c("llama", 3);
  const TinyModel& tiny = c.tiny;
  const auto& model = c.model;
  const auto& cpu = c.cpu;
  ImportanceMatrix& im = c.im;
  ImatrixCollector collector(*model, *cpu, im);
  Session session(model, collector, 64);
  const std::vector<int32_t> tokens = some_tokens(40, tiny.spec.n_vocab);
  session.eval(std::span(tokens).first(10));  // under 16 tokens: left out
  EXPECT_TRUE(im.entries.empty());
  session.truncate(0);
  session.eval(tokens);
  std::vector<std::string> names;
  for (const auto& [name, e] : im.entries) names.push_back(name);
  std::vector<std::string> want;
  for (int il = 0; il < tiny.spec.n_layer; ++il)
    for (const char* m :
         {"attn_k", "attn_output", "attn_q", "attn_v", "ffn_down", "ffn_gate", "ffn_up"})
      want.push_back("blk." + std::to_string(il) + "." + m + ".weight");
  std::sort(want.begin(), want.end());
  EXPECT_EQ(names, want);  // no output.weight without asking
  // Layer 0's q / k / v take the RMS-normed embeddings: their squares summed in double.
  const size_t width = static_cast<size_t>(tiny.spec.n_embd);
  const std::vector<float>& embd = tiny.values("model.embed_tokens.weight");
  const std::vector<float>& norm = tiny.values("model.layers.0.input_layernorm.weight");
  std::vector<double> sums(width, 0.0);
  for (int32_t t : tokens) {
    double ms = 0;
    for (size_t j = 0; j < width; ++j) ms += double(embd[t * width + j]) * embd[t * width + j];
    const double inv = 1.0 / std::sqrt(ms / width + tiny.spec.rms_eps);
    for (size_t j = 0; j < width; ++j) {
      const double v = embd[t * width + j] * inv * norm[j];
      sums[j] += v * v;
    }
  }
  for (const char* m : {"attn_q", "attn_k", "attn_v"}) {
    const ImportanceMatrix::Entry& e = im.entries.at(std::string("blk.0.") + m + ".weight");
    EXPECT_EQ(e.count, 40.0) << m;
    ASSERT_EQ(e.in_sum2.size(), width);
    for (size_t j = 0; j < width; ++j) EXPECT_NEAR(e.in_sum2[j], sums[j], 1e-4 * sums[j]) << j;
  }
  const auto mean = im.importance("blk.0.attn_q.weight");
  ASSERT_TRUE(mean.has_value());
  EXPECT_NEAR((*mean)[5], sums[5] / 40, 1e-4 * sums[5]);
  EXPECT_FALSE(im.importance("blk.9.attn_q.weight").has_value());
  // --process-output adds output.weight.
  ImportanceMatrix with_output;
  ImatrixCollector out_too(*model, *cpu, with_output, true);
  Session s2(model, out_too, 64);
  s2.eval(tokens, /*all_logits=*/true);
  EXPECT_EQ(with_output.entries.at("output.weight").count, 40.0);
}

TEST(Imatrix, FusedMatricesCountOncePerProduct) {
  Collecting c("phi3", 4);
  const ImportanceMatrix& im = c.im;
  ImatrixCollector collector(*c.model, *c.cpu, c.im);
  Session session(c.model, collector, 64);
  session.eval(some_tokens(20, c.tiny.spec.n_vocab));
  ASSERT_TRUE(im.entries.count("blk.0.attn_qkv.weight"));
  ASSERT_TRUE(im.entries.count("blk.0.ffn_up.weight"));
  EXPECT_FALSE(im.entries.count("blk.0.attn_q.weight"));
  EXPECT_FALSE(im.entries.count("blk.0.ffn_gate.weight"));
  EXPECT_EQ(im.entries.at("blk.0.attn_qkv.weight").count, 20.0);
  EXPECT_EQ(im.entries.at("blk.0.ffn_up.weight").count, 20.0);
}

ImportanceMatrix sample_matrix() {
  ImportanceMatrix im;
  im.entries["blk.0.attn_q.weight"] = {{4.0, 8.0, 0.5}, 4};
  im.entries["blk.1.ffn_down.weight"] = {{1.0, 3.0}, 2};
  im.datasets = {"wiki.train.raw"};
  im.chunk_count = 2;
  im.chunk_size = 2;
  return im;
}

TEST(Imatrix, FilesRoundTrip) {
  oxi::test::TempDir dir;
  const ImportanceMatrix im = sample_matrix();
  im.save(dir / "a.gguf");
  const ImportanceMatrix g = ImportanceMatrix::load(dir / "a.gguf");
  EXPECT_EQ(g.datasets, im.datasets);
  EXPECT_EQ(g.chunk_count, 2u);
  EXPECT_EQ(g.chunk_size, 2u);
  EXPECT_EQ(g.importance("blk.0.attn_q.weight"), im.importance("blk.0.attn_q.weight"));
  EXPECT_EQ(g.entries.at("blk.1.ffn_down.weight").count, 2.0);
  // llama.cpp's layout: general.type, in_sum2 as a 1 x columns f32 tensor, counts 1 x 1.
  const gguf::Reader r(dir / "a.gguf");
  EXPECT_EQ(r.get_string("general.type"), "imatrix");
  ASSERT_NE(r.find_tensor("blk.0.attn_q.weight.in_sum2"), nullptr);
  EXPECT_EQ(r.find_tensor("blk.0.attn_q.weight.in_sum2")->shape, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(r.find_tensor("blk.0.attn_q.weight.counts")->shape, (std::vector<int64_t>{1, 1}));
  im.save(dir / "b.dat");
  const ImportanceMatrix d = ImportanceMatrix::load(dir / "b.dat");
  EXPECT_EQ(d.datasets, im.datasets);
  EXPECT_EQ(d.chunk_count, 2u);
  for (const char* name : {"blk.0.attn_q.weight", "blk.1.ffn_down.weight"}) {
    const auto a = im.importance(name), b = d.importance(name);
    ASSERT_TRUE(a && b);
    ASSERT_EQ(a->size(), b->size());
    for (size_t j = 0; j < a->size(); ++j) EXPECT_FLOAT_EQ((*a)[j], (*b)[j]) << name;
  }
}

void put_i32(std::string& s, int32_t v) {
  s.append(reinterpret_cast<const char*>(&v), 4);
}
void put_f32(std::string& s, float v) {
  s.append(reinterpret_cast<const char*>(&v), 4);
}

TEST(Imatrix, ReadsLlamaCppsDatLayoutAndRefusesBrokenFiles) {
  // One entry of 2 values computed over 3 calls: the file holds mean squares x 3.
  std::string dat;
  put_i32(dat, 1);
  put_i32(dat, 19);
  dat += "blk.0.attn_v.weight";
  put_i32(dat, 3);
  put_i32(dat, 2);
  put_f32(dat, 6.0f);
  put_f32(dat, 1.5f);
  put_i32(dat, 7);
  put_i32(dat, 4);
  dat += "data";
  oxi::test::TempDir dir;
  const auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir / name, std::ios::binary).write(bytes.data(), bytes.size());
    return dir / name;
  };
  const ImportanceMatrix im = ImportanceMatrix::load(write("ok.dat", dat));
  EXPECT_EQ(im.importance("blk.0.attn_v.weight"), (std::vector<float>{2.0f, 0.5f}));
  EXPECT_EQ(im.chunk_count, 7u);
  EXPECT_EQ(im.datasets, std::vector<std::string>{"data"});
  for (size_t cut : {0, 3, 8, 20, 30, 34}) {
    EXPECT_THROW(ImportanceMatrix::load(write("cut.dat", dat.substr(0, cut))), Error) << cut;
  }
  std::string huge = dat;
  std::memset(huge.data() + 4, 0x7f, 4);  // a name length far past the file
  EXPECT_THROW(ImportanceMatrix::load(write("huge.dat", huge)), Error);
  EXPECT_THROW(ImportanceMatrix::load(dir / "missing.dat"), Error);
  // A GGUF file that is a model, not an imatrix.
  gguf::Writer w;
  w.set_string("general.architecture", "llama");
  w.write(dir / "model.gguf");
  EXPECT_THROW(ImportanceMatrix::load(dir / "model.gguf"), Error);
}

// Byte edits and cuts of both forms: each file loads or is refused with oxi::Error.
TEST(Imatrix, EditedFilesLoadOrAreRefused) {
  oxi::test::TempDir dir;
  sample_matrix().save(dir / "a.gguf");
  sample_matrix().save(dir / "a.dat");
  std::mt19937 rng(5);
  for (const char* name : {"a.gguf", "a.dat"}) {
    std::ifstream f(dir / name, std::ios::binary);
    const std::string good((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (int round = 0; round < 1500; ++round) {
      std::string bytes = good;
      if (round % 5 == 0) {
        bytes.resize(rng() % bytes.size());
      } else {
        for (int k = 0; k < 1 + round % 3; ++k)
          bytes[rng() % bytes.size()] = static_cast<char>(rng());
      }
      std::ofstream(dir / "edited", std::ios::binary).write(bytes.data(), bytes.size());
      try {
        const ImportanceMatrix im = ImportanceMatrix::load(dir / "edited");
        for (const auto& [n, e] : im.entries) (void)im.importance(n);
      } catch (const Error&) {
      }
    }
  }
}

}  // namespace
}  // namespace oxi::llm::test
