// The key/value cache of one conversation: for each layer, the rotated keys and the values of
// every cached position. Its elements are f16 (llama.cpp's default: half the memory, and half
// the bytes decode's attention reads a token) or f32. A forward pass computes a batch's new rows
// in f32 and stores them; attention reads the stored elements, so a batched prefill and
// token-by-token decoding see the same (rounded) keys and values.
//
// Head-major: each kv head's rows (head_dim elements) of a layer lie together, position after
// position, so the attention of one kv head, which a thread takes whole, reads one sequential
// stream. Position-major (a position's heads side by side), each kv head's 128-byte rows stood
// kv_dim elements apart, and one thread read them at half the rate of a stream (TinyLlama shapes,
// 4096 positions: 11 against 23 GB/s); decode at that depth spent half its time in attention.
// Saved states keep the position-major order (copy_rows_out / copy_rows_in).
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
  KvCache(size_t n_layer, size_t n_ctx, size_t n_kv_heads, size_t head_dim, kernels::DType type);

  size_t n_layer() const { return n_layer_; }
  size_t n_ctx() const { return n_ctx_; }
  size_t kv_dim() const { return n_kv_heads_ * head_dim_; }
  kernels::DType type() const { return f16_ ? kernels::DType::F16 : kernels::DType::F32; }
  size_t element_bytes() const { return f16_ ? sizeof(uint16_t) : sizeof(float); }
  // Both tensors of every layer: what the cache allocates.
  size_t bytes() const { return 2 * n_layer_ * layer_elements() * element_bytes(); }

  // Writes positions [pos0, pos0 + n) of layer `layer` from f32 keys and values (n rows of
  // kv_dim each, a position's heads side by side), rounded to f16 in an f16 cache.
  void store(size_t layer, size_t pos0, std::span<const float> keys, std::span<const float> values);
  // Points args' k / v (f32) or k_f16 / v_f16, kv_stride and kv_head_stride at positions
  // [0, n_kv) of layer `layer`.
  void attend_rows(size_t layer, size_t n_kv, backends::AttentionArgs& args) const;

  // Bytes of positions [0, n) of one layer's keys and values, position after position and a
  // position's heads side by side (n * kv_dim elements of type() each): saving and restoring a
  // session's state. copy_rows_out writes them to keys / values (each exactly that many bytes),
  // copy_rows_in stores them.
  size_t rows_bytes(size_t n) const { return n * kv_dim() * element_bytes(); }
  void copy_rows_out(size_t layer, size_t n, std::span<uint8_t> keys,
                     std::span<uint8_t> values) const;
  void copy_rows_in(size_t layer, size_t n, std::span<const uint8_t> keys,
                    std::span<const uint8_t> values);

 private:
  size_t layer_elements() const { return n_ctx_ * kv_dim(); }
  // Element offset of kv head g's row of position pos in layer `layer`.
  size_t row_offset(size_t layer, size_t g, size_t pos) const {
    return layer * layer_elements() + (g * n_ctx_ + pos) * head_dim_;
  }
  // Throws unless positions [pos0, pos0 + n) of `layer` are in the cache.
  void check_rows(size_t layer, size_t pos0, size_t n) const;
  // copy(cache, rows) for every kv head's row of positions [pos0, pos0 + n) of `layer`: the
  // element offsets of that row in the cache and in position-major rows of those positions.
  template <class Copy>
  void for_each_row(size_t layer, size_t pos0, size_t n, const Copy& copy) const {
    for (size_t i = 0; i < n; ++i)
      for (size_t g = 0; g < n_kv_heads_; ++g)
        copy(row_offset(layer, g, pos0 + i), (i * n_kv_heads_ + g) * head_dim_);
  }
  // check_rows(layer, 0, n), and that keys and values hold rows_bytes(n) bytes each.
  void check_state_rows(size_t layer, size_t n, size_t keys_bytes, size_t values_bytes) const;
  // The keys' or the values' elements as bytes.
  const uint8_t* tensor_bytes(bool keys) const;
  uint8_t* tensor_bytes(bool keys);

  size_t n_layer_, n_ctx_, n_kv_heads_, head_dim_;
  bool f16_;
  // The tensors of the cache's type; the other pair stays empty.
  std::vector<float> keys_, values_;
  std::vector<uint16_t> keys16_, values16_;
};

// "f16" / "f32" (the CLI's --cache-type) to DType; throws oxi::Error naming `text` otherwise.
kernels::DType kv_cache_type(const std::string& text);

}  // namespace oxi::llm
