// quantize_model (lib/llm/quantize.h) on tiny GGUF models: each tensor's type against
// llama.cpp's rules restated here for the file types (Q4_K_M's use_more_bits layers, Q3_K_M,
// Q2_K, Q4_0's output, F16, fallbacks for short rows, tied embeddings, the options), each
// re-encoded tensor's bytes against decoding and encoding its rows, the metadata copied, and
// the written file loading and answering as the model it came from does, within the format's
// error.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "kernels/formats/quant.h"
#include "lib/core/error.h"
#include "lib/formats/gguf.h"
#include "lib/llm/model.h"
#include "lib/llm/quantize.h"
#include "lib/llm/session.h"
#include "tests/common/byte_edits.h"
#include "tests/common/test_data.h"
#include "tests/llm/tiny_model.h"

namespace oxi::llm::test {
namespace {

using kernels::DType;

// llama.cpp's use_more_bits: the first and last eighth of the layers and every third between.
bool more_bits(int i, int n) {
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

int layer_of(const std::string& name) {
  return name.starts_with("blk.") ? std::stoi(name.substr(4)) : -1;
}

// Options of a file type, edited by `edit`.
template <class Edit = void (*)(QuantizeOptions&)>
QuantizeOptions options_for(
    const std::string& type, Edit edit = [](QuantizeOptions&) {}) {
  QuantizeOptions o;
  o.type = type;
  edit(o);
  return o;
}

std::map<std::string, DType> planned(const gguf::Reader& in, const QuantizeOptions& options) {
  std::map<std::string, DType> types;
  for (const QuantizedTensor& q : plan_quantization(in, options).tensors) types[q.name] = q.to;
  return types;
}

class Quantize : public ::testing::Test {
 protected:
  // 16 layers of K-quant widths (rows of 256), F32, 4 heads sharing 2 KV heads.
  void SetUp() override {
    spec_ = tiny_spec("llama", true);
    spec_.n_layer = 16;
    write_gguf(make_tiny_model(spec_, DType::F32, DType::F32, 3), dir_ / "f32.gguf");
  }
  TinySpec spec_;
  oxi::test::TempDir dir_;
};

TEST_F(Quantize, TypesFollowLlamaCppsMixes) {
  const gguf::Reader in(dir_ / "f32.gguf");
  const int n = spec_.n_layer;
  // What each file type gives a tensor, restated per kind (layer i, or -1 outside blocks).
  const auto expect = [&](const char* type, auto rule) {
    SCOPED_TRACE(type);
    const std::map<std::string, DType> got = planned(in, options_for(type));
    ASSERT_EQ(got.size(), in.tensors().size());
    for (const auto& [name, t] : got) {
      const DType want =
          name.find("norm") != std::string::npos ? DType::F32 : rule(name, layer_of(name));
      EXPECT_EQ(kernels::name(t), kernels::name(want)) << name;
    }
  };
  const auto has = [](const std::string& name, const char* part) {
    return name.find(part) != std::string::npos;
  };
  expect("Q4_K_M", [&](const std::string& name, int i) {
    if (name == "output.weight") return DType::Q6_K;
    if ((has(name, "attn_v") || has(name, "ffn_down")) && more_bits(i, n)) return DType::Q6_K;
    return DType::Q4_K;
  });
  expect("q4_k", [&](const std::string& name, int i) {  // llama-quantize's alias
    if (name == "output.weight") return DType::Q6_K;
    if ((has(name, "attn_v") || has(name, "ffn_down")) && more_bits(i, n)) return DType::Q6_K;
    return DType::Q4_K;
  });
  expect("Q5_K_M", [&](const std::string& name, int i) {
    if (name == "output.weight") return DType::Q6_K;
    if ((has(name, "attn_v") || has(name, "ffn_down")) && more_bits(i, n)) return DType::Q6_K;
    return DType::Q5_K;
  });
  expect("Q4_K_S", [&](const std::string& name, int i) {
    if (name == "output.weight") return DType::Q6_K;
    if (has(name, "attn_v") && i < 4) return DType::Q5_K;
    if (has(name, "ffn_down") && i < n / 8) return DType::Q5_K;
    return DType::Q4_K;
  });
  expect("Q3_K_M", [&](const std::string& name, int i) {
    if (name == "output.weight") return DType::Q6_K;
    if (has(name, "attn_v")) return i < 2 ? DType::Q5_K : DType::Q4_K;
    if (has(name, "ffn_down")) return i < n / 16 ? DType::Q5_K : DType::Q4_K;
    if (has(name, "attn_output")) return DType::Q4_K;
    return DType::Q3_K;
  });
  expect("Q2_K", [&](const std::string& name, int) {  // 2 query heads a KV head: below 4
    if (name == "output.weight") return DType::Q6_K;
    if (has(name, "attn_v") || has(name, "ffn_down") || has(name, "attn_output"))
      return DType::Q3_K;
    return DType::Q2_K;
  });
  expect("Q4_0", [&](const std::string& name, int) {
    return name == "output.weight" ? DType::Q6_K : DType::Q4_0;
  });
  expect("7", [&](const std::string&, int) { return DType::Q8_0; });  // Q8_0 by its id
  expect("F16", [&](const std::string&, int) { return DType::F16; });
  expect("IQ4_XS", [&](const std::string& name, int i) {
    if (name == "output.weight") return DType::Q6_K;
    if (has(name, "ffn_down") && i < n / 8) return DType::Q5_K;
    return DType::IQ4_XS;
  });

  // The options: no mix, output.weight kept, token_embd's own type.
  const std::map<std::string, DType> pure =
      planned(in, options_for("Q4_K_M", [](QuantizeOptions& o) { o.pure = true; }));
  for (const auto& [name, t] : pure)
    if (name.find("norm") == std::string::npos) {
      EXPECT_EQ(t, DType::Q4_K) << name;
    }
  EXPECT_EQ(planned(in, options_for("Q4_K_M", [](QuantizeOptions& o) { o.leave_output = true; }))
                .at("output.weight"),
            DType::F32);
  EXPECT_EQ(
      planned(in, options_for("Q4_K_M",
                              [](QuantizeOptions& o) { o.token_embedding_type = DType::Q8_0; }))
          .at("token_embd.weight"),
      DType::Q8_0);
  EXPECT_EQ(planned(in, options_for("Q4_K_M",
                                    [](QuantizeOptions& o) { o.output_tensor_type = DType::F16; }))
                .at("output.weight"),
            DType::F16);
}

// --tensor-type PATTERN=TYPE: the first pattern found in a name sets its type; as llama.cpp,
// an overridden tensor skips the mix and its layer counter, so the attn_v after blk.3's is
// counted as the fourth (no use_more_bits layer) and the one after as the fifth (one).
TEST_F(Quantize, TensorTypeOverridesSkipTheMix) {
  const gguf::Reader in(dir_ / "f32.gguf");
  const auto with = [&](std::vector<std::pair<std::string, DType>> overrides) {
    return planned(in,
                   options_for("Q4_K_M", [&](QuantizeOptions& o) { o.tensor_types = overrides; }));
  };
  const std::map<std::string, DType> all_v = with({{"attn_v", DType::Q8_0}, {"attn", DType::F16}});
  for (int i = 0; i < spec_.n_layer; ++i) {
    const std::string blk = "blk." + std::to_string(i) + ".";
    EXPECT_EQ(all_v.at(blk + "attn_v.weight"), DType::Q8_0) << i;  // the first pattern wins
    EXPECT_EQ(all_v.at(blk + "attn_q.weight"), DType::F16) << i;
    EXPECT_EQ(all_v.at(blk + "ffn_down.weight"),
              more_bits(i, spec_.n_layer) ? DType::Q6_K : DType::Q4_K)
        << i;
  }
  const std::map<std::string, DType> one = with({{R"(blk\.3\.attn_v)", DType::Q8_0}});
  EXPECT_EQ(one.at("blk.3.attn_v.weight"), DType::Q8_0);
  EXPECT_EQ(one.at("blk.4.attn_v.weight"), DType::Q4_K);  // counted as i = 3
  EXPECT_EQ(one.at("blk.5.attn_v.weight"), DType::Q6_K);  // counted as i = 4
  EXPECT_THROW(with({{"(", DType::Q8_0}}), Error);
}

// Rows that are not whole K-quant blocks fall back as llama.cpp's tensor_type_fallback does;
// a model without output.weight (tied) gives token_embd the output's type.
TEST_F(Quantize, ShortRowsFallBackAndTiedEmbeddingsGetTheOutputsType) {
  TinySpec narrow = tiny_spec("llama", false);  // rows of 64
  narrow.n_layer = 8;
  write_gguf(make_tiny_model(narrow, DType::F32, DType::F32, 4), dir_ / "narrow.gguf");
  const std::map<std::string, DType> got =
      planned(gguf::Reader(dir_ / "narrow.gguf"), options_for("Q4_K_M"));
  EXPECT_EQ(got.at("output.weight"), DType::Q8_0);        // rows not whole q4_K blocks
  EXPECT_EQ(got.at("blk.3.attn_q.weight"), DType::Q5_0);  // q4_K's fallback
  EXPECT_EQ(got.at("blk.0.attn_v.weight"), DType::Q8_0);  // q6_K's fallback
  EXPECT_EQ(got.at("blk.2.attn_v.weight"), DType::Q5_0);  // not a use_more_bits layer

  TinySpec tied = tiny_spec("qwen2", true);  // no output.weight
  write_gguf(make_tiny_model(tied, DType::F32, DType::F32, 5), dir_ / "tied.gguf");
  const std::map<std::string, DType> t =
      planned(gguf::Reader(dir_ / "tied.gguf"), options_for("Q4_K_M"));
  EXPECT_EQ(t.count("output.weight"), 0u);
  EXPECT_EQ(t.at("token_embd.weight"), DType::Q6_K);
  EXPECT_EQ(planned(gguf::Reader(dir_ / "f32.gguf"), options_for("Q4_K_M")).at("token_embd.weight"),
            DType::Q4_K);
}

// The written file: every tensor re-encoded row by row from what the input decodes to (or its
// bytes as they were), the metadata copied, the type and quantization version set, tensors in
// llama.cpp's order; it loads, and answers as the input does within Q8_0's error.
TEST_F(Quantize, WritesAFileThatLoadsAndAnswersAsTheInput) {
  const std::filesystem::path out = dir_ / "q8.gguf";
  size_t seen = 0, told = 0;
  const QuantizePlan plan = quantize_model(
      dir_ / "f32.gguf", out, options_for("Q8_0", [](QuantizeOptions& o) { o.threads = 2; }),
      [&](const QuantizedTensor&, size_t index, size_t count) {
        EXPECT_EQ(index, seen);  // in order, from 0
        told = count;
        ++seen;
      });
  EXPECT_FALSE(std::filesystem::exists(dir_ / "q8.gguf.part"));
  const gguf::Reader in(dir_ / "f32.gguf"), q(out);
  ASSERT_EQ(q.tensors().size(), in.tensors().size());
  EXPECT_EQ(seen, in.tensors().size());
  EXPECT_EQ(told, in.tensors().size());
  EXPECT_EQ(q.get_u32("general.file_type"), 7u);
  EXPECT_EQ(q.get_u32("general.quantization_version"), 2u);
  for (const auto& [key, value] : in.metadata())
    if (key != "general.file_type") {
      EXPECT_TRUE(q.has(key)) << key;
    }
  EXPECT_EQ(q.get_string("tokenizer.ggml.model"), in.get_string("tokenizer.ggml.model"));
  EXPECT_EQ(q.tensors()[0].name, "output.weight");  // outside blocks first, by name
  EXPECT_EQ(q.tensors()[3].name, "blk.0.attn_k.weight");
  EXPECT_EQ(q.tensors().back().name, "blk.15.ffn_up.weight");
  for (const TensorView& t : q.tensors()) {
    const TensorView& src = in.tensor(t.name);
    ASSERT_EQ(t.shape, src.shape) << t.name;
    if (t.dtype == src.dtype) {
      EXPECT_TRUE(std::equal(t.data.begin(), t.data.end(), src.data.begin())) << t.name;
      continue;
    }
    const auto cols = static_cast<size_t>(t.shape.back());
    std::vector<float> row(cols);
    std::vector<std::byte> encoded(kernels::row_bytes(t.dtype, cols));
    for (size_t r = 0; r < static_cast<size_t>(t.numel()) / cols; ++r) {
      kernels::dequantize_row(src.dtype, src.data.data() + r * src.data.size() / (t.numel() / cols),
                              row.data(), cols);
      kernels::quantize_row(t.dtype, row.data(), encoded.data(), cols);
      ASSERT_TRUE(std::equal(encoded.begin(), encoded.end(),
                             t.data.begin() + static_cast<std::ptrdiff_t>(r * encoded.size())))
          << t.name << " row " << r;
    }
  }
  EXPECT_EQ(plan.bytes_out, [&] {
    size_t n = 0;
    for (const TensorView& t : q.tensors()) n += t.data.size();
    return n;
  }());

  auto cpu = backends::make_cpu_backend(2);
  const auto f32 = Model::load(dir_ / "f32.gguf"), q8 = Model::load(out);
  Session a(f32, *cpu, 64), b(q8, *cpu, 64);
  const std::vector<int32_t> prompt = {1, 17, 250, 33, 9};
  const std::span<const float> la = a.eval(prompt);
  const std::vector<float> want(la.begin(), la.end());
  const std::span<const float> lb = b.eval(prompt);
  double worst = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(lb[i]) - want[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  EXPECT_LT(worst, 0.05 * scale);
  EXPECT_GT(worst, 0.0);  // re-encoded, not copied
}

TEST_F(Quantize, RefusesWhatItCannotDo) {
  const auto message = [&](const std::filesystem::path& in, const QuantizeOptions& o) {
    try {
      quantize_model(in, dir_ / "out.gguf", o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_NE(message(dir_ / "f32.gguf", options_for("Q9_K")).find("unknown type 'Q9_K'"),
            std::string::npos);
  EXPECT_NE(message(dir_ / "f32.gguf", options_for("IQ2_XXS")).find("importance matrix"),
            std::string::npos);
  // An already quantized input: refused unless asked, copied where the type stays.
  ASSERT_EQ(message(dir_ / "f32.gguf", options_for("Q8_0")), "<no error>");
  std::filesystem::rename(dir_ / "out.gguf", dir_ / "q8.gguf");
  EXPECT_NE(message(dir_ / "q8.gguf", options_for("Q4_0")).find("--allow-requantize"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out.gguf"));
  EXPECT_EQ(message(dir_ / "q8.gguf",
                    options_for("Q4_0", [](QuantizeOptions& o) { o.allow_requantize = true; })),
            "<no error>");
  EXPECT_EQ(message(dir_ / "q8.gguf", options_for("Q8_0")), "<no error>");
  EXPECT_NE(message(dir_ / "out.gguf", options_for("Q8_0")).find("overwrite the input"),
            std::string::npos);
  EXPECT_NE(message(dir_ / "missing.gguf", options_for("Q8_0")).find("missing.gguf"),
            std::string::npos);
}

// Edited model files (metadata and tensor infos: bumped counts, flipped bits, cuts): planned
// and quantized, or an oxi::Error, never a crash.
TEST_F(Quantize, EditedFilesQuantizeOrFailCleanly) {
  TinySpec small = tiny_spec("llama", false);
  write_gguf(make_tiny_model(small, DType::F32, DType::F32, 6), dir_ / "small.gguf");
  const std::vector<uint8_t> seed = oxi::test::read_file_bytes(dir_ / "small.gguf");
  const size_t header = std::min<size_t>(seed.size(), 6000);  // metadata and tensor infos
  std::mt19937 rng(8);
  size_t done = 0, refused = 0;
  for (int i = 0; i < 300; ++i) {
    std::vector<uint8_t> edited(seed.begin(), seed.begin() + static_cast<std::ptrdiff_t>(header));
    edited = oxi::test::edit_bytes(edited, rng);
    edited.insert(edited.end(), seed.begin() + static_cast<std::ptrdiff_t>(header), seed.end());
    oxi::test::write_file_bytes(dir_ / "edited.gguf", edited);
    try {
      quantize_model(dir_ / "edited.gguf", dir_ / "out.gguf",
                     options_for(i % 2 ? "Q4_K_M" : "Q8_0"));
      ++done;
    } catch (const Error&) {
      ++refused;
    }
    EXPECT_FALSE(std::filesystem::exists(dir_ / "out.gguf.part"));
  }
  EXPECT_GT(done, 10u);
  EXPECT_GT(refused, 10u);
}

}  // namespace
}  // namespace oxi::llm::test
