#include "tests/common/json_edits.h"

#include <cstdint>

namespace oxi::test {

std::vector<nlohmann::json> json_edits(const nlohmann::json& v) {
  std::vector<nlohmann::json> out = {
      nullptr, 0, -1, 1e12, 7.5, "7", true, nlohmann::json::array(), nlohmann::json::object()};
  if (v.is_number_integer()) {
    const int64_t x = v.get<int64_t>();
    for (int64_t y : {x - 1, x + 1, 2 * x, int64_t{1} << 31, int64_t{1} << 40}) out.push_back(y);
  }
  if (v.is_number()) out.push_back(-v.get<double>());
  if (v.is_array() && !v.empty()) {
    nlohmann::json shorter = v;
    shorter.erase(shorter.size() - 1);
    out.push_back(shorter);
    out.push_back(nlohmann::json::array({v[0], v[0]}));
    out.push_back(nlohmann::json::array({-1}));
    out.push_back(nlohmann::json::array({int64_t{1} << 40}));
  }
  return out;
}

void for_each_json_edit(const nlohmann::json& doc,
                        const std::function<void(const nlohmann::json&, const std::string&)>& run) {
  // A vocabulary-like document (thousands of keys of one kind): its first, middle and last keys.
  const size_t n = doc.size(), sample = 32;
  size_t index = 0;
  for (const auto& [key, value] : doc.items()) {
    const size_t i = index++;
    if (n > sample && i > 2 && i != n / 2 && i != n - 1) continue;
    for (const auto& e : json_edits(value)) {
      nlohmann::json m = doc;
      m[key] = e;
      run(m, key);
    }
    nlohmann::json m = doc;
    m.erase(key);
    run(m, "without " + key);
    if (!value.is_object() || value.size() >= 16) continue;
    for (const auto& [inner, inner_value] : value.items()) {
      for (const auto& e : json_edits(inner_value)) {
        nlohmann::json mi = doc;
        mi[key][inner] = e;
        run(mi, key + "." + inner);
      }
    }
  }
}

}  // namespace oxi::test
