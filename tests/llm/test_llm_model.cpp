// lib/llm against an independent double-precision reference (reference.cpp) on tiny random
// models of every architecture, in every GGUF weight type and as HF checkpoints; plus batched
// prefill vs token by token, state save/load, truncate, and GGUF/HF agreement.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_backend.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/quant.h"
#include "lib/core/error.h"
#include "lib/llm/embeddings.h"
#include "lib/llm/model.h"
#include "lib/llm/model_config.h"
#include "lib/llm/session.h"
#include "tests/common/test_data.h"
#include "tests/llm/reference.h"
#include "tests/llm/tiny_model.h"

namespace oxi::llm::test {
namespace {

using kernels::DType;

const std::vector<std::string> kArchs = {"llama", "qwen2", "qwen3", "gemma3", "phi3"};

// Formats of 256-element super-blocks (the K-quants, iq4_xs) need rows of a multiple of 256.
bool has_256_blocks(DType t) {
  return kernels::info(t).block_elems == kernels::QK_K;
}

// Max |engine - reference| allowed on the logits, as a fraction of the reference logits' RMS
// (the tiny models' logits have an RMS of about 1, or about 8 with tied embeddings). Float
// weights: f32 rounding only (also checked as an absolute 1e-3). Quantized weights: the
// reference uses the same dequantized weights, so the difference is the kernels quantizing
// activations to 8 bits (q8_0 / q8_1 / q8_K): about 0.6% of each input's RMS per element,
// compounded over ~6 matmuls, i.e. ~1.5% of the logits' RMS per logit and ~6% at the max over
// the 28 x 300 logits compared. Measured worst cases (printed as "[ measure ]"): 0.02-0.087
// over all architectures and types.
double logit_tolerance(DType t) {
  return kernels::info(t).quantized ? 0.12 : 1e-4;
}

template <class V>
int32_t argmax(const V& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

double max_abs_diff(std::span<const float> a, const std::vector<double>& b) {
  double d = 0;
  for (size_t i = 0; i < b.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

double rms(const std::vector<double>& v) {
  double ss = 0;
  for (double x : v) ss += x * x;
  return std::sqrt(ss / v.size());
}

// max |a - b| / rms(b), and the absolute max in `abs_worst`.
double relative_diff(std::span<const float> a, const std::vector<double>& b, double& abs_worst) {
  const double d = max_abs_diff(a, b);
  abs_worst = std::max(abs_worst, d);
  return d / rms(b);
}

struct Backend {
  std::unique_ptr<backends::Backend> cpu = backends::make_cpu_backend(2);
};

// Prompt logits within `tol` of the reference, then 16 greedy tokens identical. A quantized
// model may pick another token only where the reference's top two are closer than the
// tolerance (a legitimate near-tie); the comparison stops there. With an f16 cache the
// reference rounds its keys and values to f16 as well.
void expect_matches_reference_with(const std::shared_ptr<const Model>& model, const TinyModel& tiny,
                                   double tol, DType kv_type, const std::string& what_weights) {
  const std::string what = what_weights + ", " + std::string(kernels::name(kv_type)) + " cache";
  Backend b;
  Session session(model, *b.cpu, 128, kv_type);
  ReferenceModel ref(tiny, kv_type == DType::F16);
  const std::vector<int32_t> prompt = test_prompt(12, tiny.spec.n_vocab, 7);
  std::span<const float> logits = session.eval(prompt);
  std::vector<double> ref_logits;
  for (int32_t t : prompt) ref_logits = ref.step(t);
  double abs_worst = 0;
  const double diff = relative_diff(logits, ref_logits, abs_worst);
  EXPECT_LE(diff, tol) << what << ": prompt logits";
  double worst = diff;
  for (int step = 0; step < 16; ++step) {
    const int32_t mine = argmax(logits), theirs = argmax(ref_logits);
    if (mine != theirs) {
      const double margin = (ref_logits[theirs] - ref_logits[mine]) / rms(ref_logits);
      EXPECT_LE(margin, tol) << what << ": greedy step " << step << " picked " << mine
                             << " instead of " << theirs;
      break;
    }
    const int32_t next = mine;
    logits = session.eval(std::span(&next, 1));
    ref_logits = ref.step(next);
    worst = std::max(worst, relative_diff(logits, ref_logits, abs_worst));
  }
  EXPECT_LE(worst, tol) << what << ": decode logits";
  if (tol < 1e-3) {
    EXPECT_LE(abs_worst, 1e-3) << what;
  }
  std::cout << "[ measure ] " << what << " max |engine - reference| = " << abs_worst << " = "
            << worst << " x rms(logits)\n";
}

// Both cache types: f16 against the reference with its keys and values rounded to f16, f32
// against the exact one. Where the engine's keys and values (f32 arithmetic) and the
// reference's (double) straddle a half-way point between two f16 values, they round to
// neighbours: that element is one f16 step (2^-11 relative) apart, which moved logits by up to
// 5e-4 x RMS (phi3, f16 weights); most runs stay within 3e-5. So the f16 cache's tolerance is
// at least 1e-3 x RMS. (Against the unrounded reference an f16 cache is 4-7e-4 x RMS off on
// every architecture, up to 2e-3 absolute: hence f32, the default for float weights.)
void expect_matches_reference(const std::shared_ptr<const Model>& model, const TinyModel& tiny,
                              double tol, const std::string& what) {
  const bool float_weights = tol < 1e-3;
  EXPECT_EQ(Session::default_kv_type(*model), float_weights ? DType::F32 : DType::F16) << what;
  expect_matches_reference_with(model, tiny, std::max(tol, 1e-3), DType::F16, what);
  expect_matches_reference_with(model, tiny, tol, DType::F32, what);
}

// ---- every GGUF weight type, every architecture ----

struct GgufCase {
  std::string arch;
  DType dtype;
};

class GgufWeights : public ::testing::TestWithParam<GgufCase> {};

TEST_P(GgufWeights, MatchReference) {
  const auto [arch, dtype] = GetParam();
  const TinyModel tiny =
      make_tiny_model(tiny_spec(arch, has_256_blocks(dtype)), dtype, DType::F32, 11);
  oxi::test::TempDir dir;
  write_gguf(tiny, dir / "model.gguf");
  const auto model = Model::load(dir / "model.gguf");
  EXPECT_EQ(model->config().arch, arch);
  EXPECT_EQ(model->config().n_vocab, tiny.spec.n_vocab);
  expect_matches_reference(model, tiny, logit_tolerance(dtype),
                           arch + " gguf " + std::string(kernels::name(dtype)));
}

std::vector<GgufCase> gguf_cases() {
  std::vector<GgufCase> cases;
  for (const auto& arch : kArchs)
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_1,
                    DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K,
                    DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS, DType::TQ1_0, DType::TQ2_0})
      cases.push_back({arch, t});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GgufWeights, ::testing::ValuesIn(gguf_cases()),
                         [](const auto& info) {
                           return info.param.arch + "_" +
                                  std::string(kernels::name(info.param.dtype));
                         });

// ---- Hugging Face checkpoints ----

struct HfCase {
  std::string arch;
  DType dtype;
  std::string format = "safetensors";
  std::optional<DType> quant = std::nullopt;
};

class HfWeights : public ::testing::TestWithParam<HfCase> {};

TEST_P(HfWeights, MatchReference) {
  const HfCase c = GetParam();
  const TinyModel tiny = make_tiny_model(tiny_spec(c.arch, false), c.dtype, c.dtype, 23);
  oxi::test::TempDir dir;
  write_hf_dir(tiny, dir.path(), c.format);
  const auto model = Model::load(dir.path(), LoadOptions{c.quant});
  const std::string what = c.arch + " hf " + c.format + " " + std::string(kernels::name(c.dtype)) +
                           (c.quant ? " --quant " + std::string(kernels::name(*c.quant)) : "");
  if (c.quant) {
    // Held in the layout the kernels prefer for its shape (--quant q4_0 is repacked to Q4_0_R16
    // on AVX2).
    const backends::WeightMatrix& down = model->weights().layers[0].w_down;
    EXPECT_EQ(down.dtype,
              kernels::format_kernels().preferred_layout(*c.quant, down.rows, down.cols));
    expect_matches_reference(model, quantized_copy(tiny, *c.quant), logit_tolerance(*c.quant),
                             what);
  } else {
    EXPECT_EQ(model->weights().layers[0].w_down.dtype, c.dtype);  // used in place
    expect_matches_reference(model, tiny, logit_tolerance(c.dtype), what);
  }
}

std::vector<HfCase> hf_cases() {
  std::vector<HfCase> cases;
  for (const auto& arch : kArchs)
    for (DType t : {DType::F32, DType::F16, DType::BF16}) cases.push_back({arch, t});
  cases.push_back({"llama", DType::F16, "torch"});
  cases.push_back({"qwen2", DType::BF16, "torch"});
  cases.push_back({"llama", DType::BF16, "safetensors", DType::Q8_0});
  cases.push_back({"phi3", DType::F32, "safetensors", DType::Q4_0});
  cases.push_back({"gemma3", DType::F16, "safetensors", DType::Q8_0});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, HfWeights, ::testing::ValuesIn(hf_cases()),
                         [](const auto& info) {
                           const HfCase& c = info.param;
                           return c.arch + "_" + c.format + "_" +
                                  std::string(kernels::name(c.dtype)) +
                                  (c.quant ? "_to_" + std::string(kernels::name(*c.quant)) : "");
                         });

// ---- one architecture at a time: batching, state, GGUF vs HF ----

class PerArch : public ::testing::TestWithParam<std::string> {};

std::shared_ptr<const Model> load_gguf_copy(const TinyModel& tiny, const oxi::test::TempDir& dir) {
  write_gguf(tiny, dir / "model.gguf");
  return Model::load(dir / "model.gguf");
}

// Batched prefill (one GEMM per weight over all tokens) against one token at a time.
TEST_P(PerArch, BatchedPrefillMatchesTokenByToken) {
  for (DType dtype : {DType::F32, DType::Q8_0, DType::Q4_K}) {
    const TinyModel tiny =
        make_tiny_model(tiny_spec(GetParam(), has_256_blocks(dtype)), dtype, DType::F32, 5);
    oxi::test::TempDir dir;
    const auto model = load_gguf_copy(tiny, dir);
    const size_t n_vocab = tiny.spec.n_vocab;
    Backend b;
    Session batched(model, *b.cpu, 64), single(model, *b.cpu, 64);
    const std::vector<int32_t> prompt = test_prompt(20, tiny.spec.n_vocab, 3);
    const auto all_span = batched.eval(prompt, true);
    ASSERT_EQ(all_span.size(), prompt.size() * n_vocab);
    const std::vector<float> all(all_span.begin(), all_span.end());
    double worst = 0;
    for (size_t t = 0; t < prompt.size(); ++t) {
      const auto one = single.eval(std::span(&prompt[t], 1));
      double diff = 0, scale = 1;
      for (size_t i = 0; i < n_vocab; ++i) {
        diff = std::max(diff, static_cast<double>(std::abs(one[i] - all[t * n_vocab + i])));
        scale = std::max(scale, static_cast<double>(std::abs(one[i])));
      }
      worst = std::max(worst, diff / scale);
    }
    EXPECT_LE(worst, 1e-4) << kernels::name(dtype);
    std::cout << "[ measure ] " << GetParam() << " " << kernels::name(dtype)
              << " batched vs token-by-token max rel diff = " << worst << "\n";
    EXPECT_EQ(batched.n_past(), prompt.size());
    EXPECT_EQ(batched.tokens(), prompt);
  }
}

// Longer than one batch (Session::kMaxBatch): the last logits equal those of a session fed
// the same batches by hand.
TEST_P(PerArch, EvalSplitsLongInputsIntoBatches) {
  const TinyModel tiny = make_tiny_model(tiny_spec(GetParam(), false), DType::Q8_0, DType::F32, 9);
  oxi::test::TempDir dir;
  const auto model = load_gguf_copy(tiny, dir);
  Backend b;
  Session whole(model, *b.cpu, 512), by_hand(model, *b.cpu, 512);
  const std::vector<int32_t> prompt = test_prompt(300, tiny.spec.n_vocab, 13);
  const std::vector<float> a = [&] {
    auto s = whole.eval(prompt);
    return std::vector<float>(s.begin(), s.end());
  }();
  by_hand.eval(std::span(prompt).first(Session::kMaxBatch));
  const auto last = by_hand.eval(std::span(prompt).subspan(Session::kMaxBatch));
  ASSERT_EQ(a.size(), last.size());
  EXPECT_EQ(std::memcmp(a.data(), last.data(), a.size() * sizeof(float)), 0);
  const auto every = Session(model, *b.cpu, 512).eval(prompt, true);
  EXPECT_EQ(every.size(), prompt.size() * tiny.spec.n_vocab);
}

// Embeddings (lib/llm/embeddings.h): the final-normed hidden states pooled (mean, the first,
// the last token) and normalized (none, int16 scale, taxicab, euclidean, 3-norm), against the
// reference's hidden states pooled and normalized in double; hidden() over more than a batch
// equals the rows of two batches fed by hand.
TEST_P(PerArch, EmbeddingsMatchTheReference) {
  for (DType dtype : {DType::F32, DType::Q8_0}) {
    const TinyModel tiny = make_tiny_model(tiny_spec(GetParam(), false), dtype, DType::F32, 21);
    oxi::test::TempDir dir;
    const auto model = load_gguf_copy(tiny, dir);
    EXPECT_EQ(default_pooling(*model), Pooling::mean);  // the file says none
    Backend b;
    Session session(model, *b.cpu, 64);
    const std::vector<int32_t> prompt = test_prompt(17, tiny.spec.n_vocab, 4);
    ReferenceModel ref(tiny);
    std::vector<std::vector<double>> states;
    for (int32_t t : prompt) {
      ref.step(t);
      states.push_back(ref.hidden());
    }
    const size_t width = states[0].size();
    double largest = 0;
    for (Pooling pooling : {Pooling::mean, Pooling::cls, Pooling::last}) {
      std::vector<double> pooled(width, 0.0);
      for (size_t t = 0; t < states.size(); ++t) {
        const bool used = pooling == Pooling::mean || (pooling == Pooling::cls && t == 0) ||
                          (pooling == Pooling::last && t + 1 == states.size());
        if (!used) continue;
        for (size_t i = 0; i < width; ++i)
          pooled[i] += states[t][i] / (pooling == Pooling::mean ? states.size() : 1);
      }
      for (int norm : {-1, 0, 1, 2, 3}) {
        double sum = 0;
        for (double x : pooled)
          sum = norm == 0 ? std::max(sum, std::abs(x)) : sum + std::pow(std::abs(x), norm);
        const double scale = norm < 0    ? 1.0
                             : norm == 0 ? 32760.0 / sum
                                         : 1.0 / std::pow(sum, 1.0 / norm);
        const std::vector<float> mine = embed(session, prompt, pooling, norm);
        ASSERT_EQ(mine.size(), width);
        double worst = 0, size = 0;
        for (size_t i = 0; i < width; ++i) {
          worst = std::max(worst, std::abs(mine[i] - pooled[i] * scale));
          size = std::max(size, std::abs(pooled[i] * scale));
        }
        // Float weights: f32 against double arithmetic; q8_0: its activations' rounding too.
        EXPECT_LE(worst / size, dtype == DType::F32 ? 1e-5 : 3e-2)
            << kernels::name(dtype) << " " << to_string(pooling) << " norm " << norm;
        largest = std::max(largest, worst / size);
      }
    }
    std::cout << "[ measure ] " << GetParam() << " " << kernels::name(dtype)
              << " embeddings: max |engine - reference| = " << largest << " x max |reference|\n";
    EXPECT_EQ(session.tokens(), prompt);  // the session holds them after
  }
  const TinyModel tiny = make_tiny_model(tiny_spec(GetParam(), false), DType::Q8_0, DType::F32, 9);
  oxi::test::TempDir dir;
  const auto model = load_gguf_copy(tiny, dir);
  Backend b;
  Session whole(model, *b.cpu, 512), by_hand(model, *b.cpu, 512);
  const std::vector<int32_t> prompt = test_prompt(300, tiny.spec.n_vocab, 13);
  const auto all = whole.hidden(prompt);
  const std::vector<float> rows(all.begin(), all.end());
  const size_t width = static_cast<size_t>(tiny.spec.n_embd);
  ASSERT_EQ(rows.size(), prompt.size() * width);
  const auto first = by_hand.hidden(std::span(prompt).first(Session::kMaxBatch));
  EXPECT_EQ(std::memcmp(rows.data(), first.data(), first.size() * sizeof(float)), 0);
  const auto second = by_hand.hidden(std::span(prompt).subspan(Session::kMaxBatch));
  EXPECT_EQ(std::memcmp(rows.data() + Session::kMaxBatch * width, second.data(),
                        second.size() * sizeof(float)),
            0);
}

// save_state / load_state: a restored session continues bit for bit like the original, with
// either cache type.
void expect_state_restores(const std::string& arch, DType kv_type) {
  SCOPED_TRACE(std::string(kernels::name(kv_type)) + " cache");
  const TinyModel tiny = make_tiny_model(tiny_spec(arch, false), DType::Q4_0, DType::F32, 17);
  oxi::test::TempDir dir;
  const auto model = load_gguf_copy(tiny, dir);
  Backend b;
  Session original(model, *b.cpu, 64, kv_type);
  const std::vector<int32_t> prompt = test_prompt(9, tiny.spec.n_vocab, 21);
  original.eval(prompt);
  original.save_state(dir / "state.bin");
  Session restored(model, *b.cpu, 64, kv_type);
  restored.load_state(dir / "state.bin");
  EXPECT_EQ(restored.tokens(), prompt);
  EXPECT_EQ(restored.n_past(), prompt.size());
  // copy_context: the same without a file, into a cache of another size (other row strides).
  Session copied(model, *b.cpu, 40, kv_type);
  copied.eval(test_prompt(3, tiny.spec.n_vocab, 8));  // replaced by the copy
  copied.copy_context(original);
  EXPECT_EQ(copied.tokens(), prompt);
  const std::vector<int32_t> more = test_prompt(5, tiny.spec.n_vocab, 4);
  std::vector<int32_t> next = {more[0]};
  for (int step = 0; step < 8; ++step) {
    const std::vector<int32_t> input = step == 0 ? more : next;
    const auto a_span = original.eval(input);
    const std::vector<float> a(a_span.begin(), a_span.end());
    const auto r = restored.eval(input);
    ASSERT_EQ(std::memcmp(a.data(), r.data(), a.size() * sizeof(float)), 0) << "step " << step;
    const auto c = copied.eval(input);
    ASSERT_EQ(std::memcmp(a.data(), c.data(), a.size() * sizeof(float)), 0) << "step " << step;
    next = {argmax(a)};
  }
  Session small(model, *b.cpu, 8, kv_type);  // fewer positions than the context
  EXPECT_THROW(small.copy_context(original), Error);
  EXPECT_EQ(small.n_past(), 0u);
  if (kv_type == DType::F32) {  // a version 1 file (no cache type field: f32) loads too
    std::vector<uint8_t> bytes = oxi::test::read_file_bytes(dir / "state.bin");
    const uint32_t version1 = 1;
    std::memcpy(bytes.data() + 8, &version1, 4);
    bytes.erase(bytes.begin() + 8 + 4 * 4, bytes.begin() + 8 + 5 * 4);  // the type field
    oxi::test::write_file_bytes(dir / "v1.bin", bytes);
    Session v1(model, *b.cpu, 64, kv_type);
    v1.load_state(dir / "v1.bin");
    Session v2(model, *b.cpu, 64, kv_type);
    v2.load_state(dir / "state.bin");
    const auto from_v1 = v1.eval(more);
    const std::vector<float> a(from_v1.begin(), from_v1.end());
    const auto from_v2 = v2.eval(more);
    EXPECT_EQ(std::memcmp(a.data(), from_v2.data(), a.size() * sizeof(float)), 0);
  }
  // A truncated file and another model's state are refused.
  { std::ofstream(dir / "short.bin", std::ios::binary) << "OXISTATE"; }
  EXPECT_THROW(restored.load_state(dir / "short.bin"), Error);
  const TinyModel other = make_tiny_model(tiny_spec(arch, true), DType::F32, DType::F32, 1);
  oxi::test::TempDir other_dir;
  Session foreign(load_gguf_copy(other, other_dir), *b.cpu, 64, kv_type);
  EXPECT_THROW(foreign.load_state(dir / "state.bin"), Error);
  EXPECT_THROW(foreign.copy_context(original), Error);
  // So is a state of the other cache type, with a message saying so.
  const DType other_type = kv_type == DType::F16 ? DType::F32 : DType::F16;
  Session other_cache(model, *b.cpu, 64, other_type);
  EXPECT_THROW(other_cache.copy_context(original), Error);
  try {
    other_cache.load_state(dir / "state.bin");
    ADD_FAILURE() << "a state of another cache type was loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::string(kernels::name(kv_type)) + " elements"),
              std::string::npos)
        << e.what();
  }
}

TEST_P(PerArch, StateRestoreContinuesBitIdentically) {
  expect_state_restores(GetParam(), DType::F16);
  expect_state_restores(GetParam(), DType::F32);
}

// Layer 0's keys and values do not depend on the cache (its input is the embedding): an f16
// cache must hold exactly the f32 cache's, each rounded to the nearest half (ties to even).
// Read from the state files (layout in session_state.cpp).
TEST_P(PerArch, F16CacheHoldsTheRoundedRows) {
  const TinyModel tiny = make_tiny_model(tiny_spec(GetParam(), false), DType::F32, DType::F32, 5);
  oxi::test::TempDir dir;
  const auto model = load_gguf_copy(tiny, dir);
  Backend b;
  const std::vector<int32_t> prompt = test_prompt(7, tiny.spec.n_vocab, 3);
  const size_t kv_dim = static_cast<size_t>(tiny.spec.n_head_kv * tiny.spec.head_dim);
  const size_t header = 8 + 5 * 4 + 8 + prompt.size() * 4, elements = 2 * prompt.size() * kv_dim;
  const auto layer0 = [&](DType type) {
    Session s(model, *b.cpu, 16, type);
    s.eval(prompt);
    const auto file = dir / (std::string(kernels::name(type)) + ".state");
    s.save_state(file);
    const std::vector<uint8_t> bytes = oxi::test::read_file_bytes(file);
    uint32_t stored_type = 0;
    std::memcpy(&stored_type, bytes.data() + 8 + 4 * 4, 4);
    EXPECT_EQ(stored_type, static_cast<uint32_t>(type));
    std::vector<double> rows(elements);  // keys then values
    for (size_t i = 0; i < elements; ++i) {
      if (type == DType::F32) {
        float f;
        std::memcpy(&f, bytes.data() + header + 4 * i, 4);
        rows[i] = f;
      } else {
        uint16_t h;
        std::memcpy(&h, bytes.data() + header + 2 * i, 2);
        rows[i] = kernels::f16_to_f32(h);
      }
    }
    return rows;
  };
  const std::vector<double> exact = layer0(DType::F32), rounded = layer0(DType::F16);
  size_t changed = 0;
  for (size_t i = 0; i < elements; ++i) {
    ASSERT_EQ(rounded[i], test::round_to_f16(exact[i])) << "element " << i;
    changed += rounded[i] != exact[i];
  }
  EXPECT_GT(changed, elements / 2);  // the rounding did happen
}

// truncate: dropping positions and evaluating others equals never having evaluated them.
TEST_P(PerArch, TruncateForgetsLaterPositions) {
  const TinyModel tiny = make_tiny_model(tiny_spec(GetParam(), false), DType::F16, DType::F32, 3);
  oxi::test::TempDir dir;
  const auto model = load_gguf_copy(tiny, dir);
  Backend b;
  const std::vector<int32_t> a = test_prompt(6, tiny.spec.n_vocab, 1);
  const std::vector<int32_t> junk = test_prompt(4, tiny.spec.n_vocab, 2);
  const std::vector<int32_t> c = test_prompt(3, tiny.spec.n_vocab, 3);
  Session edited(model, *b.cpu, 64), clean(model, *b.cpu, 64);
  edited.eval(a);
  edited.eval(junk);
  edited.truncate(a.size());
  EXPECT_EQ(edited.tokens(), a);
  const auto x_span = edited.eval(c);
  const std::vector<float> x(x_span.begin(), x_span.end());
  clean.eval(a);
  const auto y = clean.eval(c);
  EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)), 0);
}

