// WhisperModel / WhisperState on a tiny random model written in all three checkpoint formats,
// against the naive double-precision reference (reference.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>

#include "backends/cpu/cpu_backend.h"
#include "kernels/formats/quant.h"
#include "lib/core/error.h"
#include "lib/whisper/encoder_batcher.h"
#include "lib/whisper/whisper_encoder.h"
#include "lib/whisper/whisper_model.h"
#include "lib/whisper/whisper_state.h"
#include "tests/common/test_data.h"
#include "tests/whisper_model/reference.h"
#include "tests/whisper_model/tiny_whisper.h"

namespace oxi::whisper::test {
namespace {

double relative_l2(std::span<const float> got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / den);
}

double relative_l2(std::span<const float> got, std::span<const float> want) {
  return relative_l2(got, std::vector<double>(want.begin(), want.end()));
}

template <class T>
int32_t argmax(std::span<const T> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// The three checkpoints, written once for the whole suite.
class WhisperModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new oxi::test::TempDir();
    tiny_ = new TinyWhisper(make_tiny_whisper(7));
    write_hf_dir(*tiny_, *dir_ / "hf");
    std::filesystem::create_directories(*dir_ / "openai");
    write_openai_pt(*tiny_, *dir_ / "openai" / "tiny.pt");
    write_ggml(*tiny_, *dir_ / "ggml-tiny.bin");
  }
  static void TearDownTestSuite() {
    delete tiny_;
    delete dir_;
  }
  static std::vector<std::filesystem::path> paths() {
    return {*dir_ / "hf", *dir_ / "openai" / "tiny.pt", *dir_ / "ggml-tiny.bin"};
  }
  static std::vector<float> mel(int n_frames) {
    return oxi::test::random_floats(static_cast<size_t>(tiny_->dims.n_mels) * n_frames, 99, -1.5f,
                                    1.5f);
  }
  std::vector<int32_t> prompt(const WhisperModel& m) const {
    const WhisperVocab& v = m.vocab();
    return {v.sot, *v.language_token("en"), v.transcribe, v.no_timestamps};
  }

  static oxi::test::TempDir* dir_;
  static TinyWhisper* tiny_;
  std::unique_ptr<backends::Backend> backend_ = backends::make_cpu_backend(2);
};
oxi::test::TempDir* WhisperModelTest::dir_ = nullptr;
TinyWhisper* WhisperModelTest::tiny_ = nullptr;

TEST_F(WhisperModelTest, EveryFormatLoadsTheSameConfigAndVocabulary) {
  for (const auto& path : paths()) {
    SCOPED_TRACE(path.string());
    const auto m = WhisperModel::load(path);
    const WhisperConfig& c = m->config();
    EXPECT_EQ(c.n_mels, 80);
    EXPECT_EQ(c.n_audio_ctx, 50);
    EXPECT_EQ(c.n_audio_state, 64);
    EXPECT_EQ(c.n_audio_head, 4);
    EXPECT_EQ(c.n_audio_layer, 2);
    EXPECT_EQ(c.n_text_ctx, 64);
    EXPECT_EQ(c.n_text_layer, 2);
    EXPECT_EQ(c.n_vocab, 1867);
    EXPECT_EQ(c.n_frames, 100);
    EXPECT_EQ(c.n_samples, 16000);
    EXPECT_FALSE(c.multilingual);
    const WhisperVocab& v = m->vocab();
    EXPECT_EQ(v.eot, 259);
    EXPECT_EQ(v.sot, 260);
    EXPECT_EQ(v.language_token("en"), 261);
    EXPECT_EQ(v.languages.size(), 99u);
    EXPECT_EQ(v.translate, 360);
    EXPECT_EQ(v.transcribe, 361);
    EXPECT_EQ(v.no_timestamps, 365);
    EXPECT_EQ(v.timestamp_begin, 366);
    EXPECT_EQ(m->encode_text(" the"), (std::vector<int32_t>{258}));
    const std::vector<int32_t> ids = m->encode_text("hello the world");
    EXPECT_EQ(m->decode_text(ids), "hello the world");
    std::vector<int32_t> with_specials = {v.sot, 258, v.eot};
    EXPECT_EQ(m->decode_text(with_specials), " the");
    EXPECT_EQ(m->token_text(261), "<|en|>");
    EXPECT_EQ(m->token_text(257), "he");
    EXPECT_FALSE(c.suppress_tokens.empty());
    EXPECT_FALSE(c.begin_suppress_tokens.empty());
    if (m->format() == "hf") {
      EXPECT_EQ(c.alignment_heads, kHfAlignmentHeads);
      EXPECT_EQ(c.suppress_tokens, (std::vector<int32_t>{1, 2, 3}));
      EXPECT_EQ(c.max_initial_timestamp_index, 25);
    } else {
      EXPECT_EQ(c.alignment_heads,
                (std::vector<std::pair<int, int>>{{1, 0}, {1, 1}, {1, 2}, {1, 3}}));
    }
  }
}

