// write_whisper_bench_model DIR tiny|base [--seed N]: a Hugging Face Whisper directory with
// random f16 weights of a real model's shape (tests/whisper_model/tiny_whisper.h,
// whisper_bench_dims: 30 s window, 448 text positions, the 51865-token multilingual layout
// with placeholder text tokens), for `oxinfer bench whisper` where no checkpoint can be
// downloaded. Speed does not depend on the values; the transcripts are garbage.
#include <cstdio>
#include <exception>
#include <string>

#include "tests/whisper_model/tiny_whisper.h"

int main(int argc, char** argv) {
  const auto usage = [] {
    std::fprintf(stderr, "usage: write_whisper_bench_model DIR tiny|base [--seed N]\n");
    return 2;
  };
  if (argc != 3 && argc != 5) return usage();
  uint32_t seed = 1;
  if (argc == 5) {
    if (std::string(argv[3]) != "--seed") return usage();
    try {
      seed = static_cast<uint32_t>(std::stoul(argv[4]));
    } catch (const std::exception&) {
      return usage();
    }
  }
  try {
    namespace wt = oxi::whisper::test;
    const wt::TinyDims dims = wt::whisper_bench_dims(argv[2]);
    std::fprintf(stderr, "generating %s (d_model %d, %d + %d layers, %d heads, vocab %d)\n",
                 argv[2], dims.n_state, dims.n_audio_layer, dims.n_text_layer, dims.n_head,
                 dims.n_vocab);
    wt::write_hf_dir(wt::make_tiny_whisper(seed, dims), argv[1]);
    std::fprintf(stderr, "wrote %s\n", argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "write_whisper_bench_model: %s\n", e.what());
    return 1;
  }
  return 0;
}
