// The key/value cache of one conversation: for each layer, the rotated keys and the values of
// every cached position, row p at p * kv_dim. Its elements are f16 (llama.cpp's default: half
// the memory, and half the bytes decode's attention reads a token) or f32. A forward pass
// computes a batch's new rows in f32 and stores them; attention reads the stored elements, so
// a batched prefill and token-by-token decoding see the same (rounded) keys and values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "kernels/formats/dtype.h"

namespace oxi::llm {

class KvCache {
 public:
  // type: DType::F16 or DType::F32; anything else throws oxi::Error.
  KvCache(size_t n_layer, size_t n_ctx, size_t kv_dim, kernels::DType type);

  size_t n_layer() const { return n_layer_; }
  size_t n_ctx() const { return n_ctx_; }
  size_t kv_dim() const { return kv_dim_; }  // n_head_kv * head_dim
  kernels::DType type() const { return f16_ ? kernels::DType::F16 : kernels::DType::F32; }
  size_t element_bytes() const { return f16_ ? sizeof(uint16_t) : sizeof(float); }
  // Both tensors of every layer: what the cache allocates.
  size_t bytes() const { return 2 * n_layer_ * n_ctx_ * kv_dim_ * element_bytes(); }

  // Writes rows [pos0, pos0 + n) of layer `layer` from f32 keys and values (n * kv_dim each),
  // rounded to f16 in an f16 cache.
  void store(size_t layer, size_t pos0, std::span<const float> keys, std::span<const float> values);
  // Points args' k / v (f32) or k_f16 / v_f16 at rows [0, n_kv) of layer `layer`.
  void attend_rows(size_t layer, size_t n_kv, backends::AttentionArgs& args) const;

  // The stored bytes of rows [0, n) of one layer's keys or values (saving and restoring a
  // session's state, element type as type()).
  std::span<const uint8_t> key_bytes(size_t layer, size_t n) const;
  std::span<const uint8_t> value_bytes(size_t layer, size_t n) const;
  std::span<uint8_t> key_bytes(size_t layer, size_t n);
  std::span<uint8_t> value_bytes(size_t layer, size_t n);

 private:
  size_t layer_elements() const { return n_ctx_ * kv_dim_; }
  // Rows [0, n) of one layer's keys or values as bytes, const when Self is.
  template <class Self>
  static auto rows_bytes(Self& self, bool keys, size_t layer, size_t n);

  size_t n_layer_, n_ctx_, kv_dim_;
  bool f16_;
  // The tensors of the cache's type; the other pair stays empty.
  std::vector<float> keys_, values_;
  std::vector<uint16_t> keys16_, values16_;
};

// "f16" / "f32" (the CLI's --cache-type) to DType; throws oxi::Error naming `text` otherwise.
kernels::DType kv_cache_type(const std::string& text);

}  // namespace oxi::llm
