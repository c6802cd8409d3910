// Scalar encoders of the ternary formats (tq1_0, tq2_0), ggml's rule: the block's largest
// magnitude is the scale d, and each weight becomes the nearest of -d, 0, d (round half away
// from zero). Checkpoints trained ternary (BitNet b1.58, TriLM) come back exactly, up to the f16
// rounding of d; other weights lose most of their detail, as in ggml.
#include <algorithm>
#include <cmath>

#include "kernels/formats/blocks.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/quantize_k.h"

namespace oxi::kernels {
namespace {

// The block's scale (its largest magnitude) and its inverse.
float block_scale(const float* x, float& id) noexcept {
  float amax = 0;
  for (size_t j = 0; j < QK_K; ++j) amax = std::max(amax, std::fabs(x[j]));
  id = inverse_scale(amax);
  return amax;
}

// The trit of x: 0, 1 or 2 for -d, 0, d.
int trit(float x, float id) noexcept {
  return static_cast<int>(std::lround(x * id)) + 1;
}

// Five trits (the first most significant) as a tq1_0 byte: the base-3 number as a fraction of
// 243, rounded up to 256ths so that tq1_trit reads the trits back.
uint8_t pack5(const int (&t)[5]) noexcept {
  int v = 0;
  for (int k : t) v = 3 * v + k;
  return static_cast<uint8_t>((v * 256 + 242) / 243);
}

}  // namespace

void quantize_row_tq1_0(const float* x, void* dst, size_t n) noexcept {
  auto* b = static_cast<BlockTQ1_0*>(dst);
  for (size_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    float id = 0;
    b[i].d = f32_to_f16(block_scale(x, id));
    // Bytes of `count` that hold `trits` trits each, starting at element `first`; a byte with
    // four trits has a zero fifth.
    auto pack = [&](uint8_t* bytes, size_t count, int trits, size_t first) {
      for (size_t m = 0; m < count; ++m) {
        int t[5] = {};
        for (int k = 0; k < trits; ++k) t[k] = trit(x[first + count * k + m], id);
        bytes[m] = pack5(t);
      }
    };
    pack(b[i].qs, 32, 5, 0);
    pack(b[i].qs + 32, 16, 5, 160);
    pack(b[i].qh, 4, 4, 240);
  }
}

void quantize_row_tq2_0(const float* x, void* dst, size_t n) noexcept {
  auto* b = static_cast<BlockTQ2_0*>(dst);
  for (size_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    float id = 0;
    b[i].d = f32_to_f16(block_scale(x, id));
    for (size_t h = 0; h < 2; ++h) {
      for (size_t m = 0; m < 32; ++m) {
        int byte = 0;
        for (int k = 0; k < 4; ++k) byte |= trit(x[128 * h + 32 * k + m], id) << (2 * k);
        b[i].qs[32 * h + m] = static_cast<uint8_t>(byte);
      }
    }
  }
}

}  // namespace oxi::kernels
