#include "lib/llm/logit_bias.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include "lib/core/error.h"

namespace oxi::llm {

static constexpr std::string_view kForm = "expected TOKEN_ID(+|-)BIAS, e.g. 15043+1 or 2-inf";

LogitBias parse_logit_bias(std::string_view text, std::string_view name) {
  const auto bad = [&](std::string_view why) {
    std::string message(name);
    message.append(" '").append(text).append("': ").append(why);
    return Error(message);
  };
  const size_t sign = text.find_first_of("+-");
  if (sign == 0 || sign == std::string_view::npos || sign + 1 == text.size()) throw bad(kForm);
  const std::string_view id = text.substr(0, sign), bias = text.substr(sign + 1);
  LogitBias b{0, 0.0f};
  const auto [id_end, id_error] = std::from_chars(id.data(), id.data() + id.size(), b.id);
  if (id_error != std::errc() || id_end != id.data() + id.size() || b.id < 0) throw bad(kForm);
  if (bias == "inf") {
    if (text[sign] == '+') throw bad("the bias may be -inf, not +inf");
    b.bias = -std::numeric_limits<float>::infinity();
    return b;
  }
  // from_chars takes neither a second sign nor "inf" / "nan" spelled otherwise as a number.
  const auto [end, error] = std::from_chars(bias.data(), bias.data() + bias.size(), b.bias);
  if (error != std::errc() || end != bias.data() + bias.size() || !std::isfinite(b.bias) ||
      bias[0] == '-')
    throw bad(kForm);
  if (text[sign] == '-') b.bias = -b.bias;
  return b;
}

std::vector<LogitBias> parse_logit_bias_list(std::string_view text, std::string_view name) {
  std::vector<LogitBias> biases;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    if (!item.empty()) biases.push_back(parse_logit_bias(item, name));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return biases;
}

}  // namespace oxi::llm
