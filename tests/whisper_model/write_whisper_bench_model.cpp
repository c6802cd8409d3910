// write_whisper_bench_model OUT tiny|base [--seed N] [--ggml f16|q8_0|q5_0|q5_1|q4_0|q4_1]: random
// weights of a real Whisper model's shape (tests/whisper_model/tiny_whisper.h, whisper_bench_dims:
// 30 s window, 448 text positions, the 51865-token multilingual layout with placeholder text
// tokens), for `oxinfer bench whisper` where no checkpoint can be downloaded: a Hugging Face
// directory (f16), or with --ggml a whisper.cpp .bin whose matrices are in that format (as its
// quantize tool writes them). Speed does not depend on the values; the transcripts are garbage.
#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include "kernels/formats/dtype.h"
#include "tests/whisper_model/tiny_whisper.h"

int main(int argc, char** argv) {
  const auto usage = [] {
    std::fprintf(stderr,
                 "usage: write_whisper_bench_model OUT tiny|base [--seed N] "
                 "[--ggml f16|q8_0|q5_0|q5_1|q4_0|q4_1]\n");
    return 2;
  };
  if (argc < 3 || argc % 2 == 0) return usage();
  uint32_t seed = 1;
  bool ggml = false;
  std::optional<oxi::kernels::DType> quant;
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string option = argv[i], value = argv[i + 1];
    if (option == "--seed") {
      try {
        seed = static_cast<uint32_t>(std::stoul(value));
      } catch (const std::exception&) {
        return usage();
      }
    } else if (option == "--ggml") {
      ggml = true;
      if (value == "f16") continue;
      const auto t = oxi::kernels::parse_dtype(value);
      if (!t) return usage();
      quant = *t;
    } else {
      return usage();
    }
  }
  try {
    namespace wt = oxi::whisper::test;
    const wt::TinyDims dims = wt::whisper_bench_dims(argv[2]);
    std::fprintf(stderr, "generating %s (d_model %d, %d + %d layers, %d heads, vocab %d)\n",
                 argv[2], dims.n_state, dims.n_audio_layer, dims.n_text_layer, dims.n_head,
                 dims.n_vocab);
    const wt::TinyWhisper m = wt::make_tiny_whisper(seed, dims);
    if (ggml)
      wt::write_ggml(m, argv[1], quant);
    else
      wt::write_hf_dir(m, argv[1]);
    std::fprintf(stderr, "wrote %s\n", argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "write_whisper_bench_model: %s\n", e.what());
    return 1;
  }
  return 0;
}