// The same weights as GGUF (llama: q/k rows permuted, adjacent-pair RoPE) and as an HF
// checkpoint (half-split RoPE) give the same logits.
TEST_P(PerArch, GgufAndHfAgree) {
  const TinyModel tiny = make_tiny_model(tiny_spec(GetParam(), false), DType::F32, DType::F32, 29);
  oxi::test::TempDir dir;
  const auto from_gguf = load_gguf_copy(tiny, dir);
  write_hf_dir(tiny, dir / "hf");
  const auto from_hf = Model::load(dir / "hf");
  EXPECT_EQ(from_gguf->config().rope_layout,
            GetParam() == "llama" ? kernels::RopeLayout::adjacent : kernels::RopeLayout::neox);
  EXPECT_EQ(from_hf->config().rope_layout, kernels::RopeLayout::neox);
  Backend b;
  Session g(from_gguf, *b.cpu, 64), h(from_hf, *b.cpu, 64);
  const std::vector<int32_t> prompt = test_prompt(16, tiny.spec.n_vocab, 8);
  const auto gs = g.eval(prompt, true);
  const std::vector<float> gl(gs.begin(), gs.end());
  const auto hl = h.eval(prompt, true);
  double diff = 0;
  for (size_t i = 0; i < gl.size(); ++i) diff = std::max(diff, double(std::abs(gl[i] - hl[i])));
  EXPECT_LE(diff, 1e-4);
}

