// An independent, naive double-precision forward pass over a TinyModel's decoded weights,
// written from the Hugging Face modeling code (half-split RoPE on unpermuted q/k), one token
// at a time with its own KV cache: exact, or with its keys and values rounded to f16 as an f16
// cache holds them.
#pragma once

#include <cstdint>
#include <vector>

#include "tests/llm/tiny_model.h"

namespace oxi::llm::test {

// The IEEE half nearest to x, ties to even: 11 significant bits in the normal range, steps of
// 2^-24 below it (subnormals). The tiny models' keys and values stay far from overflow.
double round_to_f16(double x);

class ReferenceModel {
 public:
  explicit ReferenceModel(const TinyModel& model, bool f16_cache = false)
      : m_(model), s_(model.spec), f16_cache_(f16_cache) {
    keys_.resize(s_.n_layer);
    values_.resize(s_.n_layer);
  }
  // Logits of `token` at the next position.
  std::vector<double> step(int32_t token);
  // The last step's final-normed hidden state (what the logits project; embeddings pool it).
  const std::vector<double>& hidden() const { return hidden_; }
  size_t n_past() const { return n_past_; }

 private:
  using Vec = std::vector<double>;
  Vec get(const std::string& name) const;
  // Gemma's norms are (1 + w).
  Vec norm_weight(const std::string& name) const;
  Vec rms_norm(const Vec& x, const Vec& w) const;
  // y = W x (+ b) for rows [row0, row0 + rows) of the (., cols) matrix `name`.
  Vec linear(const std::string& name, const Vec& x, size_t row0, size_t rows) const;
  void rope(Vec& v, size_t n_heads, size_t layer) const;
  Vec attention(const Vec& q, size_t layer) const;
  Vec layer(const Vec& x, size_t il);

  const TinyModel& m_;
  const TinySpec& s_;
  bool f16_cache_;
  size_t n_past_ = 0;
  std::vector<std::vector<Vec>> keys_, values_;  // [layer][position] (kv_dim)
  Vec hidden_;
};

}  // namespace oxi::llm::test
