// oxi::Error: the one exception type the library throws at its API boundaries.
//
// An error names what it is about (a file path, a tensor, a model) and the problem, in one
// line that a user can act on: "model.gguf: tensor 'blk.0.attn_q.weight' extends past the end
// of the file (offset 1234 + 4096 > 2048)".
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace oxi {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
  // "context: message"; context is usually a file path.
  Error(std::string_view context, std::string_view message)
      : std::runtime_error(std::string(context) + ": " + std::string(message)) {}
};

}  // namespace oxi
