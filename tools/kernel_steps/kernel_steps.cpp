// kernel_steps FORMAT ROWS COLS REPS [TOKENS]: multiplies a random ROWS x COLS matrix of FORMAT
// (a GGUF type name) REPS times, by the selected instruction set's matvec (TOKENS = 1) or gemm_q
// (TOKENS > 1), or with TOKENS = 0 quantizes ROWS activation rows of COLS values for FORMAT
// (quantize_activation) REPS times, and prints a checksum. Made to be run twice under an
// instruction-counting emulator, REPS = 0 and REPS = R: the difference over R x ROWS x COLS / block
// x TOKENS is the instructions a block and token, a speed figure for instruction sets this machine
// cannot run (docs/benchmarks.md: NEON under qemu-user with scripts/qemu_insn_count.c). OXI_ISA
// picks the set as everywhere.
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/formats/quant.h"

int main(int argc, char** argv) {
  using namespace oxi::kernels;
  if (argc < 5) {
    std::fprintf(stderr, "usage: kernel_steps FORMAT ROWS COLS REPS [TOKENS]\n");
    return 2;
  }
  std::optional<DType> type = parse_dtype(argv[1]);
  for (uint32_t id = 0; !type && id < 128; ++id) {  // the repacked layouts' names, not GGUF's
    if (name(static_cast<DType>(id)) == argv[1]) type = static_cast<DType>(id);
  }
  const size_t rows = std::strtoul(argv[2], nullptr, 10), n = std::strtoul(argv[3], nullptr, 10);
  const long reps = std::strtol(argv[4], nullptr, 10);
  const size_t tokens = argc > 5 ? std::strtoul(argv[5], nullptr, 10) : 1;
  // The quantizer needs no weights, so it takes the repacked layouts' names too (q4_0_r16, ...).
  if (!type || (tokens > 0 && !weight_supported(*type)) || rows == 0 ||
      n % info(*type).block_elems != 0) {
    std::fprintf(stderr, "kernel_steps: bad format or shape\n");
    return 2;
  }
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const size_t ab = align_activation_bytes(activation_bytes(*type, n));
  double checksum = 0;
  if (tokens == 0) {
    std::vector<float> xs(rows * n);
    for (float& v : xs) v = normal(rng);
    std::vector<uint8_t> out_buffer(rows * ab + kActivationAlign);
    uint8_t* out = align_activation_start(out_buffer.data());
    for (long i = 0; i < reps; ++i) {
      for (size_t r = 0; r < rows; ++r) quantize_activation(*type, &xs[r * n], out + r * ab, n);
      checksum += out[i % (rows * ab)];
    }
    std::printf("%s activations on %s: checksum %.6g\n", argv[1],
                std::string(isa_name(selected_isa())).c_str(), checksum);
    return 0;
  }
  const size_t row_bytes = oxi::kernels::row_bytes(*type, n);
  std::vector<uint8_t> w(rows * row_bytes);
  std::vector<float> x(n);
  for (size_t r = 0; r < rows; ++r) {
    for (float& v : x) v = normal(rng);
    quantize_row(*type, x.data(), w.data() + r * row_bytes, n);
  }
  std::vector<uint8_t> act_buffer(tokens * ab + kActivationAlign);
  uint8_t* acts = align_activation_start(act_buffer.data());
  for (size_t t = 0; t < tokens; ++t) {
    for (float& v : x) v = normal(rng);
    quantize_activation(*type, x.data(), acts + t * ab, n);
  }
  std::vector<float> y(tokens * rows);
  for (long i = 0; i < reps; ++i) {
    if (tokens == 1)
      matvec(*type, w.data(), row_bytes, rows, n, acts, y.data());
    else
      gemm_q(*type, w.data(), row_bytes, rows, n, acts, ab, tokens, y.data(), rows);
    checksum += y[i % y.size()];
  }
  std::printf("%s on %s: checksum %.6g\n", argv[1], std::string(isa_name(selected_isa())).c_str(),
              checksum);
  return 0;
}