TEST_F(WhisperModelTest, EncoderMatchesReferenceInEveryFormat) {
  const std::vector<float> features = mel(100);
  const std::vector<double> want = reference_encoder(*tiny_, features, 100);
  std::vector<float> first;
  for (const auto& path : paths()) {
    SCOPED_TRACE(path.string());
    WhisperState state(WhisperModel::load(path), *backend_);
    state.encode(features, 100);
    ASSERT_EQ(state.encoder_output().size(), want.size());
    const double err = relative_l2(state.encoder_output(), want);
    std::printf("%s: encoder relative L2 %.3g\n", path.filename().c_str(), err);
    EXPECT_LE(err, 1e-4);
    const std::vector<float> got(state.encoder_output().begin(), state.encoder_output().end());
    if (first.empty())
      first = got;
    else
      EXPECT_EQ(got, first) << "formats differ";
  }
}

TEST_F(WhisperModelTest, DecoderMatchesReferenceAndGreedyTokensAgree) {
  const std::vector<float> features = mel(100);
  const std::vector<double> audio = reference_encoder(*tiny_, features, 100);
  std::vector<int32_t> first_tokens;
  for (const auto& path : paths()) {
    SCOPED_TRACE(path.string());
    const auto model = WhisperModel::load(path);
    WhisperState state(model, *backend_);
    state.encode(features, 100);
    std::vector<int32_t> tokens = prompt(*model);
    std::span<const float> logits = state.decode(tokens, 0);
    const double err = relative_l2(logits, reference_logits(*tiny_, audio, tokens));
    std::printf("%s: first-step logits relative L2 %.3g\n", path.filename().c_str(), err);
    EXPECT_LE(err, 1e-4);
    for (int step = 0; step < 10; ++step) {
      const int32_t next = argmax(logits);
      const std::vector<double> ref = reference_logits(*tiny_, audio, tokens);
      EXPECT_EQ(next, argmax(std::span<const double>(ref))) << "step " << step;
      tokens.push_back(next);
      logits = state.decode(std::span(tokens).last(1), tokens.size() - 1);
    }
    if (first_tokens.empty())
      first_tokens = tokens;
    else
      EXPECT_EQ(tokens, first_tokens) << "formats differ";
  }
}

// large-v3's layout (128 mel bins, 100 languages with <|yue|>) with distil-whisper's layer
// counts (a deeper encoder than decoder), in every format: the sizes come from the files, and
// encoder output and logits match the reference.
TEST(WhisperModelShapes, LargeV3MelsAndDistilLayersMatchReference) {
  TinyDims d;
  d.n_mels = 128;
  d.n_audio_layer = 4;  // distil-large-v3: 32 encoder layers, 2 decoder layers
  d.n_text_layer = 2;
  d.n_languages = 100;
  d.n_vocab = d.n_ranks + 2 + 100 + 6 + 1501;
  const TinyWhisper m = make_tiny_whisper(11, d);
  oxi::test::TempDir dir;
  write_hf_dir(m, dir / "hf");
  write_openai_pt(m, dir / "v3.pt");
  write_ggml(m, dir / "ggml-v3.bin");
  const std::vector<float> features =
      oxi::test::random_floats(static_cast<size_t>(d.n_mels) * 100, 5, -1.5f, 1.5f);
  const std::vector<double> audio = reference_encoder(m, features, 100);
  const auto backend = backends::make_cpu_backend(2);
  for (const auto& path : {dir / "hf", dir / "v3.pt", dir / "ggml-v3.bin"}) {
    SCOPED_TRACE(path.string());
    const auto model = WhisperModel::load(path);
    const WhisperConfig& c = model->config();
    EXPECT_EQ(c.n_mels, 128);
    EXPECT_EQ(c.n_audio_layer, 4);
    EXPECT_EQ(c.n_text_layer, 2);
    EXPECT_EQ(c.n_vocab, 1868);
    const WhisperVocab& v = model->vocab();
    EXPECT_EQ(v.languages.size(), 100u);
    ASSERT_TRUE(v.language_token("yue").has_value());
    EXPECT_EQ(*v.language_token("yue"), v.sot + 100);  // the last language, after <|su|>
    WhisperState state(model, *backend);
    state.encode(features, 100);
    EXPECT_LE(relative_l2(state.encoder_output(), audio), 1e-4);
    const std::vector<int32_t> tokens = {v.sot, *v.language_token("yue"), v.transcribe,
                                         v.no_timestamps};
    EXPECT_LE(relative_l2(state.decode(tokens, 0), reference_logits(m, audio, tokens)), 1e-4);
  }
}