// Tokenizer, chat template and stop tokens come with the model.
TEST_P(PerArch, CarriesTokenizerTemplateAndStopTokens) {
  const TinyModel tiny = make_tiny_model(tiny_spec(GetParam(), false), DType::F32, DType::F32, 2);
  oxi::test::TempDir dir;
  const auto g = load_gguf_copy(tiny, dir);
  EXPECT_EQ(g->tokenizer().vocab_size(), static_cast<size_t>(tiny.spec.n_vocab));
  EXPECT_EQ(g->chat_template(), std::string(kChatTemplate));
  EXPECT_TRUE(g->add_bos());
  EXPECT_EQ(g->bos_id(), 1);
  EXPECT_EQ(g->eos_ids(), std::vector<int32_t>{2});
  write_hf_dir(tiny, dir / "hf");
  const auto h = Model::load(dir / "hf" / "model.safetensors");  // a weight file of the dir
  EXPECT_EQ(h->chat_template(), std::string(kChatTemplate));
  EXPECT_EQ(h->bos_id(), 1);
  EXPECT_EQ(h->eos_ids(), (std::vector<int32_t>{2, 5}));  // + generation_config.json
}

// Where a Hugging Face directory keeps its chat template: tokenizer_config.json, else
// chat_template.jinja (newer transformers), else the processor's chat_template.json
// (multimodal checkpoints such as Gemma 3 4B).
TEST(ModelLoad, HfChatTemplateFromJinjaOrProcessorFile) {
  const TinyModel tiny = make_tiny_model(tiny_spec("llama", false), DType::F32, DType::F32, 2);
  oxi::test::TempDir dir;
  write_hf_dir(tiny, dir / "hf");
  const auto rewrite = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / "hf" / name, std::ios::binary | std::ios::trunc) << text;
  };
  rewrite("tokenizer_config.json", R"({"bos_token": "<s>", "eos_token": "</s>"})");
  EXPECT_FALSE(Model::load(dir / "hf")->chat_template().has_value());
  rewrite("chat_template.json", R"({"chat_template": "from the processor {{ messages }}"})");
  EXPECT_EQ(Model::load(dir / "hf")->chat_template(), "from the processor {{ messages }}");
  rewrite("chat_template.jinja", "from the jinja file");
  EXPECT_EQ(Model::load(dir / "hf")->chat_template(), "from the jinja file");
}

