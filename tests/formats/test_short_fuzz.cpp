// A deterministic "short fuzz run" in the default suite: valid files from our writers, then
// thousands of mutations (every truncation of small files, byte flips, length-field bumps).
// Each must load or throw oxi::Error; anything else (a crash, another exception) fails.
#include <gtest/gtest.h>

#include <random>

#include "lib/core/error.h"
#include "lib/formats/gguf.h"
#include "lib/formats/safetensors.h"
#include "lib/formats/torch_zip.h"
#include "lib/formats/zip.h"
#include "tests/common/byte_edits.h"
#include "tests/formats/formats_test_util.h"
#include "tests/formats/fuzz/fuzz_targets.h"

namespace oxi {
namespace {

using kernels::DType;

std::vector<std::byte> small_gguf() {
  gguf::Writer w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.block_count", 1);
  w.set_string_array("tokenizer.ggml.tokens", {"<s>", "a", "bc"});
  w.set_f32_array("tokenizer.ggml.scores", {0, -1, -2});
  w.add_tensor("a", DType::F32, {2, 2}, test::pattern_bytes(16, 1));
  w.add_tensor("b", DType::Q4_0, {1, 32}, test::pattern_bytes(18, 2));
  return w.to_bytes();
}

std::vector<std::byte> small_safetensors() {
  safetensors::Writer w;
  w.set_metadata("format", "pt");
  w.add_tensor("a", DType::F16, {2, 2}, test::pattern_bytes(8, 1));
  w.add_raw_tensor("m", "U8", {3}, test::pattern_bytes(3, 2));
  return w.to_bytes();
}

std::vector<std::byte> small_torch() {
  torch::Writer w;
  w.add_tensor("a", DType::F32, {2, 2}, test::pattern_bytes(16, 1));
  w.add_tensor("b", DType::F16, {3}, test::pattern_bytes(6, 2));
  w.nest_under("model_state_dict");
  w.add_int_dict("dims", {{"n", 3}});
  return w.to_bytes();
}

using Target = int (*)(const uint8_t*, size_t);

// Runs `target` on one input; fuzz targets swallow oxi::Error themselves, so any exception
// that escapes is a failure.
void run(Target target, const std::vector<std::byte>& input) {
  target(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

void mutate_and_run(Target target, const std::vector<std::byte>& seed, uint32_t rng_seed,
                    int rounds) {
  ASSERT_NO_THROW(run(target, seed));
  // Every prefix.
  for (size_t n = 0; n < seed.size(); ++n) {
    ASSERT_NO_THROW(run(target, std::vector<std::byte>(seed.begin(), seed.begin() + n))) << n;
  }
  std::mt19937 rng(rng_seed);
  for (int i = 0; i < rounds; ++i) {
    const std::vector<std::byte> m = test::edit_bytes(seed, rng);
    ASSERT_NO_THROW(run(target, m)) << "round " << i;
  }
}

TEST(ShortFuzz, Gguf) {
  mutate_and_run(fuzz::gguf_target, small_gguf(), 1, 4000);
}
TEST(ShortFuzz, Safetensors) {
  mutate_and_run(fuzz::safetensors_target, small_safetensors(), 2, 4000);
}
TEST(ShortFuzz, TorchZip) {
  mutate_and_run(fuzz::torch_target, small_torch(), 3, 4000);
}
TEST(ShortFuzz, Zip) {
  zip::Writer w(true);
  w.add("a", test::pattern_bytes(40, 1));
  w.add("b/c", test::pattern_bytes(5, 2));
  mutate_and_run(fuzz::zip_target, w.finish(), 4, 3000);
}

}  // namespace
}  // namespace oxi