// Token by token over the whole text context, which also crosses the self-attention cache's
// growth (it starts at 32 positions and doubles): every position must see the same earlier
// keys as one batched pass.
TEST_F(WhisperModelTest, BatchedPrefillMatchesTokenByToken) {
  const auto model = WhisperModel::load(paths()[0]);
  WhisperState batched(model, *backend_), stepwise(model, *backend_);
  const std::vector<float> features = mel(100);
  batched.encode(features, 100);
  stepwise.encode(features, 100);
  std::vector<int32_t> tokens = {260, 261, 361, 365, 258, 40, 41};
  while (tokens.size() < static_cast<size_t>(model->config().n_text_ctx))
    tokens.push_back(40 + static_cast<int32_t>(tokens.size() * 37 % 300));
  const std::span<const float> all = batched.decode(tokens, 0, /*all_logits=*/true);
  const std::vector<float> all_copy(all.begin(), all.end());
  ASSERT_EQ(all_copy.size(), tokens.size() * 1867u);
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::span<const float> one = stepwise.decode(std::span(tokens).subspan(t, 1), t);
    const std::vector<double> want(one.begin(), one.end());
    EXPECT_LE(relative_l2(std::span(all_copy).subspan(t * 1867, 1867), want), 1e-5) << t;
  }
  // Rewinding: decoding position 4 again gives the same logits.
  const std::vector<float> again_4 = [&] {
    auto l = stepwise.decode(std::span(tokens).subspan(4, 1), 4);
    return std::vector<float>(l.begin(), l.end());
  }();
  const std::vector<double> want(all_copy.begin() + 4 * 1867, all_copy.begin() + 5 * 1867);
  EXPECT_LE(relative_l2(again_4, want), 1e-5);
}

TEST_F(WhisperModelTest, ShorterWindowUsesTheFirstPositions) {
  const std::vector<float> features = mel(60);
  const std::vector<double> want = reference_encoder(*tiny_, features, 60);
  WhisperState state(WhisperModel::load(paths()[2]), *backend_);
  state.encode(features, 60);
  EXPECT_EQ(state.n_audio_positions(), 30u);
  EXPECT_LE(relative_l2(state.encoder_output(), want), 1e-4);
  const std::vector<int32_t> tokens = {260, 261, 361, 365};
  EXPECT_LE(relative_l2(state.decode(tokens, 0), reference_logits(*tiny_, want, tokens)), 1e-4);
}