// Q4_0, Q8_0, Q4_K, IQ4_XS, IQ4_NL, Q5_0, Q5_1, Q4_1, Q5_K, Q3_K and Q2_K matrices are repacked at
// load where the kernels prefer another layout (AVX2: Q4_0_R16, Q8_0_R16, Q4_K_R8, and Q4_K_R8S for
// q4_K rows that end in a short group, IQ4_XS_R8, IQ4_NL_R16, Q5_0_R16, Q5_1_R16, Q4_1_R16 and
// Q2_K_R8 and Q3_K_R8; avx512 also Q5_K_R8).
// Widths of 18 and 32 blocks exercise whole 16-block groups and the plain-layout tail; kv
// projections (9 blocks) only the tail (q4_K: 8 and 9 blocks of 256, one 8-block group, then
// ffn_down's rows of 9 blocks in sets of 8 rows, q4_K_r8s). The repacked model matches the
// reference as the plain one does. Against the plain layout (OXI_REPACK=0) the sums differ by
// f32 rounding only, but the next matmul quantizes its input to 8 bits again, and a value that
// sat on a rounding boundary may step by one q8 level: so most positions agree within 1e-4 of
// the logits' RMS and the others within a small multiple of one such step (far below the
// reference tolerance of 0.12). Such a step moved one position by up to 0.021 x RMS here
// (llama q8_0; the other positions of that run within 5e-7), hence 0.05.
void expect_repacked_matches_plain_layout(const std::string& arch, DType type,
                                          DType repacked_type) {
  const bool k_quant = kernels::info(type).block_elems == 256;
  TinySpec spec = tiny_spec(arch, k_quant);
  // q4_K_r8 groups 8 super-blocks: 8 blocks (one group) and 9 (a group and a short one)
  spec.n_embd = k_quant ? 256 * 8 : 32 * 18;
  spec.head_dim = spec.n_embd / spec.n_head;
  spec.n_ff = k_quant ? 256 * 9 : 32 * 32;
  const TinyModel tiny = make_tiny_model(spec, type, DType::F32, 41);
  oxi::test::TempDir dir;
  write_gguf(tiny, dir / "model.gguf");
  const auto repacked = Model::load(dir / "model.gguf");
  const kernels::FormatKernels& k = kernels::format_kernels();
  const DType layout = k.preferred_layout(type);
  EXPECT_TRUE(layout == type || layout == repacked_type) << kernels::name(layout);
  const ModelWeights& w = repacked->weights();
  for (const backends::WeightMatrix* m :
       {&w.layers[0].wq, &w.layers[1].wk, &w.layers[0].w_down, &w.layers[1].w_up, &w.output})
    EXPECT_EQ(m->dtype, k.preferred_layout(type, m->rows, m->cols));
  // q4_K rows of 9 super-blocks (ffn_down) end in a short q4_K_r8 group: in sets of 8 rows
  if (layout == DType::Q4_K_R8) {
    EXPECT_EQ(w.layers[0].w_down.dtype, DType::Q4_K_R8S);
  }
  if (spec.tied) {
    EXPECT_EQ(w.token_embd.data, w.output.data);  // one repacked copy serves both
    EXPECT_EQ(w.token_embd.dtype, k.preferred_layout(type, w.output.rows, w.output.cols));
  } else {
    EXPECT_NE(w.token_embd.dtype, repacked_type);  // lookups only: left in the file
  }
  const std::string what =
      arch + " gguf " + std::string(kernels::name(type)) + " " + std::string(kernels::name(layout));
  expect_matches_reference(repacked, tiny, logit_tolerance(type), what);

  ::setenv("OXI_REPACK", "0", 1);
  const auto plain = Model::load(dir / "model.gguf");
  ::unsetenv("OXI_REPACK");
  EXPECT_EQ(plain->weights().layers[0].wq.dtype, type);
  Backend b;
  // f32 caches: an f16 one would round the two layouts' f32-order differences in keys and
  // values into whole f16 steps now and then, which is not what this compares.
  Session a(repacked, *b.cpu, 64, DType::F32), p(plain, *b.cpu, 64, DType::F32);
  const size_t n_vocab = tiny.spec.n_vocab;
  std::vector<double> diffs;  // per logits row: max |repacked - plain| / rms(repacked)
  const auto compare = [&](std::span<const float> mine, std::span<const float> theirs) {
    for (size_t row = 0; row < mine.size() / n_vocab; ++row) {
      const std::vector<double> want(mine.begin() + row * n_vocab,
                                     mine.begin() + (row + 1) * n_vocab);
      double abs_worst = 0;
      diffs.push_back(relative_diff(theirs.subspan(row * n_vocab, n_vocab), want, abs_worst));
    }
  };
  const std::vector<int32_t> prompt = test_prompt(12, tiny.spec.n_vocab, 9);
  const auto as = a.eval(prompt, true);  // batched: gemm_q
  const std::vector<float> prefill(as.begin(), as.end());
  compare(prefill, p.eval(prompt, true));
  std::vector<int32_t> next = {argmax(std::span(prefill).last(n_vocab))};
  for (int step = 0; step < 4; ++step) {  // one token: matvec
    const auto al = a.eval(next);
    const std::vector<float> logits(al.begin(), al.end());
    compare(logits, p.eval(next));
    next = {argmax(logits)};
  }
  std::vector<double> sorted = diffs;
  std::sort(sorted.begin(), sorted.end());
  // q4_K: at the widths a group of 8 super-blocks needs (2048, 2304) a few boundary steps per run
  // are expected (each moves the positions after it through the KV cache); the same spread
  // shows with the reference q4_K_r8 tile against plain q4_K, so it comes from f32 order alone.
  EXPECT_LE(sorted[sorted.size() / 2], k_quant ? 0.1 : 1e-4) << "median over positions";
  EXPECT_LE(sorted.back(), k_quant ? 0.2 : 0.05) << "worst position";
  std::cout << "[ measure ] " << what << " vs plain: median " << sorted[sorted.size() / 2]
            << ", worst " << sorted.back() << " x rms(logits) over " << diffs.size()
            << " positions\n";
}

