// Parses template source into statements, applying the whitespace rules transformers uses for
// chat templates (trim_blocks, lstrip_blocks, and the explicit "-" markers).
#pragma once

#include <string_view>

#include "lib/chat/jinja_ast.h"

namespace oxi::jinja {

// Throws oxi::Error("chat template", "line N: problem") on syntax errors.
Body parse_template(std::string_view source);

}  // namespace oxi::jinja