// Windows of different lengths encoded in one batch (stacked rows through every matmul)
// give exactly what each gives alone, and match the reference.
TEST_F(WhisperModelTest, BatchedWindowsEncodeAsEachAlone) {
  const auto model = WhisperModel::load(paths()[0]);
  const int full = tiny_->dims.n_frames();
  const std::vector<int> lengths = {full, 60, 7, full};
  std::vector<std::vector<float>> mels, alone(lengths.size()), batched(lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i)
    mels.push_back(oxi::test::random_floats(static_cast<size_t>(tiny_->dims.n_mels) * lengths[i],
                                            static_cast<uint32_t>(40 + i), -1.5f, 1.5f));
  WhisperEncoder encoder(model);
  std::vector<WhisperEncoder::Window> windows;
  for (size_t i = 0; i < lengths.size(); ++i) {
    const WhisperEncoder::Window w{mels[i], static_cast<size_t>(lengths[i]), &alone[i]};
    encoder.encode(std::span(&w, 1), *backend_);
    windows.push_back({mels[i], static_cast<size_t>(lengths[i]), &batched[i]});
  }
  WhisperEncoder batch_encoder(model);
  batch_encoder.encode(windows, *backend_);
  for (size_t i = 0; i < lengths.size(); ++i) {
    ASSERT_EQ(batched[i].size(), WhisperEncoder::positions(lengths[i]) * tiny_->dims.n_state);
    // Bit-identical for windows long enough for the GEMM path on their own; a window of a
    // few positions alone takes the few-row path, which sums in another order.
    EXPECT_LE(relative_l2(batched[i], std::vector<double>(alone[i].begin(), alone[i].end())), 1e-5)
        << "window " << i;
    if (lengths[i] == full) {
      EXPECT_EQ(batched[i], alone[i]) << "window " << i;
    }
    EXPECT_LE(relative_l2(batched[i], reference_encoder(*tiny_, mels[i], lengths[i])), 1e-4);
  }
  // One bad window fails the call before anything is computed.
  std::vector<float> out;
  windows.push_back({mels[1], 59, &out});
  EXPECT_THROW(batch_encoder.encode(windows, *backend_), Error);
}

