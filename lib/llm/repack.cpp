#include "lib/llm/repack.h"

#include <vector>

#include "lib/formats/weight_repack.h"

namespace oxi::llm {

// The token embedding only when it is the tied output matrix: lookups decode single rows, for
// which the file layout is as good.
void repack_for_cpu(ModelWeights& w, const MappedFile* mapping) {
  std::vector<backends::WeightMatrix*> multiplied;
  for (LayerWeights& l : w.layers) {
    for (backends::WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
      multiplied.push_back(m);
  }
  multiplied.push_back(&w.output);
  formats::repack_for_cpu(multiplied, &w.token_embd, w.copies, w.repacked, mapping);
}

}  // namespace oxi::llm
