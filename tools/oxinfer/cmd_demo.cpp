// oxinfer demo: writes a tiny random llama-shaped GGUF model of its own (F32 norms, F16
// embeddings, Q8_0 / Q4_0 block weights) and inspects it — a first run that needs no download.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include "kernels/formats/fp16.h"
#include "kernels/formats/quant.h"
#include "lib/core/error.h"
#include "lib/formats/ggml_types.h"
#include "lib/formats/gguf.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/commands.h"

namespace oxi::cli {

namespace {

namespace fs = std::filesystem;
using kernels::DType;

constexpr uint32_t kEmbd = 64, kHeads = 4, kFF = 128, kBlocks = 1, kContext = 256;

std::vector<float> random_weights(size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Encodes row-major f32 weights [rows, cols] as `dtype`, row by row.
std::vector<std::byte> encode(const std::vector<float>& w, size_t rows, size_t cols, DType dtype) {
  std::vector<std::byte> out;
  if (dtype == DType::F32) {
    out.resize(w.size() * 4);
    std::memcpy(out.data(), w.data(), out.size());
  } else if (dtype == DType::F16) {
    out.resize(w.size() * 2);
    for (size_t i = 0; i < w.size(); ++i) {
      const uint16_t h = kernels::f32_to_f16(w[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  } else {
    const size_t row_bytes = *formats::tensor_bytes(dtype, cols);
    out.resize(rows * row_bytes);
    for (size_t r = 0; r < rows; ++r) {
      kernels::quantize_row(dtype, w.data() + r * cols, out.data() + r * row_bytes, cols);
    }
  }
  return out;
}

// A byte-level toy vocabulary: the specials, then printable ASCII.
void add_vocab(gguf::Writer& w) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};  // unknown, control, control
  for (char c = ' '; c <= '~'; ++c) {
    tokens.push_back(c == ' ' ? "\xe2\x96\x81" : std::string(1, c));  // U+2581 marks spaces
    types.push_back(1);
  }
  std::vector<float> scores(tokens.size());
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = 0.0f - static_cast<float>(i);
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_f32_array("tokenizer.ggml.scores", scores);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
}

fs::path default_out_dir() {
  return fs::temp_directory_path() / ("oxinfer-demo-" + std::to_string(::getpid()));
}

}  // namespace

int run_demo(const Argv& argv) {
  ArgParser p("demo", "oxinfer demo [--out DIR]",
              "Write a tiny random llama-shaped GGUF model and inspect it.");
  p.option("out", "DIR", "where to write demo-llama.gguf (default: a new temp dir)");
  p.option("seed", "N", "random seed (default 1)");
  const ParsedArgs args = p.parse(argv);
  if (!args.positional().empty()) throw UsageError("takes no positional arguments");
  const fs::path dir = args.get("out") ? fs::path(*args.get("out")) : default_out_dir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(dir.string(), "cannot create directory: " + ec.message());

  std::mt19937 rng(static_cast<uint32_t>(args.get_int("seed", 1)));
  gguf::Writer w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.name", "oxinfer demo (random weights)");
  w.set_u32("general.file_type", 1);
  w.set_u32("llama.context_length", kContext);
  w.set_u32("llama.embedding_length", kEmbd);
  w.set_u32("llama.block_count", kBlocks);
  w.set_u32("llama.feed_forward_length", kFF);
  w.set_u32("llama.attention.head_count", kHeads);
  w.set_u32("llama.attention.head_count_kv", kHeads);
  w.set_u32("llama.rope.dimension_count", kEmbd / kHeads);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  add_vocab(w);
  const size_t vocab = 3 + ('~' - ' ' + 1);
  w.set_u32("llama.vocab_size", static_cast<uint32_t>(vocab));

  const auto add = [&](const std::string& name, size_t rows, size_t cols, DType dtype) {
    const bool norm = rows == 1;
    std::vector<float> values =
        norm ? std::vector<float>(cols, 1.0f) : random_weights(rows * cols, rng, 0.02f);
    std::vector<int64_t> shape =
        norm ? std::vector<int64_t>{static_cast<int64_t>(cols)}
             : std::vector<int64_t>{static_cast<int64_t>(rows), static_cast<int64_t>(cols)};
    w.add_tensor(name, dtype, std::move(shape), encode(values, rows, cols, dtype));
  };
  add("token_embd.weight", vocab, kEmbd, DType::F16);
  for (uint32_t b = 0; b < kBlocks; ++b) {
    const std::string blk = "blk." + std::to_string(b) + ".";
    add(blk + "attn_norm.weight", 1, kEmbd, DType::F32);
    add(blk + "attn_q.weight", kEmbd, kEmbd, DType::Q8_0);
    add(blk + "attn_k.weight", kEmbd, kEmbd, DType::Q8_0);
    add(blk + "attn_v.weight", kEmbd, kEmbd, DType::Q8_0);
    add(blk + "attn_output.weight", kEmbd, kEmbd, DType::Q8_0);
    add(blk + "ffn_norm.weight", 1, kEmbd, DType::F32);
    add(blk + "ffn_gate.weight", kFF, kEmbd, DType::Q4_0);
    add(blk + "ffn_up.weight", kFF, kEmbd, DType::Q4_0);
    add(blk + "ffn_down.weight", kEmbd, kFF, DType::Q4_0);
  }
  add("output_norm.weight", 1, kEmbd, DType::F32);
  add("output.weight", vocab, kEmbd, DType::F16);

  const fs::path path = dir / "demo-llama.gguf";
  w.write(path);
  std::printf("wrote %s\n\n", path.string().c_str());
  std::fflush(stdout);
  return run_inspect({path.string(), "--tensors", "all"});
}

}  // namespace oxi::cli
