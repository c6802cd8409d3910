#include "elements/audio_samples.h"

#include <algorithm>

void oxi_audio_samples_to_float(const GstMapInfo& map, bool is_s16, std::vector<float>& out) {
  const size_t n = map.size / (is_s16 ? sizeof(gint16) : sizeof(gfloat));
  out.resize(n);
  if (is_s16) {
    const auto* in = reinterpret_cast<const gint16*>(map.data);
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]) / 32768.0f;
  } else {
    std::copy_n(reinterpret_cast<const gfloat*>(map.data), n, out.begin());
  }
}