TEST_P(PerArch, RepackedQ4_0MatchesPlainLayout) {
  expect_repacked_matches_plain_layout(GetParam(), DType::Q4_0, DType::Q4_0_R16);
}

TEST_P(PerArch, RepackedQ8_0MatchesPlainLayout) {
  expect_repacked_matches_plain_layout(GetParam(), DType::Q8_0, DType::Q8_0_R16);
}

// One architecture: the model is large (256-element blocks) and the kernels are those above.
TEST(RepackedQ4_K, MatchesPlainLayout) {
  expect_repacked_matches_plain_layout("llama", DType::Q4_K, DType::Q4_K_R8);
}

// q5_K_r8 (avx512; elsewhere the model keeps q5_K and this compares it with itself; the AVX2 tile
// is checked in tests/kernels/formats/test_q5_k_r8.cpp).
TEST(RepackedQ5_K, MatchesPlainLayout) {
  expect_repacked_matches_plain_layout("llama", DType::Q5_K, DType::Q5_K_R8);
}

// q3_K_r8 and q2_K_r8 (AVX2 and avx512); elsewhere the model keeps q3_K / q2_K and this compares
// it with itself.
TEST(RepackedQ3_K, MatchesPlainLayout) {
  expect_repacked_matches_plain_layout("llama", DType::Q3_K, DType::Q3_K_R8);
}

