// The key/value cache of one conversation: for each layer, the rotated keys and the values of
// every cached position, f32, row p at p * kv_dim. Matmuls write new rows in place.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace oxi::llm {

class KvCache {
 public:
  KvCache(size_t n_layer, size_t n_ctx, size_t kv_dim)
      : n_layer_(n_layer),
        n_ctx_(n_ctx),
        kv_dim_(kv_dim),
        keys_(n_layer * n_ctx * kv_dim),
        values_(n_layer * n_ctx * kv_dim) {}

  size_t n_layer() const { return n_layer_; }
  size_t n_ctx() const { return n_ctx_; }
  size_t kv_dim() const { return kv_dim_; }  // n_head_kv * head_dim

  // (n_ctx, kv_dim) of one layer.
  std::span<float> keys(size_t layer) { return std::span(keys_).subspan(offset(layer), size()); }
  std::span<float> values(size_t layer) {
    return std::span(values_).subspan(offset(layer), size());
  }
  std::span<const float> keys(size_t layer) const {
    return std::span(keys_).subspan(offset(layer), size());
  }
  std::span<const float> values(size_t layer) const {
    return std::span(values_).subspan(offset(layer), size());
  }

 private:
  size_t size() const { return n_ctx_ * kv_dim_; }
  size_t offset(size_t layer) const { return layer * size(); }

  size_t n_layer_, n_ctx_, kv_dim_;
  std::vector<float> keys_, values_;
};

}  // namespace oxi::llm
