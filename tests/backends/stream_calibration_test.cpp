// StreamCalibration (backends/cpu/stream_calibration.h): alternating modes per matrix, the
// decision from the matrices timed as often in both, and nothing asked once decided. And the
// backend's products give the same results in either stream mode.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/stream_calibration.h"
#include "kernels/formats/prefetch.h"
#include "kernels/formats/quant.h"
#include "tests/common/test_data.h"

namespace oxi::backends {
namespace {

// The matrices of a model: their addresses are the calibration's keys (the same every token).
std::vector<char> g_weights(16);

// Tokens of a model with `matrices` matrices, each product taking `lines_s` or `pages_s`
// seconds in the two modes; returns the decision.
std::optional<bool> run_tokens(StreamCalibration& c, int tokens, int matrices, double lines_s,
                               double pages_s) {
  std::vector<char>& weights = g_weights;
  for (int t = 0; t < tokens; ++t) {
    for (int m = 0; m < matrices; ++m) {
      const std::optional<bool> mode = c.mode_for(&weights[m]);
      if (!mode) continue;
      // Whole tokens in one mode, in turn.
      EXPECT_EQ(*mode, t % 2 == 0) << "token " << t << " matrix " << m;
      // A slower matrix (m) does not bias the decision: both modes see every one.
      c.record(&weights[m], *mode, (m + 1) * (*mode ? lines_s : pages_s));
    }
  }
  return c.decision();
}

TEST(StreamCalibration, PicksTheFasterModeAfterItsRounds) {
  constexpr int kRounds = StreamCalibration::kRoundsPerMode;
  {
    StreamCalibration c;
    EXPECT_FALSE(run_tokens(c, 2 * kRounds, 5, 1.0, 1.1).has_value());  // not yet
    EXPECT_EQ(run_tokens(c, 1, 5, 1.0, 1.1), std::optional<bool>(true));
    EXPECT_FALSE(c.mode_for(&c).has_value());  // decided: nothing more to time
  }
  {
    StreamCalibration c;
    EXPECT_EQ(run_tokens(c, 2 * kRounds + 1, 7, 1.0, 0.9), std::optional<bool>(false));
  }
}

// A matrix seen once (not in both modes) does not count: a huge time there changes nothing.
TEST(StreamCalibration, OnlyMatricesTimedInBothModesCount) {
  StreamCalibration c;
  int once = 0;
  ASSERT_EQ(c.mode_for(&once), std::optional<bool>(true));
  c.record(&once, true, 1e6);  // lines look terrible here
  EXPECT_EQ(run_tokens(c, 2 * StreamCalibration::kRoundsPerMode + 1, 3, 1.0, 2.0),
            std::optional<bool>(true));
}

// The products' results do not depend on the stream mode (it only changes prefetch requests).
TEST(StreamCalibration, ProductsAreTheSameInBothModes) {
  auto backend = make_cpu_backend(2);
  for (kernels::DType type : {kernels::DType::Q4_0, kernels::DType::Q8_0, kernels::DType::Q4_K}) {
    const kernels::DType layout = kernels::format_kernels().preferred_layout(type);
    const size_t rows = 64, cols = 2048;
    const std::vector<float> dense = test::random_normal(rows * cols, 11);
    std::vector<uint8_t> q(rows * kernels::row_bytes(layout, cols));
    for (size_t r = 0; r < rows; ++r)
      kernels::quantize_row(layout, dense.data() + r * cols,
                            q.data() + r * kernels::row_bytes(layout, cols), cols);
    WeightMatrix w;
    w.dtype = layout;
    w.rows = rows;
    w.cols = cols;
    w.row_bytes = kernels::row_bytes(layout, cols);
    w.data = q.data();
    const std::vector<float> x = test::random_normal(cols, 12);
    std::vector<float> y[2] = {std::vector<float>(rows), std::vector<float>(rows)};
    const std::optional<kernels::StreamLayout> stream =
        kernels::format_kernels().stream_layout(layout);
    const bool before = stream ? kernels::stream_lines(*stream) : true;
    for (int lines = 0; lines < 2; ++lines) {
      if (stream) kernels::set_stream_lines(*stream, lines == 1);
      // Once the process's mode is settled the mode set here holds; while a calibration runs
      // the backend sets it per call, and a matrix's two products run one in each mode then.
      // Either way the two calls streamed differently.
      backend->matmul(w, x, 1, y[lines], nullptr);
    }
    if (stream) kernels::set_stream_lines(*stream, before);
    EXPECT_EQ(std::memcmp(y[0].data(), y[1].data(), rows * sizeof(float)), 0)
        << kernels::name(layout);
  }
}

// Each layout is calibrated on its own products: q4_0_r16 products settle q4_0_r16's mode and
// leave q4_K_r8's calibrating (on one VM the two layouts' faster modes were opposite at the
// same time: kernels/formats/prefetch.h). The mode is process-wide, so the test takes the
// layouts as it finds them: it needs both still calibrating (no OXI_STREAM_LINES, no earlier
// test that settled them) and the avx512 kernels, which have the choice.
TEST(StreamCalibration, EachLayoutSettlesOnItsOwnProducts) {
  using kernels::DType;
  if (!kernels::format_kernels().stream_layout(DType::Q4_0_R16))
    GTEST_SKIP() << "the selected kernels have no stream choice";
  if (std::string_view(matvec_streaming(DType::Q4_0_R16).how) != "calibrating" ||
      std::string_view(matvec_streaming(DType::Q4_K_R8).how) != "calibrating")
    GTEST_SKIP() << "a layout's mode is settled already";
  auto backend = make_cpu_backend(2);
  const size_t rows = 32, cols = 512;
  const std::vector<float> dense = test::random_normal(rows * cols, 13);
  const size_t row_bytes = kernels::row_bytes(DType::Q4_0_R16, cols);
  std::vector<uint8_t> q(rows * row_bytes);
  for (size_t r = 0; r < rows; ++r)
    kernels::quantize_row(DType::Q4_0_R16, dense.data() + r * cols, q.data() + r * row_bytes, cols);
  WeightMatrix w;
  w.dtype = DType::Q4_0_R16;
  w.rows = rows;
  w.cols = cols;
  w.row_bytes = row_bytes;
  w.data = q.data();
  const std::vector<float> x = test::random_normal(cols, 14);
  std::vector<float> y(rows);
  // kRoundsPerMode in each mode, then the encounter that decides
  for (int i = 0; i < 2 * StreamCalibration::kRoundsPerMode + 1; ++i) {
    EXPECT_STREQ(matvec_streaming(DType::Q4_0_R16).how, "calibrating") << i;
    backend->matmul(w, x, 1, y, nullptr);
  }
  EXPECT_STREQ(matvec_streaming(DType::Q4_0_R16).how, "calibrated");
  EXPECT_STREQ(matvec_streaming(DType::Q4_K_R8).how, "calibrating");
  EXPECT_STREQ(matvec_streaming(DType::Q6_K).how, "fixed");
}

}  // namespace
}  // namespace oxi::backends