TEST(RepackedQ2_K, MatchesPlainLayout) {
  expect_repacked_matches_plain_layout("llama", DType::Q2_K, DType::Q2_K_R8);
}

// iq4_xs_r8 (AVX2 and avx512; elsewhere the model keeps iq4_xs and this compares it with itself).
TEST(RepackedIQ4_XS, MatchesPlainLayout) {
  expect_repacked_matches_plain_layout("llama", DType::IQ4_XS, DType::IQ4_XS_R8);
}

// iq4_nl_r16: q4_0_r16's groups and tiles over iq4_nl blocks. (qwen2's model of this seed, with
// its larger activations, takes one of the q8 boundary steps described above at the fourth
// prompt position, and the positions after it follow through the KV cache: 1e-7 x RMS before it,
// 0.015-0.027 after, with repacked and plain each as near the reference; so llama here, as for
// iq4_xs. Every architecture's MatchReference runs the repacked layout.)
TEST(RepackedIQ4_NL, MatchesPlainLayout) {
  expect_repacked_matches_plain_layout("llama", DType::IQ4_NL, DType::IQ4_NL_R16);
}

// q5_0_r16 / q5_1_r16: q4_0_r16's groups with the fifth bits (and q5_1's mins) beside the scales.
TEST(RepackedQ5_0, MatchesPlainLayout) {
  expect_repacked_matches_plain_layout("llama", DType::Q5_0, DType::Q5_0_R16);
}