// Streams sharing an EncoderBatcher get their own windows' outputs, whether or not their
// passes were batched (two-thread callers) or run alone on pooled encoders (one-thread
// callers), and the same decoder logits as a private encoder.
TEST_F(WhisperModelTest, SharedEncoderServesConcurrentStreams) {
  const auto model = WhisperModel::load(paths()[0]);
  const auto batcher = std::make_shared<const EncoderBatcher>(model, 4);
  const int full = tiny_->dims.n_frames();
  constexpr int kStreams = 4, kPasses = 6;
  const std::vector<int32_t> tokens = prompt(*model);
  std::vector<std::vector<float>> want(kStreams * kPasses);
  std::vector<std::vector<float>> mels;
  for (int i = 0; i < kStreams * kPasses; ++i)
    mels.push_back(oxi::test::random_floats(static_cast<size_t>(tiny_->dims.n_mels) * full,
                                            static_cast<uint32_t>(500 + i), -1.5f, 1.5f));
  {
    WhisperState own(model, *backend_);
    for (int i = 0; i < kStreams * kPasses; ++i) {
      own.encode(mels[i], full);
      const std::span<const float> logits = own.decode(tokens, 0);
      want[i].assign(logits.begin(), logits.end());
    }
  }
  std::vector<std::vector<std::vector<float>>> got(kStreams);
  std::vector<std::thread> threads;
  for (int s = 0; s < kStreams; ++s) {
    threads.emplace_back([&, s] {
      const auto backend = backends::make_cpu_backend(s % 2 == 0 ? 2 : 1);
      WhisperState state(model, *backend);
      state.share_encoder(batcher);
      for (int p = 0; p < kPasses; ++p) {
        state.encode(mels[s * kPasses + p], full);
        const std::span<const float> logits = state.decode(tokens, 0);
        got[s].emplace_back(logits.begin(), logits.end());
        // As a live stream between passes (the pool then also drops all but one encoder's).
        if (p % 2 == 1) {
          state.release_working_memory();
          backend->release_scratch();
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int s = 0; s < kStreams; ++s)
    for (int p = 0; p < kPasses; ++p)
      EXPECT_EQ(got[s][p], want[s * kPasses + p]) << "stream " << s << " pass " << p;
  const EncoderBatcher::Stats stats = batcher->stats();
  EXPECT_EQ(stats.windows, static_cast<uint64_t>(kStreams * kPasses));
  EXPECT_LE(stats.passes, stats.windows);
  EXPECT_LE(stats.largest_batch, 4u);
  EXPECT_GE(stats.encoders, 2u);  // the batch encoder and at least one pooled one
  EXPECT_LE(stats.encoders, 1u + kStreams / 2);

  // Another model's state cannot use it.
  WhisperState other(WhisperModel::load(paths()[1]), *backend_);
  EXPECT_THROW(other.share_encoder(batcher), Error);
}

TEST_F(WhisperModelTest, AlignmentWeightsAreTheCrossAttentionOfTheAlignmentHeads) {
  const auto model = WhisperModel::load(paths()[0]);  // HF: heads (1, 0) and (1, 2)
  WhisperState state(model, *backend_);
  const std::vector<float> features = mel(100);
  state.encode(features, 100);
  state.set_record_alignment(true);
  const std::vector<int32_t> tokens = {260, 261, 361, 365, 258};
  state.decode(tokens, 0);
  ASSERT_EQ(state.alignment_weights().size(), tokens.size());
  std::vector<std::vector<std::vector<double>>> cross;
  reference_logits(*tiny_, reference_encoder(*tiny_, features, 100), tokens, &cross);
  const std::vector<float>& last = state.alignment_weights().back();
  ASSERT_EQ(last.size(), 2u * 50u);
  for (size_t ah = 0; ah < 2; ++ah) {
    const auto [layer, head] = kHfAlignmentHeads[ah];
    const std::vector<double>& want = cross[layer][head];
    EXPECT_LE(relative_l2(std::span(last).subspan(ah * 50, 50), want), 1e-4) << ah;
  }
}

TEST_F(WhisperModelTest, QuantizedDecoderStaysClose) {
  for (const auto dtype : {kernels::DType::Q8_0, kernels::DType::Q4_0}) {
    LoadOptions options;
    options.quant = dtype;
    const auto model = WhisperModel::load(paths()[1], options);
    // held in the kernels' preferred layout (repacked at load on AVX2)
    const kernels::DType layout = kernels::format_kernels().preferred_layout(dtype);
    EXPECT_EQ(model->weights().decoder_blocks[0].fc1.dtype, layout);
    EXPECT_EQ(model->weights().token_embedding.dtype, layout);
    EXPECT_EQ(model->weights().encoder_blocks[0].fc1.dtype, kernels::DType::F16);
    WhisperState state(model, *backend_);
    const std::vector<float> features = mel(100);
    state.encode(features, 100);
    const std::vector<int32_t> tokens = {260, 261, 361, 365};
    const double err =
        relative_l2(state.decode(tokens, 0),
                    reference_logits(*tiny_, reference_encoder(*tiny_, features, 100), tokens));
    std::printf("%s: logits relative L2 %.3g\n", std::string(kernels::name(dtype)).c_str(), err);
    // Random weights have no outliers to hide behind: q8_0 ~1e-2, q4_0 ~0.14 measured.
    EXPECT_LE(err, dtype == kernels::DType::Q8_0 ? 3e-2 : 0.25);
  }
}

// Quantized matrices are repacked at load where the kernels prefer another layout (q8_0, q4_0 and
// q5_0 into their r16 groups on AVX2; d 64 rows are 2 blocks, a short group), the token
// embedding too, whose lookups decode single rows of it. The logits equal the file layout's
// (OXI_REPACK=0) up to f32 summation order.
TEST_F(WhisperModelTest, RepackedMatricesMatchThePlainLayout) {
  for (const auto dtype : {kernels::DType::Q8_0, kernels::DType::Q4_0, kernels::DType::Q5_0}) {
    LoadOptions options;
    options.quant = dtype;
    const auto repacked = WhisperModel::load(paths()[1], options);
    ::setenv("OXI_REPACK", "0", 1);
    const auto plain = WhisperModel::load(paths()[1], options);
    ::unsetenv("OXI_REPACK");
    const kernels::DType layout = kernels::format_kernels().preferred_layout(dtype);
    const WhisperWeights& w = repacked->weights();
    for (const backends::WeightMatrix* m :
         {&w.decoder_blocks[0].attn.query, &w.decoder_blocks[1].cross_attn.value,
          &w.decoder_blocks[1].fc2, &w.token_embedding})
      EXPECT_EQ(m->dtype, layout) << kernels::name(dtype);
    EXPECT_EQ(plain->weights().decoder_blocks[0].fc1.dtype, dtype);
    // the --quant copies repacked where they are; the f16 encoder left in the file, not copied
    EXPECT_EQ(w.repacked.bytes, nullptr);
    EXPECT_EQ(w.encoder_blocks[0].fc1.dtype, kernels::DType::F16);
    const std::vector<float> features = mel(100);
    const std::vector<int32_t> tokens = {260, 261, 361, 365};
    std::vector<float> logits[2];
    for (int i = 0; i < 2; ++i) {
      WhisperState state(i == 0 ? repacked : plain, *backend_);
      state.encode(features, 100);
      const auto l = state.decode(tokens, 0);
      logits[i].assign(l.begin(), l.end());
    }
    const double diff = relative_l2(logits[0], logits[1]);
    std::printf("%s repacked against plain: logits relative L2 %.3g\n",
                std::string(kernels::name(dtype)).c_str(), diff);
    EXPECT_LE(diff, 1e-5) << kernels::name(dtype);
  }
}

// whisper.cpp's quantized files (every projection and the token embedding in q8_0 / q5_0 / q5_1 /
// q4_0 / q4_1, the encoder's too): repacked at load, equal to the file layout up to f32 summation
// order, and near the reference. The products' sums differ by f32 rounding only (1e-7 relative,
// tests/backends), but every product quantizes its input to 8 bits again, and a value on a
// rounding boundary may step by one q8 level: most files here agree within 4e-7, the q4_1 one by
// 3.7e-4 (encoder) and 6.4e-3 (logits) through such steps, with both layouts as near the reference.
// A wrong layout or activation would be off by the logits' whole size.
TEST_F(WhisperModelTest, QuantizedGgmlFilesRepackedMatchThePlainLayout) {
  for (const auto dtype : {kernels::DType::Q8_0, kernels::DType::Q5_0, kernels::DType::Q5_1,
                           kernels::DType::Q4_0, kernels::DType::Q4_1}) {
    const auto file = *dir_ / ("ggml-tiny-" + std::string(kernels::name(dtype)) + ".bin");
    write_ggml(*tiny_, file, dtype);
    const auto repacked = WhisperModel::load(file);
    ::setenv("OXI_REPACK", "0", 1);
    const auto plain = WhisperModel::load(file);
    ::unsetenv("OXI_REPACK");
    const kernels::DType layout = kernels::format_kernels().preferred_layout(dtype);
    EXPECT_EQ(repacked->weights().encoder_blocks[1].fc1.dtype, layout);
    EXPECT_EQ(repacked->weights().token_embedding.dtype, layout);
    EXPECT_EQ(plain->weights().encoder_blocks[1].fc1.dtype, dtype);
    const std::vector<float> features = mel(100);
    const std::vector<int32_t> tokens = {260, 261, 361, 365};
    std::vector<float> encoded[2], logits[2];
    for (int i = 0; i < 2; ++i) {
      WhisperState state(i == 0 ? repacked : plain, *backend_);
      state.encode(features, 100);
      encoded[i].assign(state.encoder_output().begin(), state.encoder_output().end());
      const auto l = state.decode(tokens, 0);
      logits[i].assign(l.begin(), l.end());
    }
    const double enc = relative_l2(encoded[0], encoded[1]);
    const double dec = relative_l2(logits[0], logits[1]);
    const double ref = relative_l2(
        logits[0], reference_logits(*tiny_, reference_encoder(*tiny_, features, 100), tokens));
    std::printf("%s ggml: repacked against plain: encoder %.3g, logits %.3g; reference %.3g\n",
                std::string(kernels::name(dtype)).c_str(), enc, dec, ref);
    const double plain_ref = relative_l2(
        logits[1], reference_logits(*tiny_, reference_encoder(*tiny_, features, 100), tokens));
    EXPECT_LE(enc, 2e-3) << kernels::name(dtype);
    EXPECT_LE(dec, 2e-2) << kernels::name(dtype);
    EXPECT_LE(ref, dtype == kernels::DType::Q4_0 ? 0.4 : 0.15) << kernels::name(dtype);
    EXPECT_NEAR(ref, plain_ref, 0.1 * plain_ref) << kernels::name(dtype);
  }
}

// An f16 KV cache (cross-attention keys/values and the self-attention cache) stays close to
// the reference through prefill, token-by-token steps and a rewind, and so do the alignment
// weights read from it.
TEST_F(WhisperModelTest, F16KvCacheStaysClose) {
  WhisperState state(WhisperModel::load(paths()[0]), *backend_);
  EXPECT_THROW(state.set_kv_cache(kernels::DType::Q8_0), Error);
  state.set_kv_cache(kernels::DType::F16);
  EXPECT_EQ(state.kv_cache(), kernels::DType::F16);
  const std::vector<float> features = mel(100);
  state.encode(features, 100);
  state.set_record_alignment(true);
  const std::vector<double> audio = reference_encoder(*tiny_, features, 100);
  const std::vector<int32_t> tokens = {260, 261, 361, 365, 258};
  std::vector<std::vector<std::vector<double>>> cross;
  const std::vector<double> want = reference_logits(*tiny_, audio, tokens, &cross);
  // Prefill of the first three, then one token at a time, then position 4 again (rewind).
  state.decode(std::span(tokens).first(3), 0);
  state.decode(std::span(tokens).subspan(3, 1), 3);
  state.decode(std::span(tokens).subspan(4, 1), 4);
  const std::span<const float> logits = state.decode(std::span(tokens).subspan(4, 1), 4);
  const double err = relative_l2(logits, want);
  std::printf("f16 KV cache: logits relative L2 %.3g\n", err);
  // Keys and values rounded to 11 significant bits: 1.2e-4 measured (f32: ~1e-6).
  EXPECT_LE(err, 1e-3);
  EXPECT_GT(err, 0.0);  // the cache really is f16
  const std::vector<float>& last = state.alignment_weights().back();
  for (size_t ah = 0; ah < 2; ++ah) {
    const auto [layer, head] = kHfAlignmentHeads[ah];
    EXPECT_LE(relative_l2(std::span(last).subspan(ah * 50, 50), cross[layer][head]), 1e-3) << ah;
  }
  // Back to f32: the caches are dropped (a new encode() is needed) and the result is exact.
  state.set_kv_cache(kernels::DType::F32);
  EXPECT_THROW(state.decode(tokens, 0), Error);
  state.encode(features, 100);
  EXPECT_LE(relative_l2(state.decode(tokens, 0), want), 1e-4);
}

TEST_F(WhisperModelTest, ReleasedWorkingMemoryComesBackWithTheSameResults) {
  for (const kernels::DType cache : {kernels::DType::F32, kernels::DType::F16}) {
    WhisperState state(WhisperModel::load(paths()[0]), *backend_);
    state.set_kv_cache(cache);
    state.set_record_alignment(true);
    const std::vector<float> features = mel(100);
    const std::vector<int32_t> tokens = {260, 261, 361, 365, 258};
    state.encode(features, 100);
    state.decode(std::span(tokens).first(3), 0);
    const std::span<const float> first = state.decode(std::span(tokens).subspan(3, 2), 3);
    const std::vector<float> want(first.begin(), first.end());
    const std::vector<std::vector<float>> want_alignment = state.alignment_weights();

    state.release_working_memory();
    backend_->release_scratch();
    EXPECT_TRUE(state.encoder_output().empty());
    EXPECT_EQ(state.n_audio_positions(), 0u);
    EXPECT_TRUE(state.alignment_weights().empty());
    EXPECT_THROW(state.decode(tokens, 0), Error);  // nothing to attend to until encode()
    EXPECT_EQ(state.kv_cache(), cache);            // the settings stay

    state.encode(features, 100);
    state.decode(std::span(tokens).first(3), 0);
    const std::span<const float> again = state.decode(std::span(tokens).subspan(3, 2), 3);
    EXPECT_EQ(std::vector<float>(again.begin(), again.end()), want) << kernels::name(cache);
    EXPECT_EQ(state.alignment_weights(), want_alignment) << kernels::name(cache);
  }
}

TEST_F(WhisperModelTest, MisuseThrows) {
  WhisperState state(WhisperModel::load(paths()[0]), *backend_);
  const std::vector<int32_t> tokens = {260};
  EXPECT_THROW(state.decode(tokens, 0), Error);  // before encode()
  const std::vector<float> features = mel(100);
  EXPECT_THROW(state.encode(std::span(features).first(100), 100), Error);
  EXPECT_THROW(state.encode(features, 101), Error);
  state.encode(features, 100);
  EXPECT_THROW(state.decode(tokens, 64), Error);
  const std::vector<int32_t> bad = {1867};
  EXPECT_THROW(state.decode(bad, 0), Error);
  EXPECT_THROW(WhisperModel::load(*dir_ / "nothing-here.bin"), Error);
}

TEST_F(WhisperModelTest, OpenAiCheckpointWithoutTokenizerFilesSaysWhatIsMissing) {
  oxi::test::TempDir lonely;
  write_openai_pt(*tiny_, lonely / "tiny.pt");
  std::filesystem::remove(lonely / "gpt2.tiktoken");
  try {
    WhisperModel::load(lonely / "tiny.pt");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gpt2.tiktoken"), std::string::npos) << e.what();
  }
}

// The bench shapes (write_whisper_bench_model) and the placeholder-filled multilingual
// vocabulary, the latter on a d-64 model so that the check stays cheap.
TEST(WhisperBenchDims, RealShapesWithThirtySecondWindow) {
  const TinyDims tiny = whisper_bench_dims("tiny"), base = whisper_bench_dims("base");
  EXPECT_EQ(tiny.n_state, 384);
  EXPECT_EQ(tiny.n_head, 6);
  EXPECT_EQ(tiny.n_audio_layer, 4);
  EXPECT_EQ(tiny.n_text_layer, 4);
  EXPECT_EQ(tiny.n_mlp(), 1536);
  EXPECT_EQ(base.n_state, 512);
  EXPECT_EQ(base.n_head, 8);
  EXPECT_EQ(base.n_audio_layer, 6);
  EXPECT_EQ(base.n_text_layer, 6);
  EXPECT_EQ(base.n_mlp(), 2048);
  for (const TinyDims& d : {tiny, base}) {
    EXPECT_EQ(d.n_mels, 80);
    EXPECT_EQ(d.n_audio_ctx, 1500);
    EXPECT_EQ(d.n_frames(), 3000);
    EXPECT_EQ(d.n_samples(), 480000);
    EXPECT_EQ(d.n_text_ctx, 448);
    EXPECT_EQ(d.n_ranks, 50257);
    EXPECT_EQ(d.n_vocab, 51865);
  }
  EXPECT_THROW(whisper_bench_dims("large"), std::invalid_argument);
}

TEST(WhisperBenchDims, PlaceholderVocabularyLoadsInEveryFormat) {
  TinyDims d;
  d.n_ranks = 50257;
  d.n_vocab = 51865;
  const TinyWhisper m = make_tiny_whisper(3, d);
  oxi::test::TempDir dir;
  write_hf_dir(m, dir / "hf");
  std::filesystem::create_directories(dir / "openai");
  write_openai_pt(m, dir / "openai" / "model.pt");
  write_ggml(m, dir / "ggml.bin");
  for (const auto& path : {dir / "hf", dir / "openai" / "model.pt", dir / "ggml.bin"}) {
    SCOPED_TRACE(path.string());
    const auto model = WhisperModel::load(path);
    EXPECT_EQ(model->config().n_vocab, 51865);
    EXPECT_TRUE(model->config().multilingual);
    const WhisperVocab& v = model->vocab();
    EXPECT_EQ(v.eot, 50257);
    EXPECT_EQ(v.sot, 50258);
    EXPECT_EQ(v.language_token("en"), 50259);
    EXPECT_EQ(v.transcribe, 50359);
    EXPECT_EQ(v.no_timestamps, 50363);
    EXPECT_EQ(v.timestamp_begin, 50364);
    EXPECT_EQ(model->token_text(300), " w300");
    EXPECT_EQ(model->token_text(50256), " w50256");
    EXPECT_EQ(model->encode_text(" the"), (std::vector<int32_t>{258}));
  }
}

TEST(WhisperModelRealFiles, ForTestsGgmlFileNamesTheMissingTensor) {
  OXI_REQUIRE_SHARED_DATA(data);
  for (const char* name : {"for-tests-ggml-tiny.bin", "for-tests-ggml-tiny.en.bin"}) {
    const auto path = data / "whisper" / name;
    LoadOptions options;
    options.assets_dir = data / "whisper";
    try {
      WhisperModel::load(path, options);
      ADD_FAILURE() << name << ": no error";
    } catch (const Error& e) {
      const std::string what = e.what();
      std::printf("%s\n", what.c_str());
      EXPECT_NE(what.find(name), std::string::npos) << what;
      EXPECT_NE(what.find("missing tensor 'encoder.conv1.weight'"), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace oxi::whisper::test
