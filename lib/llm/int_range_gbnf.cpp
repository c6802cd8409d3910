#include "lib/llm/int_range_gbnf.h"

#include <string_view>
#include <vector>

#include "lib/core/error.h"

namespace oxi::llm {
namespace {

// Digits an open range's numbers may have (as the plain integer rule's [1-9] [0-9]{0,15}).
constexpr size_t kMaxDigits = 16;

std::string digit_class(char from, char to) {
  if (from == '0' && to == '9') return "[0-9]";
  if (from == to) return {'"', from, '"'};
  return {'[', from, '-', to, ']'};
}

std::string any_digits(size_t n) {
  if (n == 0) return "";
  if (n == 1) return " [0-9]";
  std::string repeated = " [0-9]{";
  repeated += std::to_string(n);
  repeated += "}";
  return repeated;
}

// The numbers from x to y, both of n digits (x <= y, as strings of the same length), as
// alternatives appended to `out`: a shared first digit, then the first digit's range split
// into the low edge, a middle of any digits and the high edge.
void same_length(std::string_view x, std::string_view y, const std::string& prefix,
                 std::vector<std::string>& out) {
  if (x.empty()) {
    out.push_back(prefix.empty() ? "\"\"" : prefix);
    return;
  }
  const auto join = [&](const std::string& piece) {
    return prefix.empty() ? piece : prefix + " " + piece;
  };
  const size_t rest = x.size() - 1;
  if (x[0] == y[0]) {
    same_length(x.substr(1), y.substr(1), join(digit_class(x[0], x[0])), out);
    return;
  }
  const bool x_low = x.substr(1).find_first_not_of('0') == std::string_view::npos;
  const bool y_high = y.substr(1).find_first_not_of('9') == std::string_view::npos;
  const char first = x_low ? x[0] : static_cast<char>(x[0] + 1);
  const char last = y_high ? y[0] : static_cast<char>(y[0] - 1);
  if (!x_low) same_length(x.substr(1), std::string(rest, '9'), join(digit_class(x[0], x[0])), out);
  if (first <= last) out.push_back(join(digit_class(first, last)) + any_digits(rest));
  if (!y_high) same_length(std::string(rest, '0'), y.substr(1), join(digit_class(y[0], y[0])), out);
}

// The numbers lo..hi (0 <= lo; hi nullopt: up to kMaxDigits digits), as alternatives.
void non_negative(uint64_t lo, std::optional<uint64_t> hi, std::vector<std::string>& out) {
  const std::string low = std::to_string(lo);
  const size_t max_digits = hi ? std::to_string(*hi).size() : std::max(kMaxDigits, low.size());
  for (size_t n = low.size(); n <= max_digits; ++n) {
    std::string from = low;
    if (n > low.size()) {  // 10...0
      from = std::string(n, '0');
      from[0] = '1';
    }
    const std::string to = hi && n == max_digits ? std::to_string(*hi) : std::string(n, '9');
    same_length(from, to, "", out);
  }
}

}  // namespace

std::string int_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  if (lo && hi && *lo > *hi)
    throw Error("json schema", "the integer range " + std::to_string(*lo) + ".." +
                                   std::to_string(*hi) + " is empty");
  // Magnitudes as unsigned, so that INT64_MIN has one.
  const auto magnitude = [](int64_t v) { return static_cast<uint64_t>(-(v + 1)) + 1; };
  std::vector<std::string> alternatives;
  if (!lo || *lo < 0) {  // the negatives: "-" then magnitudes max(1, -hi) .. -lo
    std::vector<std::string> negative;
    const uint64_t from = hi && *hi < 0 ? magnitude(*hi) : 1;
    non_negative(from, lo ? std::optional<uint64_t>(magnitude(*lo)) : std::nullopt, negative);
    for (const std::string& n : negative) alternatives.push_back(std::string("\"-\" ").append(n));
  }
  if (!hi || *hi >= 0) {
    const bool zero = !lo || *lo <= 0;
    if (zero) alternatives.push_back("\"-0\"");
    non_negative(lo && *lo > 0 ? static_cast<uint64_t>(*lo) : 0,
                 hi ? std::optional<uint64_t>(static_cast<uint64_t>(*hi)) : std::nullopt,
                 alternatives);
  }
  std::string out = "(";
  for (size_t i = 0; i < alternatives.size(); ++i) out += (i ? " | " : "") + alternatives[i];
  return out + ")";
}

}  // namespace oxi::llm