TEST(RepackedQ5_1, MatchesPlainLayout) {
  expect_repacked_matches_plain_layout("llama", DType::Q5_1, DType::Q5_1_R16);
}

// q4_1_r16: q4_0_r16's groups with q4_1's mins beside the scales.
TEST(RepackedQ4_1, MatchesPlainLayout) {
  expect_repacked_matches_plain_layout("llama", DType::Q4_1, DType::Q4_1_R16);
}

INSTANTIATE_TEST_SUITE_P(Archs, PerArch, ::testing::ValuesIn(kArchs));

}  // namespace
}  // namespace oxi::llm::test

namespace oxi::llm::test {
namespace {

TEST(ModelLoad, RefusesLongRopeAndUnknownArchitectures) {
  TinySpec spec = tiny_spec("phi3", false);
  const TinyModel tiny = make_tiny_model(spec, DType::F32, DType::F32, 1);
  oxi::test::TempDir dir;
  write_hf_dir(tiny, dir.path());
  auto config = nlohmann::json::parse(std::ifstream(dir / "config.json"));
  config["rope_scaling"] = {{"type", "longrope"}, {"long_factor", {1.0}}, {"short_factor", {1.0}}};
  std::ofstream(dir / "config.json") << config.dump();
  try {
    Model::load(dir.path());
    FAIL() << "LongRoPE accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("LongRoPE"), std::string::npos) << e.what();
  }
  config["model_type"] = "mamba";
  std::ofstream(dir / "config.json") << config.dump();
  EXPECT_THROW(Model::load(dir.path()), Error);
  EXPECT_THROW(Model::load(dir / "missing.gguf"), Error);
}

std::vector<float> prompt_logits(const std::shared_ptr<const Model>& model) {
  auto cpu = backends::make_cpu_backend(2);
  Session s(model, *cpu, 64);
  const auto l = s.eval(test_prompt(24, model->config().n_vocab, 6), true);
  return {l.begin(), l.end()};
}

// Llama 3 RoPE scaling: HF rope_scaling (computed by the engine) and GGUF rope_freqs.weight
// (as llama.cpp's converter writes it) agree, and differ from no scaling.
TEST(ModelLoad, Llama3RopeScalingFromHfAndGgufAgree) {
  TinySpec spec = tiny_spec("llama", false);
  spec.llama3_factor = 8.0f;
  spec.llama3_original_context = 64.0f;  // wavelengths 16..64 are blended, longer ones scaled
  const TinyModel tiny = make_tiny_model(spec, DType::F32, DType::F32, 31);
  oxi::test::TempDir dir;
  write_gguf(tiny, dir / "scaled.gguf");
  write_hf_dir(tiny, dir / "hf");
  TinyModel unscaled = tiny;
  unscaled.spec.llama3_factor = 0.0f;
  write_gguf(unscaled, dir / "plain.gguf");
  const auto hf = Model::load(dir / "hf");
  EXPECT_EQ(hf->config().rope_scaling.kind, kernels::RopeScaling::Kind::llama3);
  const std::vector<float> a = prompt_logits(Model::load(dir / "scaled.gguf"));
  const std::vector<float> b = prompt_logits(hf);
  const std::vector<float> c = prompt_logits(Model::load(dir / "plain.gguf"));
  double same = 0, differ = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    same = std::max(same, double(std::abs(a[i] - b[i])));
    differ = std::max(differ, double(std::abs(a[i] - c[i])));
  }
  EXPECT_LE(same, 1e-4);
  EXPECT_GE(differ, 1e-2);
}

nlohmann::json small_hf_config(const std::string& model_type) {
  return {{"model_type", model_type}, {"vocab_size", 300},        {"hidden_size", 64},
          {"num_hidden_layers", 4},   {"num_attention_heads", 4}, {"intermediate_size", 128}};
}

// config.json keys read the way transformers reads them (differences the torch reference of
// tests/reference/llm_torch_reference.py found).
TEST(HfConfig, SlidingWindowOnlyWhereTheFamilyAppliesIt) {
  nlohmann::json j = small_hf_config("llama");
  j["sliding_window"] = 4;  // transformers' Llama ignores it
  EXPECT_EQ(config_from_hf(j, "t").window_of_layer(0), 0);
  j["model_type"] = "mistral";
  EXPECT_EQ(config_from_hf(j, "t").window_of_layer(0), 4);
  for (const char* qwen : {"qwen2", "qwen3"}) {
    j["model_type"] = qwen;
    EXPECT_EQ(config_from_hf(j, "t").window_of_layer(3), 0) << qwen << ": off by default";
    j["use_sliding_window"] = true;
    j["max_window_layers"] = 2;  // layers 0 and 1 see everything
    const ModelConfig c = config_from_hf(j, "t");
    EXPECT_EQ(c.window_of_layer(1), 0) << qwen;
    EXPECT_EQ(c.window_of_layer(2), 4) << qwen;
    j.erase("use_sliding_window");
    j.erase("max_window_layers");
  }
}

TEST(HfConfig, RopeParametersOfTransformers5) {
  nlohmann::json j = small_hf_config("llama");
  j["rope_parameters"] = {{"rope_type", "llama3"},   {"rope_theta", 500000.0},
                          {"factor", 32.0},          {"low_freq_factor", 1.0},
                          {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  const ModelConfig c = config_from_hf(j, "t");
  EXPECT_EQ(c.rope_base, 500000.0f);
  EXPECT_EQ(c.rope_scaling.kind, kernels::RopeScaling::Kind::llama3);
  EXPECT_EQ(c.rope_scaling.factor, 32.0f);

  nlohmann::json g = small_hf_config("gemma3_text");
  g["sliding_window"] = 8;
  g["rope_parameters"] = {
      {"full_attention", {{"rope_type", "linear"}, {"rope_theta", 1000000.0}, {"factor", 8.0}}},
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}};
  const ModelConfig gc = config_from_hf(g, "t");
  EXPECT_EQ(gc.rope_base, 1000000.0f);
  EXPECT_EQ(gc.rope_base_local, 10000.0f);
  EXPECT_EQ(gc.rope_scaling.kind, kernels::RopeScaling::Kind::linear);
  EXPECT_EQ(gc.rope_scaling.factor, 8.0f);
}

// Gemma 3 4B's config.json: a composite config whose text_config lists only what differs from
// Gemma3TextConfig's defaults (as transformers saves it); the rest are those defaults.
TEST(HfConfig, Gemma3TextConfigDefaultsFillAMinimalTextConfig) {
  const nlohmann::json j = {{"architectures", {"Gemma3ForConditionalGeneration"}},
                            {"model_type", "gemma3"},
                            {"text_config",
                             {{"hidden_size", 2560},
                              {"intermediate_size", 10240},
                              {"model_type", "gemma3_text"},
                              {"num_hidden_layers", 34},
                              {"rope_scaling", {{"factor", 8.0}, {"rope_type", "linear"}}},
                              {"sliding_window", 1024}}},
                            {"vision_config", {{"model_type", "siglip_vision_model"}}}};
  const ModelConfig c = config_from_hf(j, "t");
  EXPECT_EQ(c.arch, "gemma3");
  EXPECT_EQ(c.n_vocab, 262208);
  EXPECT_EQ(c.n_embd, 2560);
  EXPECT_EQ(c.n_layer, 34);
  EXPECT_EQ(c.n_head, 8);
  EXPECT_EQ(c.n_head_kv, 4);
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_EQ(c.rope_base, 1000000.0f);
  EXPECT_EQ(c.rope_base_local, 10000.0f);
  EXPECT_EQ(c.rope_scaling.kind, kernels::RopeScaling::Kind::linear);
  EXPECT_EQ(c.rope_scaling.factor, 8.0f);
  EXPECT_FLOAT_EQ(c.attn_scale, 1.0f / 16.0f);  // query_pre_attn_scalar 256
  EXPECT_EQ(c.window_of_layer(0), 1024);
  EXPECT_EQ(c.window_of_layer(5), 0);  // every 6th layer global
  EXPECT_TRUE(c.tied_embeddings);
  // Given keys win over the defaults.
  nlohmann::json k = j;
  k["text_config"]["num_attention_heads"] = 16;
  k["text_config"]["rope_theta"] = 500000.0;
  EXPECT_EQ(config_from_hf(k, "t").n_head, 16);
  EXPECT_EQ(config_from_hf(k, "t").rope_base, 500000.0f);
}

TEST(ModelLoad, SessionRefusesContextOverflow) {
  const TinyModel tiny = make_tiny_model(tiny_spec("llama", false), DType::F32, DType::F32, 1);
  oxi::test::TempDir dir;
  write_gguf(tiny, dir / "m.gguf");
  const auto model = Model::load(dir / "m.gguf");
  auto cpu = backends::make_cpu_backend(1);
  Session s(model, *cpu, 8);
  EXPECT_EQ(s.n_ctx(), 8u);
  s.eval(test_prompt(8, 300, 1));
  EXPECT_THROW(s.eval(test_prompt(1, 300, 2)), Error);
  Session d(model, *cpu);
  EXPECT_EQ(d.n_ctx(), 512u);  // the model's n_ctx_train
}

}  // namespace
}  // namespace oxi::llm::test
