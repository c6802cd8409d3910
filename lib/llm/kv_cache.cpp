#include "lib/llm/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <utility>

#include "backends/device.h"
#include "kernels/formats/quant.h"
#include "lib/core/error.h"

namespace oxi::llm {

KvCache::KvCache(size_t n_layer, size_t n_ctx, size_t n_kv_heads, size_t head_dim,
                 kernels::DType type)
    : n_layer_(n_layer),
      n_ctx_(n_ctx),
      n_kv_heads_(n_kv_heads),
      head_dim_(head_dim),
      f16_(type == kernels::DType::F16) {
  if (type != kernels::DType::F16 && type != kernels::DType::F32)
    throw Error("llm kv cache", std::string("elements are f16 or f32, not ") +
                                    std::string(kernels::info(type).name));
  const size_t kv_dim = n_kv_heads * head_dim;
  if (n_kv_heads != 0 && kv_dim / n_kv_heads != head_dim)
    throw Error("llm kv cache", "kv heads of that size overflow");
  // A context the memory cannot hold (10^12 positions) is an error naming the size, not a
  // bad_alloc, nor a product that wraps around.
  const size_t bytes_per_element = f16_ ? 2 : 4;
  const size_t per_position = 2 * n_layer * kv_dim * bytes_per_element;
  const size_t limit = std::numeric_limits<size_t>::max() / 4;
  if (per_position == 0 || n_ctx > limit / per_position)
    throw Error("llm kv cache",
                "a context of " + std::to_string(n_ctx) + " positions is too large");
  // Larger than the machine's memory: refused before the allocation (whose zero-filling would
  // call the OOM killer, or which a sanitizer's allocator reports as a crash).
  const uint64_t bytes = uint64_t{n_ctx} * per_position;
  if (const uint64_t total = backends::detect_memory().total_bytes; total > 0 && bytes > total)
    throw Error("llm kv cache", "a context of " + std::to_string(n_ctx) + " positions needs " +
                                    std::to_string(bytes >> 20) + " MiB, more than the " +
                                    std::to_string(total >> 20) +
                                    " MiB of memory here (use a smaller context size)");
  try {
    if (f16_) {
      keys16_.resize(n_layer * layer_elements());
      values16_.resize(n_layer * layer_elements());
    } else {
      keys_.resize(n_layer * layer_elements());
      values_.resize(n_layer * layer_elements());
    }
  } catch (const std::bad_alloc&) {
    throw Error("llm kv cache", "cannot allocate " + std::to_string(bytes >> 20) +
                                    " MiB for a context of " + std::to_string(n_ctx) +
                                    " positions (use a smaller context size)");
  }
}

void KvCache::check_rows(size_t layer, size_t pos0, size_t n) const {
  if (layer >= n_layer_ || pos0 > n_ctx_ || n > n_ctx_ - pos0)
    throw Error("llm kv cache", "rows outside the cache");
}

const uint8_t* KvCache::tensor_bytes(bool keys) const {
  if (f16_) return reinterpret_cast<const uint8_t*>((keys ? keys16_ : values16_).data());
  return reinterpret_cast<const uint8_t*>((keys ? keys_ : values_).data());
}
uint8_t* KvCache::tensor_bytes(bool keys) {
  return const_cast<uint8_t*>(std::as_const(*this).tensor_bytes(keys));
}

void KvCache::store(size_t layer, size_t pos0, std::span<const float> keys,
                    std::span<const float> values) {
  const size_t kv_dim = this->kv_dim();
  if (kv_dim == 0 || keys.size() != values.size() || keys.size() % kv_dim != 0)
    throw Error("llm kv cache", "rows outside the cache");
  const size_t n = keys.size() / kv_dim;
  check_rows(layer, pos0, n);
  for_each_row(layer, pos0, n, [&](size_t to, size_t from) {
    if (f16_) {
      kernels::quantize_row(kernels::DType::F16, keys.data() + from, keys16_.data() + to,
                            head_dim_);
      kernels::quantize_row(kernels::DType::F16, values.data() + from, values16_.data() + to,
                            head_dim_);
    } else {
      std::copy_n(keys.data() + from, head_dim_, keys_.data() + to);
      std::copy_n(values.data() + from, head_dim_, values_.data() + to);
    }
  });
}

void KvCache::attend_rows(size_t layer, size_t n_kv, backends::AttentionArgs& args) const {
  check_rows(layer, 0, n_kv);
  // From head 0's first row to the last head's row n_kv - 1.
  const size_t first = row_offset(layer, 0, 0);
  const size_t count =
      n_kv == 0 ? 0 : row_offset(layer, n_kv_heads_ - 1, n_kv - 1) + head_dim_ - first;
  if (f16_) {
    args.k_f16 = std::span(keys16_).subspan(first, count);
    args.v_f16 = std::span(values16_).subspan(first, count);
  } else {
    args.k = std::span(keys_).subspan(first, count);
    args.v = std::span(values_).subspan(first, count);
  }
  args.kv_stride = head_dim_;
  args.kv_head_stride = n_ctx_ * head_dim_;
}

void KvCache::check_state_rows(size_t layer, size_t n, size_t keys_bytes,
                               size_t values_bytes) const {
  check_rows(layer, 0, n);
  if (keys_bytes != rows_bytes(n) || values_bytes != rows_bytes(n))
    throw Error("llm kv cache", "a buffer of the wrong size for the rows");
}

void KvCache::copy_rows_out(size_t layer, size_t n, std::span<uint8_t> keys,
                            std::span<uint8_t> values) const {
  check_state_rows(layer, n, keys.size(), values.size());
  const size_t eb = element_bytes();
  for (const bool k : {true, false}) {
    const uint8_t* from = tensor_bytes(k);
    uint8_t* to = (k ? keys : values).data();
    for_each_row(layer, 0, n, [&](size_t cache, size_t rows) {
      std::memcpy(to + rows * eb, from + cache * eb, head_dim_ * eb);
    });
  }
}

void KvCache::copy_rows_in(size_t layer, size_t n, std::span<const uint8_t> keys,
                           std::span<const uint8_t> values) {
  check_state_rows(layer, n, keys.size(), values.size());
  const size_t eb = element_bytes();
  for (const bool k : {true, false}) {
    const uint8_t* from = (k ? keys : values).data();
    uint8_t* to = tensor_bytes(k);
    for_each_row(layer, 0, n, [&](size_t cache, size_t rows) {
      std::memcpy(to + cache * eb, from + rows * eb, head_dim_ * eb);
    });
  }
}

kernels::DType kv_cache_type(const std::string& text) {
  if (text == "f16") return kernels::DType::F16;
  if (text == "f32") return kernels::DType::F32;
  throw Error("llm kv cache", "cache type '" + text + "': expected f16 or f32");
}

}  // namespace oxi::llm
