#include "lib/llm/kv_cache.h"

#include <algorithm>
#include <limits>
#include <new>
#include <string>
#include <type_traits>

#include "backends/device.h"
#include "kernels/formats/quant.h"
#include "lib/core/error.h"

namespace oxi::llm {

KvCache::KvCache(size_t n_layer, size_t n_ctx, size_t kv_dim, kernels::DType type)
    : n_layer_(n_layer), n_ctx_(n_ctx), kv_dim_(kv_dim), f16_(type == kernels::DType::F16) {
  if (type != kernels::DType::F16 && type != kernels::DType::F32)
    throw Error("llm kv cache", std::string("elements are f16 or f32, not ") +
                                    std::string(kernels::info(type).name));
  // A context the memory cannot hold (--ctx 10^12) is an error naming the size, not a
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
                                    " MiB of memory here (use a smaller --ctx)");
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
                                    " positions (use a smaller --ctx)");
  }
}

void KvCache::store(size_t layer, size_t pos0, std::span<const float> keys,
                    std::span<const float> values) {
  const size_t first = layer * layer_elements() + pos0 * kv_dim_, count = keys.size();
  if (layer >= n_layer_ || keys.size() != values.size() || count % kv_dim_ != 0 ||
      pos0 + count / kv_dim_ > n_ctx_)
    throw Error("llm kv cache", "rows outside the cache");
  if (f16_) {
    kernels::quantize_row(kernels::DType::F16, keys.data(), keys16_.data() + first, count);
    kernels::quantize_row(kernels::DType::F16, values.data(), values16_.data() + first, count);
  } else {
    std::copy(keys.begin(), keys.end(), keys_.begin() + static_cast<ptrdiff_t>(first));
    std::copy(values.begin(), values.end(), values_.begin() + static_cast<ptrdiff_t>(first));
  }
}

void KvCache::attend_rows(size_t layer, size_t n_kv, backends::AttentionArgs& args) const {
  const size_t first = layer * layer_elements(), count = n_kv * kv_dim_;
  if (f16_) {
    args.k_f16 = std::span(keys16_).subspan(first, count);
    args.v_f16 = std::span(values16_).subspan(first, count);
  } else {
    args.k = std::span(keys_).subspan(first, count);
    args.v = std::span(values_).subspan(first, count);
  }
}

template <class Self>
auto KvCache::rows_bytes(Self& self, bool keys, size_t layer, size_t n) {
  if (layer >= self.n_layer_ || n > self.n_ctx_)
    throw Error("llm kv cache", "rows outside the cache");
  const size_t first = layer * self.layer_elements(), count = n * self.kv_dim_;
  auto as_bytes = [&](auto& tensor) {
    using Byte = std::conditional_t<std::is_const_v<Self>, const uint8_t, uint8_t>;
    return std::span<Byte>(reinterpret_cast<Byte*>(tensor.data() + first),
                           count * self.element_bytes());
  };
  if (self.f16_) return as_bytes(keys ? self.keys16_ : self.values16_);
  return as_bytes(keys ? self.keys_ : self.values_);
}

std::span<const uint8_t> KvCache::key_bytes(size_t layer, size_t n) const {
  return rows_bytes(*this, true, layer, n);
}
std::span<const uint8_t> KvCache::value_bytes(size_t layer, size_t n) const {
  return rows_bytes(*this, false, layer, n);
}
std::span<uint8_t> KvCache::key_bytes(size_t layer, size_t n) {
  return rows_bytes(*this, true, layer, n);
}
std::span<uint8_t> KvCache::value_bytes(size_t layer, size_t n) {
  return rows_bytes(*this, false, layer, n);
}

kernels::DType kv_cache_type(const std::string& text) {
  if (text == "f16") return kernels::DType::F16;
  if (text == "f32") return kernels::DType::F32;
  throw Error("llm kv cache", "cache type '" + text + "': expected f16 or f32");
}

}  // namespace oxi::llm
